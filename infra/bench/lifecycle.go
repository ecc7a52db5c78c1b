package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The per-lifecycle table (sluice bench --lifecycle-table, make
// bench-lifecycle) reads results labelled SYSTEM/WORKLOAD, one per round:
// SYSTEM is a sluice store (mem, embedded, postgres; mem-query is mem over
// the Query protocol, the yardstick of goaws; mem@embedded and mem@postgres
// are mem held to the rate that store reached in the same round), the
// in-memory peer (goaws) or the SQL queue (sql-queue, whose workloads are
// b1 and b10: it has no FIFO of its own and is the yardstick of both queue
// types);
// WORKLOAD is fifo-b1, std-b1, fifo-b10, std-b10, or longpoll (pickup at
// half the peak).

// lifecycleWorkloads are the table's columns, in order.
var lifecycleWorkloads = []string{"fifo-b1", "std-b1", "fifo-b10", "std-b10"}

// PerLifecycle is one result's work divided by the lifecycles (messages
// sent, received and deleted) of its window.
type PerLifecycle struct {
	Lifecycles int64
	ServerUS   float64 // the server process's CPU, µs
	PGUS       float64 // the PostgreSQL cluster's CPU, µs
	WALBytes   float64
	// Commits are PostgreSQL's (pg_stat_database) or, for a store that
	// writes its own files, the store's durable commits.
	Commits float64
	// ClientUS is the SQL queue's own CPU, µs: its statements' client
	// side (pgx and the kernel's), which runs in the load generator. A
	// server that sends those statements spends at least that much.
	ClientUS float64
	// HeapBytes and HeapObjects are the server's heap allocation per
	// request it answered (not per lifecycle: the target is stated per
	// request).
	HeapBytes, HeapObjects float64
	HasServer              bool
	HasPG                  bool
	HasCommits             bool
	HasClient              bool
	HasHeap                bool
}

// PerLifecycleOf divides r's window figures by its lifecycles; ok is false
// when r has none.
func PerLifecycleOf(r *Result) (PerLifecycle, bool) {
	var p PerLifecycle
	window := r.WindowSec
	cpu, pg := r.CPU, r.PG
	p.Lifecycles = r.Lifecycles
	baseline := false
	if b := r.Baseline; b != nil && r.Lifecycles == 0 {
		p.Lifecycles, cpu, pg, window, baseline = b.Messages, b.CPU, b.PG, b.WindowSec, true
	}
	if p.Lifecycles <= 0 {
		return p, false
	}
	n := float64(p.Lifecycles)
	if cpu != nil && cpu.ServerCores > 0 {
		p.ServerUS, p.HasServer = cpu.ServerCores*window/n*1e6, true
	}
	if baseline && cpu != nil && cpu.BenchCores > 0 {
		p.ClientUS, p.HasClient = cpu.BenchCores*window/n*1e6, true
	}
	if pg != nil {
		p.HasPG = true
		p.PGUS = pg.CPUSec / n * 1e6
		p.WALBytes = float64(pg.WALBytes) / n
		p.Commits, p.HasCommits = float64(pg.Commits)/n, true
	} else if c := r.Counters; c != nil && c.StoreCommits != nil {
		p.Commits, p.HasCommits = float64(*c.StoreCommits)/n, true
	}
	if c := r.Counters; c != nil && !baseline {
		p.HeapBytes, p.HeapObjects, p.HasHeap = c.PerRequest()
	}
	return p, true
}

// lifecycleCell is the medians over the rounds of one label.
type lifecycleCell struct {
	rounds                                                              int
	server, pg, wal, commits, client, pickupP99, heapBytes, heapObjects float64
	hasServer, hasPG, hasCommits, hasClient, hasPickup, hasHeap, failed bool
	// readyP99: the pickup p99 from when the message became receivable
	// (Result.PickupReceivable), where the runs measured it.
	readyP99 float64
	hasReady bool
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func lifecycleCells(results []*Result) map[string]*lifecycleCell {
	type acc struct {
		server, pg, wal, commits, client, pickup, ready []float64
		heapBytes, heapObjects                          []float64
		failed                                          bool
	}
	accs := map[string]*acc{}
	for _, r := range results {
		a := accs[r.Label]
		if a == nil {
			a = &acc{}
			accs[r.Label] = a
		}
		if r.Baseline == nil || r.Lifecycles > 0 {
			a.failed = a.failed || !r.OK()
		} else {
			a.failed = a.failed || r.Baseline.Errors > 0
		}
		if strings.HasSuffix(r.Label, "/longpoll") {
			if r.Pickup.Count > 0 {
				a.pickup = append(a.pickup, r.Pickup.P99Ms)
			}
			if r.PickupReceivable != nil && r.PickupReceivable.Count > 0 {
				a.ready = append(a.ready, r.PickupReceivable.P99Ms)
			}
			continue
		}
		p, ok := PerLifecycleOf(r)
		if !ok {
			a.failed = true
			continue
		}
		if p.HasServer {
			a.server = append(a.server, p.ServerUS)
		}
		if p.HasPG {
			a.pg = append(a.pg, p.PGUS)
			a.wal = append(a.wal, p.WALBytes)
		}
		if p.HasCommits {
			a.commits = append(a.commits, p.Commits)
		}
		if p.HasClient {
			a.client = append(a.client, p.ClientUS)
		}
		if p.HasHeap {
			a.heapBytes = append(a.heapBytes, p.HeapBytes)
			a.heapObjects = append(a.heapObjects, p.HeapObjects)
		}
	}
	cells := map[string]*lifecycleCell{}
	for label, a := range accs {
		cells[label] = &lifecycleCell{
			rounds: max(len(a.server), len(a.pg), len(a.pickup)),
			server: median(a.server), pg: median(a.pg), wal: median(a.wal), commits: median(a.commits), client: median(a.client),
			pickupP99: median(a.pickup),
			hasServer: len(a.server) > 0, hasPG: len(a.pg) > 0, hasCommits: len(a.commits) > 0, hasClient: len(a.client) > 0,
			hasPickup: len(a.pickup) > 0, failed: a.failed,
			readyP99: median(a.ready), hasReady: len(a.ready) > 0,
			heapBytes: median(a.heapBytes), heapObjects: median(a.heapObjects), hasHeap: len(a.heapBytes) > 0,
		}
	}
	return cells
}

// yardstick is the SQL queue's label for a workload.
func yardstick(workload string) string {
	_, batch, _ := strings.Cut(workload, "-")
	return "sql-queue/" + batch
}

// WriteLifecycleTable prints, per workload, the medians of server CPU,
// PostgreSQL CPU, WAL bytes and commits per lifecycle of every system,
// then the ratios the performance targets are stated in.
func WriteLifecycleTable(w io.Writer, results []*Result) {
	cells := lifecycleCells(results)
	systems := map[string]bool{}
	for label := range cells {
		sys, _, _ := strings.Cut(label, "/")
		systems[sys] = true
	}
	order := []string{"mem", "mem@embedded", "mem@postgres", "mem-query", "goaws", "embedded", "postgres", "sql-queue"}
	// The known systems in their order, then any others by name.
	var names, others []string
	for _, s := range order {
		if systems[s] {
			names = append(names, s)
		}
	}
	for s := range systems {
		if !slices.Contains(order, s) {
			others = append(others, s)
		}
	}
	slices.Sort(others)
	names = append(names, others...)

	cell := func(sys, wl string) *lifecycleCell {
		if sys == "sql-queue" {
			return cells[yardstick(wl)]
		}
		return cells[sys+"/"+wl]
	}

	fmt.Fprintf(w, "| per lifecycle | %s |\n", strings.Join(lifecycleWorkloads, " | "))
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("--:|", len(lifecycleWorkloads)))
	metric := func(sys, what string, get func(c *lifecycleCell) (float64, bool), unit string) {
		var cols []string
		any := false
		for _, wl := range lifecycleWorkloads {
			c := cell(sys, wl)
			if c == nil {
				cols = append(cols, "")
				continue
			}
			v, ok := get(c)
			if !ok {
				cols = append(cols, "")
				continue
			}
			any = true
			s := fmt.Sprintf("%.0f%s", v, unit)
			if what == "commits" {
				s = fmt.Sprintf("%.2f", v)
			}
			if c.failed {
				s += " (checks failed)"
			}
			cols = append(cols, s)
		}
		if any {
			fmt.Fprintf(w, "| %s: %s | %s |\n", sys, what, strings.Join(cols, " | "))
		}
	}
	for _, sys := range names {
		metric(sys, "server CPU", func(c *lifecycleCell) (float64, bool) { return c.server, c.hasServer }, " µs")
		metric(sys, "PostgreSQL CPU", func(c *lifecycleCell) (float64, bool) { return c.pg, c.hasPG }, " µs")
		metric(sys, "WAL bytes", func(c *lifecycleCell) (float64, bool) { return c.wal, c.hasPG }, "")
		metric(sys, "commits", func(c *lifecycleCell) (float64, bool) { return c.commits, c.hasCommits }, "")
		metric(sys, "client CPU", func(c *lifecycleCell) (float64, bool) { return c.client, c.hasClient }, " µs")
		metric(sys, "heap bytes per request", func(c *lifecycleCell) (float64, bool) { return c.heapBytes, c.hasHeap }, "")
		metric(sys, "heap objects per request", func(c *lifecycleCell) (float64, bool) { return c.heapObjects, c.hasHeap }, "")
	}
	rounds := 0
	for _, c := range cells {
		rounds = max(rounds, c.rounds)
	}
	fmt.Fprintf(w, "\nmedians of up to %d rounds; a lifecycle is one message sent, received and deleted\n\n", rounds)

	fmt.Fprintln(w, "| target | "+strings.Join(lifecycleWorkloads, " | ")+" |")
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("--:|", len(lifecycleWorkloads)))
	ratio := func(title string, limit float64, num, den func(wl string) (float64, bool)) {
		var cols []string
		any := false
		for _, wl := range lifecycleWorkloads {
			a, okA := num(wl)
			b, okB := den(wl)
			if !okA || !okB || b == 0 {
				cols = append(cols, "")
				continue
			}
			any = true
			r := a / b
			mark := "met"
			if r > limit {
				mark = "not met"
			}
			cols = append(cols, fmt.Sprintf("%.2f× (%s)", r, mark))
		}
		if any {
			fmt.Fprintf(w, "| %s ≤ %.2g× | %s |\n", title, limit, strings.Join(cols, " | "))
		}
	}
	get := func(sys string, f func(c *lifecycleCell) (float64, bool)) func(string) (float64, bool) {
		return func(wl string) (float64, bool) {
			c := cell(sys, wl)
			if c == nil || c.failed {
				return 0, false
			}
			return f(c)
		}
	}
	server := func(c *lifecycleCell) (float64, bool) { return c.server, c.hasServer }
	pgCPU := func(c *lifecycleCell) (float64, bool) { return c.pg, c.hasPG }
	wal := func(c *lifecycleCell) (float64, bool) { return c.wal, c.hasPG }
	commits := func(c *lifecycleCell) (float64, bool) { return c.commits, c.hasCommits }
	ratio("PostgreSQL CPU, postgres ÷ SQL queue", 1.3, get("postgres", pgCPU), get("sql-queue", pgCPU))
	ratio("WAL bytes, postgres ÷ SQL queue", 1.3, get("postgres", wal), get("sql-queue", wal))
	ratio("commits, postgres ÷ SQL queue", 1, get("postgres", commits), get("sql-queue", commits))
	ratio("server CPU, embedded ÷ mem", 1.5, get("embedded", server), get("mem", server))
	ratio("server CPU, postgres ÷ mem", 1.5, get("postgres", server), get("mem", server))
	// What that ratio would be if the PostgreSQL store's server spent
	// nothing beyond mem's work and the SQL queue's client side.
	client := func(c *lifecycleCell) (float64, bool) { return c.client, c.hasClient }
	floor := func(wl string) (float64, bool) {
		m, ok := get("mem", server)(wl)
		c, okC := get("sql-queue", client)(wl)
		return m + c, ok && okC
	}
	ratio("(floor of the above: mem + the SQL queue's client CPU) ÷ mem", 1.5, floor, get("mem", server))
	// The same at one rate: a server's CPU per request falls as its load
	// rises (more network events per wake-up, fewer idle cycles), and mem
	// runs several times faster than a durable store, so these compare
	// the stores' own work.
	ratio("server CPU, embedded ÷ mem at embedded's rate", 1.5, get("embedded", server), get("mem@embedded", server))
	ratio("server CPU, postgres ÷ mem at postgres's rate", 1.5, get("postgres", server), get("mem@postgres", server))
	ratio("server CPU, mem ÷ goaws (both over Query)", 1, get("mem-query", server), get("goaws", server))

	var pick []string
	for _, sys := range names {
		if c := cells[sys+"/longpoll"]; c != nil && c.hasPickup {
			mark := "met"
			if c.pickupP99 > 5 || c.failed {
				mark = "not met"
			}
			if c.hasReady {
				mark += fmt.Sprintf("; %.1f ms from receivable", c.readyP99)
			}
			if c.rounds > 1 {
				mark += fmt.Sprintf("; median of %d rounds", c.rounds)
			}
			pick = append(pick, fmt.Sprintf("%s %.1f ms (%s)", sys, c.pickupP99, mark))
		}
	}
	if len(pick) > 0 {
		fmt.Fprintf(w, "\nlong-poll pickup p99 at half the FIFO peak, target ≤ 5 ms: %s\n", strings.Join(pick, ", "))
	}
}
