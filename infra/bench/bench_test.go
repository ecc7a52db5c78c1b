package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/memstore"
)

// newServer is an in-process sluice over memstore.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	store := memstore.New()
	svc := service.New(service.Config{Store: store, Logger: logger})
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.Options{Logger: logger}))
	t.Cleanup(func() {
		svc.Shutdown()
		srv.Close()
		_ = store.Close()
	})
	return srv
}

// TestRun drives each mode for a short while and checks what the generator
// reports about correctness (not speed).
func TestRun(t *testing.T) {
	srv := newServer(t)
	for _, tc := range []struct {
		name                  string
		fifo, batch, longPoll bool
		rate                  float64
		every                 time.Duration
	}{
		{name: "standard", every: 500 * time.Millisecond},
		{name: "standard-batch", batch: true},
		{name: "fifo", fifo: true},
		{name: "fifo-batch", fifo: true, batch: true},
		{name: "fifo-longpoll-rate", fifo: true, longPoll: true, rate: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := Run(ctx, Config{
				Endpoint: srv.URL, Producers: 4, Consumers: 4, Groups: 8, Size: 256,
				FIFO: tc.fifo, Batch: tc.batch, LongPoll: tc.longPoll, Rate: tc.rate, Every: tc.every,
				Warmup: 300 * time.Millisecond, Duration: 1500 * time.Millisecond, Drain: 10 * time.Second,
				QueuePrefix: "t-" + tc.name, Label: tc.name, Log: &log,
			})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			WriteText(&out, res)
			t.Log("\n" + out.String())
			c := res.Checks
			if res.Errors != 0 {
				t.Errorf("errors %d: %v", res.Errors, res.ErrorSamples)
			}
			if c.Sent == 0 || c.Received != c.Sent || c.Missing != 0 || !c.Drained {
				t.Errorf("sent %d, received %d, missing %d, drained %v", c.Sent, c.Received, c.Missing, c.Drained)
			}
			if c.OrderViolations != 0 || c.Foreign != 0 || c.Duplicates != 0 {
				t.Errorf("order violations %d (%v), foreign %d, duplicates %d", c.OrderViolations, c.OrderExamples, c.Foreign, c.Duplicates)
			}
			if res.Lifecycles == 0 || res.Send.Count == 0 || res.Receive.Count == 0 || res.Delete.Count == 0 || res.Pickup.Count == 0 {
				t.Errorf("nothing measured: %+v", res)
			}
			if !res.OK() || res.QueueKept != "" {
				t.Errorf("OK %v, queue kept: %q", res.OK(), res.QueueKept)
			}
			// From receivable: FIFO only, one figure per pickup, and never
			// longer than the pickup from the send's acknowledgement.
			switch pr := res.PickupReceivable; {
			case !tc.fifo && pr != nil:
				t.Errorf("a Standard run has a pickup from receivable: %+v", pr)
			case tc.fifo && pr == nil:
				t.Error("a FIFO run has no pickup from receivable")
			case tc.fifo && (pr.Count != res.Pickup.Count || pr.P99Ms > res.Pickup.P99Ms || pr.MaxMs > res.Pickup.MaxMs):
				t.Errorf("pickup from receivable %+v beside pickup %+v", pr, res.Pickup)
			}
			// The window's parts: three of 0.5 s, whose lifecycles add up
			// to the window's.
			if tc.every > 0 {
				sum := 0.0
				for i, iv := range res.Intervals {
					if want := float64(i) * tc.every.Seconds(); iv.StartSec != want || iv.LifecyclesPerSec <= 0 {
						t.Errorf("interval %d: %+v, want start %.1f s and lifecycles", i, iv, want)
					}
					sum += iv.LifecyclesPerSec * tc.every.Seconds()
				}
				if len(res.Intervals) != 3 || math.Abs(sum-float64(res.Lifecycles)) > 0.5 {
					t.Errorf("%d intervals with %.0f lifecycles in all, want 3 with the window's %d", len(res.Intervals), sum, res.Lifecycles)
				}
			} else if res.Intervals != nil {
				t.Errorf("intervals without Every: %+v", res.Intervals)
			}
			if tc.rate > 0 {
				if max := tc.rate * 1.3; res.SentPerSec > max {
					t.Errorf("sent %.1f/s, want at most %.1f/s at rate %.0f", res.SentPerSec, max, tc.rate)
				}
			}
		})
	}
}

func TestQueuesCleanedUp(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	if _, err := Run(ctx, Config{Endpoint: srv.URL, Producers: 1, Consumers: 1, Duration: 200 * time.Millisecond, FIFO: true}); err != nil {
		t.Fatal(err)
	}
	out, err := NewClient(srv.URL, nil).ListQueues(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.QueueUrls) != 0 {
		t.Errorf("queues left: %v", out.QueueUrls)
	}
}

// TestResident: the backlog is in a second queue for the whole run,
// never reaches the run's consumers, and goes with the run.
func TestResident(t *testing.T) {
	srv := newServer(t)
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			prefix := fmt.Sprint("res-", fifo)
			client := NewClient(srv.URL, nil)
			// Watch the resident queue's depth while the run goes on.
			var seen sync.Map // queue URL → most messages seen
			watchCtx, stopWatch := context.WithCancel(ctx)
			var watch sync.WaitGroup
			watch.Go(func() {
				for watchCtx.Err() == nil {
					out, err := client.ListQueues(watchCtx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
					if err == nil {
						for _, u := range out.QueueUrls {
							a, err := client.GetQueueAttributes(watchCtx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u),
								AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
							if err != nil {
								continue
							}
							n, _ := strconv.Atoi(a.Attributes["ApproximateNumberOfMessages"])
							if old, ok := seen.Load(u); !ok || n > old.(int) {
								seen.Store(u, n)
							}
						}
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
			res, err := Run(ctx, Config{Endpoint: srv.URL, Producers: 3, Consumers: 2, Groups: 4, Size: 100, FIFO: fifo,
				Resident: 1234, Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond, QueuePrefix: prefix})
			stopWatch()
			watch.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() || res.Checks.Sent == 0 {
				t.Errorf("run not OK beside the backlog: sent %d, foreign %d, errors %d %v", res.Checks.Sent, res.Checks.Foreign, res.Errors, res.ErrorSamples)
			}
			r := res.Resident
			if r == nil || r.Messages != 1234 || r.Error != "" || r.Kept != "" {
				t.Fatalf("resident %+v, want 1234 messages sent and the queue deleted", r)
			}
			if fifo != strings.HasSuffix(r.Queue, "-resident.fifo") || !strings.Contains(r.Queue, "-resident") {
				t.Errorf("resident queue %q", r.Queue)
			}
			most := 0
			seen.Range(func(u, n any) bool {
				if strings.Contains(u.(string), "-resident") {
					most = max(most, n.(int))
				}
				return true
			})
			if most != 1234 {
				t.Errorf("the resident queue held at most %d messages while the run went on, want 1234", most)
			}
			out, err := client.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
			if err != nil || len(out.QueueUrls) != 0 {
				t.Errorf("queues left: %v (%v)", out, err)
			}
		})
	}
}

// The order check itself: a violation is seen when a group's messages come
// back out of order, a redelivery of the last one is not.
func TestOrderBook(t *testing.T) {
	o := newOrderBook()
	for _, s := range []int64{0, 1, 1, 2, 4} { // a gap (a failed send) is fine
		o.see(3, 0, s)
	}
	o.see(5, 1, 0) // another group
	if o.violations != 0 {
		t.Fatalf("violations %d: %v", o.violations, o.examples)
	}
	o.see(3, 0, 3)
	if o.violations != 1 || !strings.Contains(o.examples[0], "#3 after #4") {
		t.Fatalf("violations %d: %v", o.violations, o.examples)
	}
}

// A FIFO message became receivable when the delete of the one before it
// in its group was acknowledged, if that came after its own send's.
func TestFreedBook(t *testing.T) {
	b := newFreedBook(4)
	if got := b.receivable(1, 0, 100); got != 100 {
		t.Errorf("first message of a group: %d, want its ack 100", got)
	}
	b.freed(1, 0, 250)
	if got := b.receivable(1, 1, 200); got != 250 {
		t.Errorf("sent before its predecessor's delete: %d, want the delete's 250", got)
	}
	if got := b.receivable(1, 1, 300); got != 300 {
		t.Errorf("sent after its predecessor's delete: %d, want its ack 300", got)
	}
	// The predecessor's delete not recorded (yet): the send's ack.
	if got := b.receivable(1, 2, 200); got != 200 {
		t.Errorf("predecessor's delete unknown: %d, want its ack 200", got)
	}
	b.freed(1, 2, 400)
	b.freed(1, 1, 500) // a late record of an earlier delete changes nothing
	if got := b.receivable(1, 3, 350); got != 400 {
		t.Errorf("after a late record: %d, want 400", got)
	}
	if got := b.receivable(2, 1, 200); got != 200 {
		t.Errorf("another group's delete counted: %d, want 200", got)
	}
	b.freed(9, 0, 1)
	if got := b.receivable(9, 1, 50); got != 50 {
		t.Errorf("a group out of range: %d, want its ack 50", got)
	}
}

func TestBody(t *testing.T) {
	h := bodyHeader{producer: 7, seq: 123456, group: 63, gseq: 999, start: 1234567890123}
	for _, size := range []int{1, 40, 1024} {
		b := h.encode(size)
		if size > 40 && len(b) != size {
			t.Errorf("size %d: body of %d bytes", size, len(b))
		}
		got, err := parseBody(b)
		if err != nil || got != h {
			t.Errorf("size %d: parse = %+v, %v; want %+v", size, got, err, h)
		}
	}
	if _, err := parseBody("hello"); err == nil {
		t.Error("parsed a foreign body")
	}
}

func TestHist(t *testing.T) {
	var h hist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	s := h.summary()
	if s.Count != 1000 || s.MaxMs != 1000 {
		t.Fatalf("%+v", s)
	}
	for _, c := range []struct{ got, want float64 }{{s.P50Ms, 500}, {s.P99Ms, 990}} {
		if c.got < c.want*0.98 || c.got > c.want*1.02 {
			t.Errorf("quantile %.2f, want about %.0f", c.got, c.want)
		}
	}
	for v := int64(0); v < 1<<20; v += 37 {
		i := histIndex(v)
		if lo := histValue(i); v >= 2*histSub && (float64(lo) < float64(v)*0.98 || float64(lo) > float64(v)*1.02) {
			t.Fatalf("value %d: bucket %d middle %d", v, i, lo)
		}
	}
}

func TestTable(t *testing.T) {
	rs := []*Result{
		{Label: "pg-fifo", Store: "postgres", FIFO: true, LifecyclesPerSec: 500, Ceiling: &CeilingResult{TxPerSec: 2000, Conns: 16}},
		{Label: "emb-std", Store: "embedded", LifecyclesPerSec: 900, Errors: 1, ErrorSamples: []string{"SendMessage: boom"}},
	}
	var b bytes.Buffer
	WriteTable(&b, rs)
	out := b.String()
	for _, want := range []string{"pg-fifo", "0.250", "emb-std (FAILED)", "FIFO unbatched", "Standard unbatched", "2000.0 tx/s", "boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// tableCell returns the last cell of the table row of label.
func tableCell(t *testing.T, table, label string) string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == label {
			return f[len(f)-1]
		}
	}
	t.Fatalf("no row %s:\n%s", label, table)
	return ""
}

// The "÷ SQL queue" column compares each PostgreSQL row with the baseline
// of its own batch mode, and only with that.
func TestTableBaseline(t *testing.T) {
	unbatched := &BaselineResult{Workers: 8, Batch: 1, MessagesPerSec: 1000, Server: "17.2"}
	batched := &BaselineResult{Workers: 8, Batch: 10, MessagesPerSec: 4000, Server: "17.2"}
	rs := []*Result{
		{Label: "pg-fifo", Store: "postgres", FIFO: true, LifecyclesPerSec: 500, Baseline: unbatched},
		{Label: "pg-fifo-batch", Store: "postgres", FIFO: true, Batch: true, LifecyclesPerSec: 3000, Baseline: batched},
		{Label: "pg-standard", Store: "postgres", LifecyclesPerSec: 800},
		{Label: "emb-fifo-batch", Store: "embedded", FIFO: true, Batch: true, LifecyclesPerSec: 5000},
	}
	var b bytes.Buffer
	WriteTable(&b, rs)
	out := b.String()
	t.Log("\n" + out)
	for label, want := range map[string]string{"pg-fifo": "0.500", "pg-fifo-batch": "0.750", "pg-standard": "0.800", "emb-fifo-batch": "-"} {
		if got := tableCell(t, out, label); got != want {
			t.Errorf("%s: ÷ SQL queue %s, want %s", label, got, want)
		}
	}
	for _, want := range []string{"÷ SQL queue", "SQL queue, unbatched: PostgreSQL 17.2, 8 workers", "1000.0 msgs/s", "SQL queue, batches of 10:", "4000.0 msgs/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}

	// Without a batched baseline the batched rows have no ratio.
	rs[1].Baseline = nil
	b.Reset()
	WriteTable(&b, rs)
	if got := tableCell(t, b.String(), "pg-fifo-batch"); got != "-" {
		t.Errorf("pg-fifo-batch: ÷ SQL queue %s with no batched baseline, want -", got)
	}
	if strings.Contains(b.String(), "batches of 10") {
		t.Errorf("a batched baseline in the footer:\n%s", b.String())
	}

	batched.Ratio = 0.5
	b.Reset()
	WriteText(&b, &Result{FIFO: true, Batch: true, Baseline: batched})
	for _, want := range []string{"baseline    PostgreSQL 17.2, 8 workers, batches of 10: 4000.0 msgs/s", "sluice received/s ÷ SQL queue msgs/s = 0.500"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// databaseURL returns DATABASE_URL. Without it the test is skipped, except
// in CI (CI=true) or with SLUICE_REQUIRE_POSTGRES=1, where it fails.
func databaseURL(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("DATABASE_URL")
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") == "true" || os.Getenv("SLUICE_REQUIRE_POSTGRES") == "1" {
		t.Fatal("DATABASE_URL is not set, and CI=true or SLUICE_REQUIRE_POSTGRES=1 forbids skipping; " +
			`start one with: eval "$(infra/scripts/postgres.sh start)" (make test-go does this)`)
	}
	t.Skip(`DATABASE_URL is not set: skipping the PostgreSQL baseline (start one with: eval "$(infra/scripts/postgres.sh start)")`)
	return ""
}

// TestBaseline runs the SQL queue briefly, unbatched and batched: messages
// move, nothing fails, and the scratch schema is gone afterwards.
func TestBaseline(t *testing.T) {
	dsn := databaseURL(t)
	if _, err := RunBaseline(context.Background(), BaselineConfig{DSN: dsn, Workers: 1, Batch: 3, Duration: time.Second}); err == nil {
		t.Error("batch 3 accepted")
	}
	for _, batch := range []int{1, 10} {
		t.Run(fmt.Sprintf("batch-%d", batch), func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := RunBaseline(ctx, BaselineConfig{
				DSN: dsn, Workers: 2, Batch: batch,
				Warmup: 200 * time.Millisecond, Duration: time.Second, Payload: 256, Log: &log,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s%+v", log.String(), *res)
			if res.Errors != 0 {
				t.Errorf("errors %d: %v", res.Errors, res.ErrorSamples)
			}
			if res.Workers != 2 || res.Batch != batch || res.WindowSec != 1 || res.Server == "" {
				t.Errorf("workers %d, batch %d, window %v s, server %q", res.Workers, res.Batch, res.WindowSec, res.Server)
			}
			if res.Lifecycles == 0 || res.Messages == 0 || res.MessagesPerSec != float64(res.Messages) || res.Lifecycle.Count != uint64(res.Lifecycles) {
				t.Errorf("nothing measured: lifecycles %d, messages %d (%.1f/s), latencies %d",
					res.Lifecycles, res.Messages, res.MessagesPerSec, res.Lifecycle.Count)
			}
			if res.Messages > res.Lifecycles*int64(batch) || batch > 1 && res.Messages <= res.Lifecycles {
				t.Errorf("%d messages in %d lifecycles of batch %d", res.Messages, res.Lifecycles, batch)
			}
			wantSchemaDropped(ctx, t, dsn, log.String())
		})
	}
}

func TestCeiling(t *testing.T) {
	dsn := databaseURL(t)
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := RunCeiling(ctx, CeilingConfig{DSN: dsn, Conns: 2, Warmup: 200 * time.Millisecond, Duration: time.Second, Payload: 256, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Errorf("errors %d: %v", res.Errors, res.ErrorSamples)
	}
	if res.Conns != 2 || res.WindowSec != 1 || res.Server == "" || res.Transactions == 0 ||
		res.TxPerSec != float64(res.Transactions) || res.Tx.Count != uint64(res.Transactions) {
		t.Errorf("result %+v", *res)
	}
	wantSchemaDropped(ctx, t, dsn, log.String())
}

// wantSchemaDropped checks that the scratch schema a run logged is gone.
func wantSchemaDropped(ctx context.Context, t *testing.T, dsn, log string) {
	t.Helper()
	m := regexp.MustCompile(`schema (sluice_bench_[0-9a-f]+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no schema in the log: %q", log)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", m[1]).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left {
		t.Errorf("schema %s left behind", m[1])
	}
}

// waitCounter is a transport that counts the receives by their
// WaitTimeSeconds and the most long polls it saw open at once.
type waitCounter struct {
	next             http.RoundTripper
	mu               sync.Mutex
	open, maxOpen    int
	short, long      int
	sendBatchEntries []int
}

func (w *waitCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	var in struct {
		WaitTimeSeconds     int
		MaxNumberOfMessages int
		Entries             []json.RawMessage
	}
	target := req.Header.Get("X-Amz-Target")
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		_ = json.Unmarshal(body, &in)
	}
	long := strings.HasSuffix(target, ".ReceiveMessage") && in.WaitTimeSeconds > 0
	w.mu.Lock()
	switch {
	case long:
		w.long++
		w.open++
		w.maxOpen = max(w.maxOpen, w.open)
	case strings.HasSuffix(target, ".ReceiveMessage"):
		w.short++
	case strings.HasSuffix(target, ".SendMessageBatch"):
		w.sendBatchEntries = append(w.sendBatchEntries, len(in.Entries))
	}
	w.mu.Unlock()
	resp, err := w.next.RoundTrip(req)
	if long {
		w.mu.Lock()
		w.open--
		w.mu.Unlock()
	}
	return resp, err
}

// TestShaping: a batch fill of 3 sends batches of exactly 3, and a
// long-poll share of 0.5 of 4 consumers has 2 of them long-poll (never more
// than 2 long polls open at once, though at 20 msg/s they wait most of the
// time) while the other 2 short-poll; every message still arrives.
func TestShaping(t *testing.T) {
	srv := newServer(t)
	wc := &waitCounter{next: http.DefaultTransport}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{
		Endpoint: srv.URL, Producers: 2, Consumers: 4, Groups: 4, Size: 256, Rate: 30,
		BatchFill: 3, LongPollShare: 0.5, WaitTimeSeconds: 1,
		Warmup: 200 * time.Millisecond, Duration: 2 * time.Second, Drain: 10 * time.Second,
		QueuePrefix: "t-shaping", HTTPClient: &http.Client{Transport: wc},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Checks.Received != res.Checks.Sent || res.Checks.Sent == 0 {
		t.Fatalf("OK %v, sent %d, received %d, errors %v", res.OK(), res.Checks.Sent, res.Checks.Received, res.ErrorSamples)
	}
	if res.Requests["SendMessage"] != 0 || res.Checks.Sent != 3*res.Requests["SendMessageBatch"] {
		t.Errorf("sends %v for %d messages: want batches of 3 only", res.Requests, res.Checks.Sent)
	}
	wc.mu.Lock()
	defer wc.mu.Unlock()
	for _, n := range wc.sendBatchEntries {
		if n != 3 {
			t.Fatalf("a SendMessageBatch of %d entries, want 3 (all: %v)", n, wc.sendBatchEntries)
		}
	}
	if res.LongPollers != 2 || res.LongPoll {
		t.Errorf("long pollers %d (all: %v), want 2 of 4", res.LongPollers, res.LongPoll)
	}
	if wc.maxOpen != 2 || wc.short == 0 || wc.long == 0 {
		t.Errorf("long polls open at once at most %d (want 2); %d long, %d short receives", wc.maxOpen, wc.long, wc.short)
	}
	if m := res.Mode(); m != "Standard batches of 3 long-poll (2 of 4 consumers)" {
		t.Errorf("mode %q", m)
	}
}

// The long-poll share in whole consumers, and the limits of both knobs.
func TestShapingConfig(t *testing.T) {
	for _, tc := range []struct {
		share     float64
		consumers int
		want      int
	}{{0, 4, 0}, {1, 4, 4}, {0.5, 4, 2}, {0.1, 4, 1}, {0.9, 4, 3}, {0.25, 8, 2}, {0.5, 1, 1}, {0.4, 1, 0}} {
		c := Config{LongPollShare: tc.share, Consumers: tc.consumers}
		if got := c.longPollers(); got != tc.want {
			t.Errorf("share %v of %d consumers: %d long-poll, want %d", tc.share, tc.consumers, got, tc.want)
		}
	}
	for _, c := range []Config{{BatchFill: 11}, {BatchFill: -1}, {LongPollShare: 1.5}, {LongPollShare: -0.1}} {
		c.Endpoint = "http://127.0.0.1:1"
		if err := c.normalize(); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	c := Config{Endpoint: "http://127.0.0.1:1", Batch: true}
	if err := c.normalize(); err != nil || c.BatchFill != 10 {
		t.Errorf("Batch alone: fill %d, %v; want 10", c.BatchFill, err)
	}
}

// Measured, the SQL queue reports the database's work over its window: its
// three autocommit statements a lifecycle are about three commits, its
// 1 KiB bodies at least as many WAL bytes, and the cluster's CPU.
func TestBaselineMeasured(t *testing.T) {
	dsn := databaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunBaseline(ctx, BaselineConfig{DSN: dsn, Workers: 2, Batch: 1,
		Warmup: 500 * time.Millisecond, Duration: 4 * time.Second, Payload: 1024, Measure: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.PG == nil || res.CPU == nil {
		t.Fatalf("not measured: pg %+v, cpu %+v", res.PG, res.CPU)
	}
	n := float64(res.Messages)
	p, ok := PerLifecycleOf(&Result{Baseline: res})
	t.Logf("%d lifecycles: %+v", res.Messages, p)
	if !ok || n == 0 {
		t.Fatal("no lifecycles")
	}
	// pg_stat_database lags each backend by up to a second at both ends
	// of the window: a wide margin.
	if p.Commits < 2 || p.Commits > 4.5 {
		t.Errorf("%.2f commits a lifecycle, want about 3", p.Commits)
	}
	if p.WALBytes < 1024 {
		t.Errorf("%.0f WAL bytes a lifecycle, want at least the 1 KiB body", p.WALBytes)
	}
	if p.PGUS <= 0 {
		t.Errorf("no PostgreSQL CPU: %+v", res.CPU.Others)
	}
}

// Config.StoredBytes is read for the run's queue once it exists and at the
// end of the window, and reported per resident message.
func TestStoredBytes(t *testing.T) {
	srv := newServer(t)
	var mu sync.Mutex
	var calls []string
	sizes := []int64{1000, 3000}
	res, err := Run(context.Background(), Config{Endpoint: srv.URL, Producers: 1, Consumers: 1, Duration: 300 * time.Millisecond,
		StoredBytes: func(ctx context.Context, queue string) (int64, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, queue)
			return sizes[min(len(calls), 2)-1], nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0] != res.Queue || calls[1] != res.Queue {
		t.Fatalf("StoredBytes called for %v, want twice for %s", calls, res.Queue)
	}
	s := res.Stored
	if s == nil || s.Error != "" || s.EmptyBytes != 1000 || s.Bytes != 3000 {
		t.Fatalf("Stored = %+v, want 1000 then 3000 bytes", s)
	}
	if s.Messages > 0 && s.PerMessage != 2000/float64(s.Messages) || s.Messages == 0 && s.PerMessage != 0 {
		t.Errorf("PerMessage %v for %d messages, want 2000 bytes over them", s.PerMessage, s.Messages)
	}
	var out bytes.Buffer
	WriteText(&out, res)
	if !strings.Contains(out.String(), "stored      3000 bytes at the window's end") {
		t.Errorf("report without the stored bytes:\n%s", out.String())
	}
}
