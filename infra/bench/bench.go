// Package bench is sluice's load generator. It drives send → receive →
// delete lifecycles through the SQS HTTP API with the AWS SDK for Go v2
// against any endpoint, measures throughput and per-action latency, and
// checks what it got back: every acknowledged message received, FIFO order
// within every message group, no errors.
//
// Producers and consumers run in the same process, so one clock serves
// both: a message's body carries its producer, its number, its message
// group, its number within the group and when its send started; the
// producer records when the send was acknowledged in a shared ledger, so a
// consumer can tell the pickup latency (send acknowledged → the receive
// that returns it returns) of every message it gets.
//
// A run has three phases: a warm-up (everything runs, nothing is
// measured), the measured window (--duration), and a drain, in which the
// producers have stopped and the consumers receive and delete what is left
// so the checks can cover every message. Every loop is bounded in time and
// stops by itself; the queue the run created is deleted at the end.
package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/infra/ownbody"
)

// Config is one run.
type Config struct {
	Endpoint string // http://host:port of the SQS API
	// ReceiveEndpoint, when set, is where consumers receive and delete
	// (another instance on the same store): pickup then measures how a
	// send through one instance reaches a long poll on another.
	ReceiveEndpoint string
	Producers       int // sending goroutines; default 8
	Consumers       int // receiving (and deleting) goroutines; default 8
	Groups          int // FIFO message groups; default 64
	Size            int // message body bytes; default 1024 (at least the ~40-byte header)
	FIFO            bool
	Batch           bool // batches of 10 for send, receive and delete; otherwise 1 message per call
	// BatchFill, 1 to 10, is the messages per send (SendMessageBatch above
	// 1) and the most a receive asks for; what a receive returns is
	// deleted in one call. 0 is 10 with Batch, else 1.
	BatchFill int
	Duration  time.Duration
	Warmup    time.Duration
	// Every, when set, also reports the window in parts of this length
	// (Result.Intervals): whether a long run holds its pace.
	Every time.Duration
	// Rate is the target of sent messages per second over all producers;
	// 0 sends as fast as the server acknowledges.
	Rate        float64
	QueuePrefix string // default "bench"
	LongPoll    bool   // receives wait up to WaitTimeSeconds (default 20)
	// LongPollShare, 0 to 1, is the share of consumers that long-poll (the
	// rest short-poll), rounded to whole consumers but never to none or
	// all of them when strictly between; LongPoll is a share of 1.
	LongPollShare float64
	// WaitTimeSeconds of long-poll receives, 1 to 20; default 20.
	WaitTimeSeconds int
	// MaxBacklog pauses the producers while this many acknowledged messages
	// have not been received yet, so a run measures a steady state instead
	// of an ever-growing queue; default 1000.
	MaxBacklog int
	// Resident, when set, fills a second queue of the same kind with this
	// many messages before the warm-up and leaves them unread until the
	// run ends (ResidentStats): the window then runs beside a deep backlog
	// in the same store.
	Resident int
	// Drain is how long the consumers may take, once the producers stopped,
	// to receive the messages still queued; default 60s.
	Drain time.Duration
	// VisibilityTimeout of the queue in seconds; default 120 (no message
	// should become visible again during a run).
	VisibilityTimeout int
	// ServerPID, when set, is the server's process: its CPU time over the
	// measured window and its peak RSS (VmHWM) at the end are reported.
	ServerPID int
	// KeepProcs are process groups (as CPUStats.Others names them, e.g.
	// "postgres /data/dir") reported whatever their CPU use.
	KeepProcs []string
	// PGStatsDSN, when set, names the PostgreSQL database under the
	// server: its WAL and commits over the window are reported.
	PGStatsDSN string
	// Protocol is the wire protocol: "json" (AWS JSON 1.0, the default) or
	// "query" (the older Query protocol, through queryTransport in query.go).
	Protocol string
	// StoredBytes, when set, reads what the named queue holds in the
	// store's backend (stores.StorageSizer): read once the queue exists
	// and again at the end of the window, beside its messages, for the
	// bytes a resident message costs.
	StoredBytes func(ctx context.Context, queue string) (int64, error)
	// HTTPClient overrides the tuned default transport.
	HTTPClient *http.Client
	Label      string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

const (
	batchSize      = 10
	requestTimeout = 30 * time.Second
	// A short-poll consumer that got nothing waits before it asks again:
	// emptyBackoff, doubling on every further empty receive up to
	// maxEmptyBackoff; a receive that returns messages resets it.
	emptyBackoff    = 2 * time.Millisecond
	maxEmptyBackoff = 64 * time.Millisecond
	errorBackoff    = 20 * time.Millisecond
)

func (c *Config) normalize() error {
	if c.Endpoint == "" {
		return errors.New("no endpoint")
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad endpoint %q: use http://host:port", c.Endpoint)
	}
	if c.Producers == 0 {
		c.Producers = 8
	}
	if c.Consumers == 0 {
		c.Consumers = 8
	}
	if c.Groups == 0 {
		c.Groups = 64
	}
	if c.Size == 0 {
		c.Size = 1024
	}
	if c.Duration == 0 {
		c.Duration = 20 * time.Second
	}
	if c.QueuePrefix == "" {
		c.QueuePrefix = "bench"
	}
	if c.MaxBacklog == 0 {
		c.MaxBacklog = 1000
	}
	if c.Drain == 0 {
		c.Drain = 60 * time.Second
	}
	if c.VisibilityTimeout == 0 {
		c.VisibilityTimeout = 120
	}
	if c.WaitTimeSeconds == 0 {
		c.WaitTimeSeconds = 20
	}
	if c.BatchFill == 0 {
		c.BatchFill = 1
		if c.Batch {
			c.BatchFill = batchSize
		}
	}
	c.Batch = c.BatchFill > 1
	if c.LongPoll {
		c.LongPollShare = 1
	}
	switch {
	case c.BatchFill < 1 || c.BatchFill > batchSize:
		return fmt.Errorf("bad batch fill %d: 1 to %d", c.BatchFill, batchSize)
	case c.LongPollShare < 0 || c.LongPollShare > 1:
		return fmt.Errorf("bad long-poll share %v: 0 to 1", c.LongPollShare)
	case c.Producers < 1 || c.Consumers < 1:
		return errors.New("need at least one producer and one consumer")
	case c.Groups < 1:
		return errors.New("need at least one message group")
	case c.Size < 1 || c.Size > 256*1024:
		return fmt.Errorf("bad size %d: 1 to 262144 bytes", c.Size)
	case c.Duration < 0 || c.Warmup < 0 || c.Drain < 0:
		return errors.New("durations must not be negative")
	case c.Rate < 0:
		return errors.New("rate must not be negative")
	case c.MaxBacklog < 1:
		return errors.New("max backlog must be positive")
	case c.Resident < 0:
		return errors.New("resident messages must not be negative")
	case c.WaitTimeSeconds < 1 || c.WaitTimeSeconds > 20:
		return fmt.Errorf("bad WaitTimeSeconds %d: 1 to 20", c.WaitTimeSeconds)
	}
	for _, r := range c.QueuePrefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("bad queue prefix %q: letters, digits, - and _", c.QueuePrefix)
		}
	}
	if len(c.QueuePrefix) > 60 {
		return fmt.Errorf("queue prefix %q is too long (60 at most)", c.QueuePrefix)
	}
	return nil
}

// longPollers is how many of the consumers long-poll.
func (c *Config) longPollers() int {
	n := int(c.LongPollShare*float64(c.Consumers) + 0.5)
	if c.LongPollShare > 0 && c.LongPollShare < 1 && c.Consumers > 1 {
		n = min(max(n, 1), c.Consumers-1)
	}
	return n
}

// NewClient returns an SQS client for endpoint with a transport sized for
// many concurrent requests and without retries (a failed request is an
// error of the run, not something to hide). Its requests carry bodies of
// their own (ownbody.Transport), or the SDK's closed body can cost a
// response the server sent.
func NewClient(endpoint string, hc *http.Client) *sqs.Client {
	if hc == nil {
		hc = &http.Client{Transport: newTransport((&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext)}
	}
	own := *hc
	own.Transport = ownbody.Transport{Next: hc.Transport}
	hc = &own
	return sqs.New(sqs.Options{
		Region:       benchRegion,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  benchCredentials,
		HTTPClient:   hc,
		Retryer:      aws.NopRetryer{},
	})
}

// The bench's requests are signed with these; a server that checks
// signatures needs them among its keys.
var (
	benchRegion      = "us-east-1"
	benchCredentials = credentials.NewStaticCredentialsProvider("bench", "bench", "")
)

func newTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // loopback targets; never a proxy from the environment
		DialContext:         dial,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// Result is what a run measured and checked. Throughput and latencies
// cover the measured window; the checks cover the whole run.
type Result struct {
	Label     string `json:"label,omitempty"`
	Store     string `json:"store,omitempty"` // set by the caller when it knows the store
	Endpoint  string `json:"endpoint"`
	Queue     string `json:"queue"`
	FIFO      bool   `json:"fifo"`
	Batch     bool   `json:"batch"`
	BatchFill int    `json:"batch_fill,omitempty"`
	LongPoll  bool   `json:"long_poll"`
	// LongPollers of the Consumers long-poll, the rest short-poll.
	LongPollers int     `json:"long_pollers,omitempty"`
	Producers   int     `json:"producers"`
	Consumers   int     `json:"consumers"`
	Groups      int     `json:"groups"`
	Size        int     `json:"size"`
	TargetRate  float64 `json:"target_rate"`
	MaxBacklog  int     `json:"max_backlog"`
	WarmupSec   float64 `json:"warmup_sec"`
	WindowSec   float64 `json:"window_sec"`

	// Lifecycles are messages whose delete was acknowledged in the window.
	Lifecycles       int64   `json:"lifecycles"`
	LifecyclesPerSec float64 `json:"lifecycles_per_sec"`
	SentPerSec       float64 `json:"sent_per_sec"`
	ReceivedPerSec   float64 `json:"received_per_sec"`

	// Latencies of the requests started in the window; names of the
	// actions used in SendAction/DeleteAction.
	SendAction   string  `json:"send_action"`
	DeleteAction string  `json:"delete_action"`
	Send         Summary `json:"send"`
	Receive      Summary `json:"receive"` // all receives, empty ones included
	Delete       Summary `json:"delete"`
	// Pickup: the send acknowledged → the receive that returned the
	// message returned (0 when the receive returned before the
	// acknowledgement); for first receipts in the window.
	Pickup Summary `json:"pickup"`
	// PickupReceivable: as Pickup, but from when the message became
	// receivable: the later of its send's acknowledgement and that of the
	// delete of the message before it in its group (see freedBook). FIFO
	// runs with one producer per group only.
	PickupReceivable *Summary `json:"pickup_receivable,omitempty"`
	// EndToEnd: the send started → the receive returned.
	EndToEnd Summary `json:"end_to_end"`

	Requests       map[string]int64 `json:"requests"`
	EmptyReceives  int64            `json:"empty_receives"`
	Errors         int64            `json:"errors"`
	ErrorsByAction map[string]int64 `json:"errors_by_action,omitempty"`
	ErrorSamples   []string         `json:"error_samples,omitempty"`

	Checks      Checks          `json:"checks"`
	CPU         *CPUStats       `json:"cpu,omitempty"`
	PG          *PGStats        `json:"pg,omitempty"` // Config.PGStatsDSN's database over the window
	Server      *ServerStats    `json:"server,omitempty"`
	Ceiling     *CeilingResult  `json:"ceiling,omitempty"`
	Baseline    *BaselineResult `json:"baseline,omitempty"`
	Billed      *BilledStats    `json:"billed,omitempty"`
	Counters    *ServerCounters `json:"counters,omitempty"` // the server's /metrics over the window
	Stored      *StoredStats    `json:"stored,omitempty"`
	Resident    *ResidentStats  `json:"resident,omitempty"`  // Config.Resident's backlog
	Intervals   []Interval      `json:"intervals,omitempty"` // with Config.Every
	Interrupted bool            `json:"interrupted,omitempty"`
	QueueKept   string          `json:"queue_kept,omitempty"` // why the queue could not be deleted
}

// StoredStats are what the queue held in the store's backend (Config.
// StoredBytes): just created, and at the end of the measured window with
// Messages resident (visible, in flight and delayed, as the queue's
// attributes count them). PerMessage is the growth per resident message,
// with what the messages leave behind beside them (deduplication markers,
// group records).
type StoredStats struct {
	EmptyBytes int64   `json:"empty_bytes"`
	Bytes      int64   `json:"bytes"`
	Messages   int64   `json:"messages"`
	PerMessage float64 `json:"per_message"`
	Error      string  `json:"error,omitempty"`
}

// Interval is one part of the measured window (Config.Every): the
// lifecycles completed in it per second, from StartSec after the window
// began.
type Interval struct {
	StartSec         float64 `json:"start_sec"`
	LifecyclesPerSec float64 `json:"lifecycles_per_sec"`
}

// Checks are the correctness checks of a run.
type Checks struct {
	Sent              int64    `json:"sent"`     // sends acknowledged
	Received          int64    `json:"received"` // of those, received at least once
	Missing           int64    `json:"missing"`  // acknowledged, never received
	Duplicates        int64    `json:"duplicates"`
	ReceivedBeforeAck int64    `json:"received_before_ack"` // returned by a receive before its send was acknowledged
	FailedButReceived int64    `json:"failed_but_received"` // the send failed, the message came anyway
	Foreign           int64    `json:"foreign"`             // bodies that are not this run's
	OrderViolations   int64    `json:"order_violations"`    // FIFO only
	OrderExamples     []string `json:"order_examples,omitempty"`
	Drained           bool     `json:"drained"` // the consumers got everything before the drain deadline
}

// OK tells whether the run passed its checks: nothing missing, no order
// violation, no error.
func (r *Result) OK() bool {
	return r.Checks.Missing == 0 && r.Checks.OrderViolations == 0 && r.Errors == 0 && r.Checks.Foreign == 0 && !r.Interrupted
}

// Run creates a queue, drives it for cfg.Warmup + cfg.Duration, drains
// it, deletes it and returns what it measured. A cancelled ctx ends the run
// early (the result says Interrupted).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if err := cfg.applyProtocol(); err != nil {
		return nil, err
	}
	r := &runner{
		cfg:     cfg,
		client:  NewClient(cfg.Endpoint, cfg.HTTPClient),
		rclient: NewClient(cmp.Or(cfg.ReceiveEndpoint, cfg.Endpoint), cfg.HTTPClient),
		ledger:  newLedger(cfg.Producers),
		order:   newOrderBook(),
		errs:    &errLog{byAction: map[string]int64{}},
		id:      randomID(),
		log:     cfg.Log,
	}
	if cfg.FIFO && cfg.Groups >= cfg.Producers {
		r.freed = newFreedBook(cfg.Groups)
	}
	if r.log == nil {
		r.log = io.Discard
	}
	name := cfg.QueuePrefix + "-" + r.id
	attrs := map[string]string{"VisibilityTimeout": strconv.Itoa(cfg.VisibilityTimeout)}
	if cfg.FIFO {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	out, err := r.client.CreateQueue(cctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("creating queue %s at %s: %w", name, cfg.Endpoint, err)
	}
	r.queueURL = aws.ToString(out.QueueUrl)
	r.queueName = name
	fmt.Fprintf(r.log, "bench: queue %s; %s warm-up, %s measured\n", r.queueURL, cfg.Warmup, cfg.Duration)
	if cfg.StoredBytes != nil {
		r.stored = &StoredStats{}
		if r.stored.EmptyBytes, err = cfg.StoredBytes(ctx, name); err != nil {
			r.stored.Error = err.Error()
		}
	}

	var residentURL string
	var resident *ResidentStats
	if cfg.Resident > 0 {
		residentURL, resident = r.fillResident(ctx, name, attrs)
		if resident.Error != "" {
			r.deleteQueue(ctx, r.queueURL)
			if residentURL != "" {
				r.deleteQueue(ctx, residentURL)
			}
			return nil, fmt.Errorf("filling the resident queue: %s", resident.Error)
		}
	}

	res := r.run(ctx)
	res.Queue = name
	res.Resident = resident

	if err := r.deleteQueue(ctx, r.queueURL); err != nil {
		res.QueueKept = err.Error()
	}
	if residentURL != "" {
		if err := r.deleteQueue(ctx, residentURL); err != nil {
			resident.Kept = err.Error()
		}
	}
	if cfg.ServerPID > 0 {
		if res.Server == nil {
			res.Server = &ServerStats{PID: cfg.ServerPID}
		}
		if hwm, err := PeakRSS(cfg.ServerPID); err == nil {
			res.Server.PeakRSSBytes = hwm
		} else {
			fmt.Fprintf(r.log, "bench: cannot read the server's peak RSS: %v\n", err)
		}
	}
	return res, nil
}

// deleteQueue deletes a queue the run created, even when ctx was
// cancelled, and logs why it could not.
func (r *runner) deleteQueue(ctx context.Context, url string) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	_, err := r.client.DeleteQueue(dctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	if err != nil {
		fmt.Fprintf(r.log, "bench: warning: could not delete queue %s: %v\n", url, err)
	}
	return err
}

func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type runner struct {
	cfg      Config
	client   *sqs.Client
	rclient  *sqs.Client // receives and deletes (Config.ReceiveEndpoint)
	queueURL string
	id       string
	log      io.Writer
	// queueName and stored: Config.StoredBytes's queue and readings.
	queueName string
	stored    *StoredStats

	base                       time.Time
	warmEnd, measureEnd, drain time.Time

	ledger *ledger
	order  *orderBook
	freed  *freedBook // FIFO with one producer per group, else nil
	errs   *errLog

	sentAcked      atomic.Int64
	receivedUnique atomic.Int64
	sendsDone      atomic.Bool

	// counted in the window
	winSent, winReceived, winDeleted atomic.Int64
	// deletedIn counts the window's lifecycles by part (Config.Every).
	deletedIn []atomic.Int64

	receivedBeforeAck, foreign, empty atomic.Int64
	requests                          sync.Map // action → *atomic.Int64
}

// stats is one worker's: latencies of what it started in the window.
type stats struct {
	send, recv, del, pickup, ready, e2e hist
}

func (r *runner) inWindow(t time.Time) bool {
	return !t.Before(r.warmEnd) && t.Before(r.measureEnd)
}

func (r *runner) since(t time.Time) int64 { return int64(t.Sub(r.base)) }

// deletedAt counts n lifecycles completed at done, within the window.
func (r *runner) deletedAt(done time.Time, n int) {
	r.winDeleted.Add(int64(n))
	if len(r.deletedIn) > 0 {
		i := min(int(done.Sub(r.warmEnd)/r.cfg.Every), len(r.deletedIn)-1)
		r.deletedIn[i].Add(int64(n))
	}
}

func (r *runner) count(action string) {
	v, ok := r.requests.Load(action)
	if !ok {
		v, _ = r.requests.LoadOrStore(action, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

func (r *runner) run(ctx context.Context) *Result {
	cfg := r.cfg
	r.base = time.Now()
	r.warmEnd = r.base.Add(cfg.Warmup)
	r.measureEnd = r.warmEnd.Add(cfg.Duration)
	if cfg.Every > 0 {
		r.deletedIn = make([]atomic.Int64, (cfg.Duration+cfg.Every-1)/cfg.Every)
	}
	r.drain = r.measureEnd.Add(cfg.Drain)

	consCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	prod := make([]stats, cfg.Producers)
	cons := make([]stats, cfg.Consumers)
	var pw, cw sync.WaitGroup
	for p := range cfg.Producers {
		pw.Go(func() { r.producer(ctx, p, &prod[p]) })
	}
	long := cfg.longPollers()
	for c := range cfg.Consumers {
		cw.Go(func() { r.consumer(ctx, consCtx, c < long, &cons[c]) })
	}

	// Billed store operations over the window.
	type billedPair struct{ a, b *billedScrape }
	billedDone := make(chan billedPair, 1)
	go func() {
		if !sleepUntil(ctx, r.warmEnd) {
			billedDone <- billedPair{}
			return
		}
		a, err := scrapeBilled(ctx, cfg.Endpoint)
		if err != nil || a == nil || !sleepUntil(ctx, r.measureEnd) {
			billedDone <- billedPair{}
			return
		}
		b, _ := scrapeBilled(ctx, cfg.Endpoint)
		billedDone <- billedPair{a, b}
	}()

	// What the queue holds at the end of the window.
	storedDone := make(chan struct{})
	go func() {
		defer close(storedDone)
		if r.stored == nil || r.stored.Error != "" || !sleepUntil(ctx, r.measureEnd) {
			return
		}
		r.sampleStored(ctx)
	}()

	// CPU use (and PostgreSQL's work) over the window.
	winDone := probeWindow(ctx, r.warmEnd, r.measureEnd, cfg.ServerPID, cfg.KeepProcs, cfg.PGStatsDSN)

	pw.Wait()
	r.sendsDone.Store(true)
	fmt.Fprintf(r.log, "bench: producers stopped (%d acknowledged); draining\n", r.sentAcked.Load())
	drained := false
	tick := time.NewTicker(5 * time.Millisecond)
	for !drained && ctx.Err() == nil && time.Now().Before(r.drain) {
		if r.receivedUnique.Load() >= r.sentAcked.Load() {
			drained = true
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	tick.Stop()
	stopConsumers()
	cw.Wait()

	var all stats
	for i := range prod {
		all.send.merge(&prod[i].send)
	}
	for i := range cons {
		all.recv.merge(&cons[i].recv)
		all.del.merge(&cons[i].del)
		all.pickup.merge(&cons[i].pickup)
		all.ready.merge(&cons[i].ready)
		all.e2e.merge(&cons[i].e2e)
	}
	window := cfg.Duration.Seconds()
	t := r.ledger.tally()
	res := &Result{
		Label: cfg.Label, Endpoint: cfg.Endpoint,
		FIFO: cfg.FIFO, Batch: cfg.Batch, BatchFill: cfg.BatchFill, LongPoll: long == cfg.Consumers, LongPollers: long,
		Producers: cfg.Producers, Consumers: cfg.Consumers, Groups: cfg.Groups, Size: cfg.Size,
		TargetRate: cfg.Rate, MaxBacklog: cfg.MaxBacklog,
		WarmupSec: cfg.Warmup.Seconds(), WindowSec: window,
		Lifecycles:   r.winDeleted.Load(),
		SendAction:   "SendMessage",
		DeleteAction: "DeleteMessage",
		Send:         all.send.summary(), Receive: all.recv.summary(), Delete: all.del.summary(),
		Pickup: all.pickup.summary(), EndToEnd: all.e2e.summary(),
		Requests:      map[string]int64{},
		EmptyReceives: r.empty.Load(),
		Interrupted:   ctx.Err() != nil,
	}
	if cfg.Batch {
		res.SendAction, res.DeleteAction = "SendMessageBatch", "DeleteMessageBatch"
	}
	if r.freed != nil {
		ready := all.ready.summary()
		res.PickupReceivable = &ready
	}
	if window > 0 {
		res.LifecyclesPerSec = float64(res.Lifecycles) / window
		res.SentPerSec = float64(r.winSent.Load()) / window
		res.ReceivedPerSec = float64(r.winReceived.Load()) / window
	}
	r.requests.Range(func(k, v any) bool {
		res.Requests[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	res.Errors, res.ErrorsByAction, res.ErrorSamples = r.errs.snapshot()
	r.order.mu.Lock()
	res.Checks = Checks{
		Sent: t.acked, Received: t.received, Missing: t.missing, Duplicates: t.duplicates,
		ReceivedBeforeAck: r.receivedBeforeAck.Load(), FailedButReceived: t.failedButReceived,
		Foreign: r.foreign.Load(), OrderViolations: r.order.violations,
		OrderExamples: append([]string(nil), r.order.examples...),
		Drained:       drained,
	}
	r.order.mu.Unlock()
	if p := <-billedDone; p.b != nil {
		res.Billed = billedBetween(p.a, p.b, res.Lifecycles)
		res.Counters = countersBetween(p.a, p.b)
	}
	w := <-winDone
	res.CPU, res.PG = w.CPU, w.PG
	<-storedDone
	res.Stored = r.stored
	res.Intervals = r.intervals()
	return res
}

// intervals are the window's parts (Config.Every), each logged.
func (r *runner) intervals() []Interval {
	var out []Interval
	for i := range r.deletedIn {
		start := r.warmEnd.Add(time.Duration(i) * r.cfg.Every)
		end := start.Add(r.cfg.Every)
		if end.After(r.measureEnd) {
			end = r.measureEnd
		}
		iv := Interval{StartSec: start.Sub(r.warmEnd).Seconds(), LifecyclesPerSec: float64(r.deletedIn[i].Load()) / end.Sub(start).Seconds()}
		out = append(out, iv)
		fmt.Fprintf(r.log, "bench: %4.0fs +%s: %.0f lifecycles/s\n", iv.StartSec, end.Sub(start), iv.LifecyclesPerSec)
	}
	return out
}

// sampleStored reads the queue's stored bytes and its resident messages.
func (r *runner) sampleStored(ctx context.Context) {
	st := r.stored
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var err error
	if st.Bytes, err = r.cfg.StoredBytes(ctx, r.queueName); err != nil {
		st.Error = err.Error()
		return
	}
	out, err := r.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(r.queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		st.Error = err.Error()
		return
	}
	for _, v := range out.Attributes {
		n, _ := strconv.ParseInt(v, 10, 64)
		st.Messages += n
	}
	if st.Messages > 0 {
		st.PerMessage = float64(st.Bytes-st.EmptyBytes) / float64(st.Messages)
	}
}

// groupsOf returns the message groups producer p sends to: with at least as
// many groups as producers each group has one producer.
func (r *runner) groupsOf(p int) []int {
	g, n := r.cfg.Groups, r.cfg.Producers
	if g < n {
		return []int{p % g}
	}
	var out []int
	for i := p; i < g; i += n {
		out = append(out, i)
	}
	return out
}

// sleepUntil sleeps until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *runner) producer(ctx context.Context, p int, st *stats) {
	cfg := r.cfg
	n := cfg.BatchFill
	groups := r.groupsOf(p)
	gseq := make([]int64, len(groups))
	gi := 0
	var next time.Time
	var interval time.Duration
	if cfg.Rate > 0 {
		// Each producer sends its share on its own schedule, staggered.
		interval = time.Duration(float64(n) * float64(cfg.Producers) / cfg.Rate * 1e9)
		next = r.base.Add(interval * time.Duration(p) / time.Duration(cfg.Producers))
	}
	entries := make([]types.SendMessageBatchRequestEntry, n)
	pgroup := make([]*string, len(groups))
	for i, g := range groups {
		pgroup[i] = aws.String("g" + strconv.Itoa(g))
	}
	for {
		now := time.Now()
		if ctx.Err() != nil || !now.Before(r.measureEnd) {
			return
		}
		if cfg.Rate > 0 {
			if next.Before(now.Add(-time.Second)) {
				next = now // never catch up on more than a second of lag
			}
			if next.After(now) {
				if next.After(r.measureEnd) {
					sleepUntil(ctx, r.measureEnd)
					return
				}
				if !sleepUntil(ctx, next) {
					return
				}
			}
			next = next.Add(interval)
		}
		for r.sentAcked.Load()-r.receivedUnique.Load() >= int64(cfg.MaxBacklog) {
			if ctx.Err() != nil || !time.Now().Before(r.measureEnd) {
				return
			}
			time.Sleep(time.Millisecond)
		}

		seq := r.ledger.reserve(p, n)
		start := time.Now()
		startNs := r.since(start)
		for i := range n {
			gidx := gi % len(groups)
			gi++
			h := bodyHeader{producer: p, seq: seq + int64(i), group: groups[gidx], gseq: gseq[gidx], start: startNs}
			gseq[gidx]++
			e := types.SendMessageBatchRequestEntry{
				Id:          aws.String("m" + strconv.Itoa(i)),
				MessageBody: aws.String(h.encode(cfg.Size)),
			}
			if cfg.FIFO {
				e.MessageGroupId = pgroup[gidx]
				e.MessageDeduplicationId = aws.String(r.id + "-" + strconv.Itoa(p) + "-" + strconv.FormatInt(h.seq, 10))
			}
			entries[i] = e
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		var okIdx []int
		var err error
		if cfg.Batch {
			var out *sqs.SendMessageBatchOutput
			r.count("SendMessageBatch")
			out, err = r.client.SendMessageBatch(rctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.queueURL), Entries: entries})
			if err == nil {
				for _, s := range out.Successful {
					if i, e := strconv.Atoi(strings.TrimPrefix(aws.ToString(s.Id), "m")); e == nil && i >= 0 && i < n {
						okIdx = append(okIdx, i)
					}
				}
				for _, f := range out.Failed {
					r.errs.add("SendMessageBatch", fmt.Errorf("entry %s: %s: %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
				}
			}
		} else {
			r.count("SendMessage")
			e := entries[0]
			_, err = r.client.SendMessage(rctx, &sqs.SendMessageInput{QueueUrl: aws.String(r.queueURL),
				MessageBody: e.MessageBody, MessageGroupId: e.MessageGroupId, MessageDeduplicationId: e.MessageDeduplicationId})
			if err == nil {
				okIdx = []int{0}
			}
		}
		cancel()
		done := time.Now()
		doneNs := r.since(done)
		if err != nil {
			if ctx.Err() != nil {
				// Interrupted: whether it was stored is unknown.
				for i := range n {
					r.ledger.acked(p, seq+int64(i), ackFailed)
				}
				return
			}
			r.errs.add(pick(cfg.Batch, "SendMessageBatch", "SendMessage"), err)
		}
		if r.inWindow(start) {
			st.send.add(done.Sub(start))
		}
		ok := make([]bool, n)
		for _, i := range okIdx {
			ok[i] = true
		}
		for i := range n {
			if ok[i] {
				r.ledger.acked(p, seq+int64(i), max(doneNs, 1))
			} else {
				r.ledger.acked(p, seq+int64(i), ackFailed)
			}
		}
		r.sentAcked.Add(int64(len(okIdx)))
		if r.inWindow(done) {
			r.winSent.Add(int64(len(okIdx)))
		}
		if err != nil {
			time.Sleep(errorBackoff)
		}
	}
}

func pick(batch bool, a, b string) string {
	if batch {
		return a
	}
	return b
}

// consumer receives and deletes until consCtx ends; longPoll says whether
// its receives wait (Config.LongPollShare).
func (r *runner) consumer(ctx, consCtx context.Context, longPoll bool, st *stats) {
	cfg := r.cfg
	maxN, wait := int32(cfg.BatchFill), int32(0)
	if longPoll {
		wait = int32(cfg.WaitTimeSeconds)
	}
	backoff := emptyBackoff
	for consCtx.Err() == nil {
		start := time.Now()
		rctx, cancel := context.WithTimeout(consCtx, requestTimeout+time.Duration(wait)*time.Second)
		r.count("ReceiveMessage")
		out, err := r.rclient.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(r.queueURL),
			MaxNumberOfMessages: maxN,
			WaitTimeSeconds:     wait,
		})
		cancel()
		done := time.Now()
		if err != nil {
			if consCtx.Err() != nil {
				return // stopped: not an error of the run
			}
			r.errs.add("ReceiveMessage", err)
			sleepUntil(consCtx, time.Now().Add(errorBackoff))
			continue
		}
		if r.inWindow(start) {
			st.recv.add(done.Sub(start))
		}
		if len(out.Messages) == 0 {
			r.empty.Add(1)
			if !longPoll {
				sleepUntil(consCtx, time.Now().Add(backoff))
				backoff = min(2*backoff, maxEmptyBackoff)
			}
			continue
		}
		backoff = emptyBackoff
		doneNs := r.since(done)
		for _, m := range out.Messages {
			r.observe(aws.ToString(m.Body), done, doneNs, st)
		}
		// Deletes are not cut short by the end of the run: a message
		// received is always deleted.
		r.deleteAll(ctx, out.Messages, st)
	}
}

// observe books one received message; it runs before the message is
// deleted.
func (r *runner) observe(body string, done time.Time, doneNs int64, st *stats) {
	h, err := parseBody(body)
	if err != nil {
		r.foreign.Add(1)
		return
	}
	ack, times, ok := r.ledger.received(h.producer, h.seq)
	if !ok {
		r.foreign.Add(1)
		return
	}
	if r.cfg.FIFO {
		r.order.see(h.group, h.producer, h.gseq)
	}
	if times != 1 {
		return
	}
	r.receivedUnique.Add(1)
	if ack == 0 {
		r.receivedBeforeAck.Add(1)
	}
	if r.inWindow(done) {
		r.winReceived.Add(1)
		pickup, ready := int64(0), int64(0)
		if ack > 0 {
			pickup = max(doneNs-ack, 0)
			if r.freed != nil {
				ready = max(doneNs-r.freed.receivable(h.group, h.gseq, ack), 0)
			}
		}
		st.pickup.add(time.Duration(pickup))
		if r.freed != nil {
			st.ready.add(time.Duration(ready))
		}
		st.e2e.add(time.Duration(doneNs - h.start))
	}
}

func (r *runner) deleteAll(ctx context.Context, msgs []types.Message, st *stats) {
	if r.cfg.Batch {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(msgs))
		for i, m := range msgs {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String("d" + strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		r.count("DeleteMessageBatch")
		out, err := r.rclient.DeleteMessageBatch(rctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.queueURL), Entries: entries})
		cancel()
		done := time.Now()
		if err != nil {
			r.errs.add("DeleteMessageBatch", err)
			return
		}
		if r.inWindow(start) {
			st.del.add(done.Sub(start))
		}
		for _, f := range out.Failed {
			r.errs.add("DeleteMessageBatch", fmt.Errorf("entry %s: %s: %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
		}
		for _, ok := range out.Successful {
			if i, e := strconv.Atoi(strings.TrimPrefix(aws.ToString(ok.Id), "d")); e == nil && i >= 0 && i < len(msgs) {
				r.noteFreed(msgs[i], done)
			}
		}
		if r.inWindow(done) {
			r.deletedAt(done, len(out.Successful))
		}
		return
	}
	for _, m := range msgs {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		r.count("DeleteMessage")
		_, err := r.rclient.DeleteMessage(rctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.queueURL), ReceiptHandle: m.ReceiptHandle})
		cancel()
		done := time.Now()
		if err != nil {
			r.errs.add("DeleteMessage", err)
			continue
		}
		if r.inWindow(start) {
			st.del.add(done.Sub(start))
		}
		r.noteFreed(m, done)
		if r.inWindow(done) {
			r.deletedAt(done, 1)
		}
	}
}

// noteFreed records that m's delete was acknowledged at done, which frees
// its FIFO group for the next message.
func (r *runner) noteFreed(m types.Message, done time.Time) {
	if r.freed == nil {
		return
	}
	if h, err := parseBody(aws.ToString(m.Body)); err == nil {
		r.freed.freed(h.group, h.gseq, r.since(done))
	}
}

// errLog counts errors by action and keeps a few distinct samples.
type errLog struct {
	mu       sync.Mutex
	total    int64
	byAction map[string]int64
	samples  []string
}

func (e *errLog) add(action string, err error) {
	msg := action + ": " + err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total++
	e.byAction[action]++
	if len(e.samples) < 10 {
		for _, s := range e.samples {
			if s == msg {
				return
			}
		}
		e.samples = append(e.samples, msg)
	}
}

func (e *errLog) snapshot() (int64, map[string]int64, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := map[string]int64{}
	for k, v := range e.byAction {
		m[k] = v
	}
	if len(m) == 0 {
		m = nil
	}
	return e.total, m, append([]string(nil), e.samples...)
}
