package cost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/infra/bench"
)

// Variant is one way of running sluice that a cost run measures: a store,
// maybe a wake-up transport. Kind picks how it is priced (see Price);
// it is the store's kind unless set.
type Variant struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Store   string `json:"store,omitempty"`   // password redacted in results
	Wakeups string `json:"wakeups,omitempty"` // --wakeups URL of the server, if any
}

// Kinds priced by Price.
var Kinds = []string{"embedded", "memory", "postgres", "firestore", "spanner"}

func (v *Variant) normalize() error {
	if v.Kind == "" {
		v.Kind = bench.StoreKind(v.Store)
	}
	if v.Name == "" {
		v.Name = v.Kind
		if w := wakeKind(v.Wakeups); w != "" {
			v.Name += "-" + w
		}
	}
	for _, k := range Kinds {
		if k == v.Kind {
			return nil
		}
	}
	return fmt.Errorf("variant %s: no pricing for store kind %q (priced: %s)", v.Name, v.Kind, strings.Join(Kinds, ", "))
}

// wakeKind is the scheme of a --wakeups URL ("pubsub", ...), "" for none.
func wakeKind(u string) string {
	s, _, ok := strings.Cut(u, "://")
	if !ok || s == "local" {
		return ""
	}
	return strings.ToLower(s)
}

// Measurement is what one variant did at one rate of a workload, over the
// measured window.
type Measurement struct {
	Variant  Variant `json:"variant"`
	Workload string  `json:"workload"`
	Rate     float64 `json:"target_rate"`
	Time     string  `json:"time"`
	Machine  string  `json:"machine"`

	WindowSec        float64 `json:"window_sec"`
	Lifecycles       int64   `json:"lifecycles"` // messages deleted in the window
	LifecyclesPerSec float64 `json:"lifecycles_per_sec"`

	// Requests and RequestSeconds are the server's, by action, over the
	// window: what it answered and how long those requests were open.
	Requests       map[string]int64   `json:"requests"`
	RequestSeconds map[string]float64 `json:"request_seconds"`
	// EmptyReceiveShare is the share of the load generator's receives that
	// came back empty (over its whole run).
	EmptyReceiveShare float64 `json:"empty_receive_share"`

	BilledReads   int64 `json:"billed_reads"`
	BilledWrites  int64 `json:"billed_writes"`
	BilledDeletes int64 `json:"billed_deletes"`
	BilledRetries int64 `json:"billed_retries"`
	// Transactions, for a backend sized by them (Spanner): read-write ones
	// committed, read-only ones run.
	BilledRWTxns int64            `json:"billed_rw_txns,omitempty"`
	BilledROTxns int64            `json:"billed_ro_txns,omitempty"`
	StoreCalls   map[string]int64 `json:"store_calls"`
	WakeReads    int64            `json:"wake_billed_reads"`
	WakeWrites   int64            `json:"wake_billed_writes"` // Pub/Sub: publish requests
	WakeBytes    int64            `json:"wake_billed_bytes"`

	ServerCPUSec float64 `json:"server_cpu_sec"` // the sluice process
	DBCPUSec     float64 `json:"db_cpu_sec"`     // PostgreSQL's processes on this machine
	PeakRSSBytes int64   `json:"peak_rss_bytes"`

	OK     bool          `json:"ok"`
	Errors int64         `json:"errors"`
	Bench  *bench.Result `json:"bench"`
}

// MeasureConfig is a cost run of one variant.
type MeasureConfig struct {
	Workload Workload
	Variant  Variant
	// Endpoint of a running server; or, when empty, ServerBin is started
	// (`serve --store Variant.Store [--wakeups Variant.Wakeups]`) for each
	// rate, so that each has its own peak RSS.
	Endpoint  string
	ServerPID int // of the running server, for its CPU and RSS
	ServerBin string
	Duration  time.Duration
	Warmup    time.Duration
	Log       io.Writer
}

// Measure runs the workload at each of its rates.
func Measure(ctx context.Context, c MeasureConfig) ([]Measurement, error) {
	if err := c.Variant.normalize(); err != nil {
		return nil, err
	}
	if c.Endpoint == "" && (c.ServerBin == "" || c.Variant.Store == "") {
		return nil, errors.New("cost: give an endpoint, or a server binary and a store to start")
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	// The server's output, the load generator and this write the log
	// from their own goroutines.
	c.Log = &lockedWriter{w: c.Log}
	var keep []string
	pgGroup := ""
	if c.Variant.Kind == "postgres" && c.Variant.Store != "" {
		// PostgreSQL's CPU is its cluster's processes, told apart from other
		// clusters on the machine by their data directory.
		dir, err := pgDataDir(ctx, c.Variant.Store)
		if err != nil {
			return nil, fmt.Errorf("cost: asking PostgreSQL for its data directory (its CPU is measured by it): %w", err)
		}
		pgGroup = "postgres " + dir
		keep = append(keep, pgGroup)
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Warmup < 0 {
		c.Warmup = DefaultWarmup
	}
	w := c.Workload
	var out []Measurement
	for _, rate := range w.Rates {
		endpoint, pid := c.Endpoint, c.ServerPID
		var srv *bench.Server
		if endpoint == "" {
			var extra []string
			if c.Variant.Wakeups != "" {
				extra = []string{"--wakeups", c.Variant.Wakeups}
			}
			var err error
			srv, err = bench.Spawn(ctx, c.ServerBin, c.Variant.Store, c.Log, extra...)
			if err != nil {
				return out, err
			}
			endpoint, pid = srv.URL, srv.PID
		}
		cfg := bench.Config{
			Endpoint: endpoint, ServerPID: pid,
			Producers: w.Producers, Consumers: w.Consumers, Groups: w.Groups, Size: w.BodyBytes,
			FIFO: w.FIFO, BatchFill: w.BatchFill, Rate: rate,
			LongPollShare: w.LongPollShare, WaitTimeSeconds: w.WaitTimeSeconds,
			MaxBacklog: Backlog(rate), Duration: c.Duration, Warmup: c.Warmup, Drain: 30 * time.Second,
			QueuePrefix: "cost", Label: c.Variant.Name + "-" + w.Name, Log: c.Log, KeepProcs: keep,
		}
		fmt.Fprintf(c.Log, "cost: %s, workload %s at %g msg/s for %s\n", c.Variant.Name, w.Name, rate, c.Duration)
		res, err := bench.Run(ctx, cfg)
		if srv != nil {
			if _, serr := srv.Stop(); serr != nil && err == nil {
				err = serr
			}
		}
		if err != nil {
			return out, err
		}
		m := FromResult(res, c.Variant, w.Name, rate, pgGroup)
		if m.Requests == nil {
			return out, fmt.Errorf("cost: %s: the server's /metrics gave no counters (is this sluice?)", endpoint)
		}
		out = append(out, m)
	}
	return out, nil
}

// Backlog is how many sent messages a cost run lets wait unreceived
// before its producers pause: a second of the rate, at least 20. A variant
// that keeps up never has that many waiting; one that cannot (an emulator)
// fills it during the warm-up and is then measured at the rate it
// sustains, its sends matching its deletes, rather than with a growing
// queue whose sends would be charged to the few lifecycles that completed.
func Backlog(rate float64) int { return max(20, int(math.Ceil(rate))) }

// FromResult is the measurement in a load generator's result; dbGroup
// names the database's processes in its CPU figures ("" for none).
func FromResult(r *bench.Result, v Variant, workload string, rate float64, dbGroup string) Measurement {
	v.Store = bench.Redact(v.Store)
	m := Measurement{
		Variant: v, Workload: workload, Rate: rate,
		Time: time.Now().UTC().Format(time.RFC3339), Machine: Machine(),
		WindowSec: r.WindowSec, Lifecycles: r.Lifecycles, LifecyclesPerSec: r.LifecyclesPerSec,
		OK: r.OK(), Errors: r.Errors, Bench: r,
	}
	if n := r.Requests["ReceiveMessage"]; n > 0 {
		m.EmptyReceiveShare = float64(r.EmptyReceives) / float64(n)
	}
	if c := r.Counters; c != nil {
		m.Requests, m.RequestSeconds, m.StoreCalls = c.Requests, c.RequestSeconds, c.StoreCalls
		m.WakeReads, m.WakeWrites, m.WakeBytes = c.WakeReads, c.WakeWrites, c.WakeBytes
	}
	if b := r.Billed; b != nil {
		for _, kinds := range b.ByOperation {
			m.BilledReads += kinds["read"]
			m.BilledWrites += kinds["write"]
			m.BilledDeletes += kinds["delete"]
			m.BilledRWTxns += kinds["rw_txn"]
			m.BilledROTxns += kinds["ro_txn"]
		}
		for _, n := range b.Retries {
			m.BilledRetries += n
		}
	}
	if c := r.CPU; c != nil {
		m.ServerCPUSec = c.ServerCores * r.WindowSec
		for _, o := range c.Others {
			if dbGroup != "" && o.Name == dbGroup {
				m.DBCPUSec += o.Cores * r.WindowSec
			}
		}
	}
	if r.Server != nil {
		m.PeakRSSBytes = r.Server.PeakRSSBytes
	}
	return m
}

// pgDataDir is the data directory of the PostgreSQL server at url.
func pgDataDir(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dir string
	err = conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir)
	return dir, err
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Machine names this machine: CPUs, model, OS, Go.
func Machine() string {
	model := ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	s := fmt.Sprintf("%d CPUs", runtime.NumCPU())
	if model != "" {
		s += ", " + model
	}
	return s + ", " + runtime.GOOS + "/" + runtime.GOARCH + ", " + runtime.Version()
}
