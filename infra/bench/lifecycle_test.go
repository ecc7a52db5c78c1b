package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// The per-lifecycle figures are the window's totals over its lifecycles;
// the SQL queue's come from its baseline (messages read and deleted).
func TestPerLifecycleOf(t *testing.T) {
	r := &Result{WindowSec: 10, Lifecycles: 2000,
		CPU: &CPUStats{ServerCores: 0.5},
		PG:  &PGStats{CPUSec: 3, WALBytes: 4_000_000, Commits: 6000}}
	p, ok := PerLifecycleOf(r)
	if !ok {
		t.Fatal("no figures")
	}
	// 0.5 cores × 10 s / 2000 = 2.5 ms; 3 s / 2000 = 1.5 ms.
	for name, c := range map[string][2]float64{
		"server µs": {p.ServerUS, 2500}, "PostgreSQL µs": {p.PGUS, 1500},
		"WAL bytes": {p.WALBytes, 2000}, "commits": {p.Commits, 3},
	} {
		if math.Abs(c[0]-c[1]) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	q := &Result{Label: "sql-queue/b1", Baseline: &BaselineResult{WindowSec: 5, Messages: 500,
		PG: &PGStats{CPUSec: 0.5, WALBytes: 900_000, Commits: 1500}, CPU: &CPUStats{BenchCores: 0.2}}}
	p, ok = PerLifecycleOf(q)
	if !ok || p.HasServer || p.PGUS != 1000 || p.WALBytes != 1800 || p.Commits != 3 {
		t.Errorf("SQL queue: %+v, %v; want 1000 µs, 1800 bytes, 3 commits and no server", p, ok)
	}
	// Its client side runs in the load generator: 0.2 cores × 5 s / 500.
	if !p.HasClient || math.Abs(p.ClientUS-2000) > 1e-9 {
		t.Errorf("SQL queue client CPU = %v (%v), want 2000 µs", p.ClientUS, p.HasClient)
	}
	if p, _ := PerLifecycleOf(r); p.HasClient {
		t.Errorf("a server's run: %+v; want no client CPU (the load generator's is not a server's)", p)
	}
	// A store that writes its own files counts its commits on the server.
	commits := int64(1500)
	e := &Result{Label: "embedded/fifo-b1", WindowSec: 10, Lifecycles: 1000, CPU: &CPUStats{ServerCores: 0.1},
		Counters: &ServerCounters{StoreCommits: &commits}}
	p, ok = PerLifecycleOf(e)
	if !ok || p.HasPG || !p.HasCommits || p.Commits != 1.5 {
		t.Errorf("embedded: %+v, %v; want 1.5 commits and no PostgreSQL", p, ok)
	}
	if p, _ := PerLifecycleOf(&Result{WindowSec: 10, Lifecycles: 1000, CPU: &CPUStats{ServerCores: 0.1}}); p.HasCommits {
		t.Errorf("mem: %+v; want no commits", p)
	}
	// Heap allocation is per request the server answered, not per
	// lifecycle.
	h := &Result{Label: "mem/std-b1", WindowSec: 10, Lifecycles: 1000, CPU: &CPUStats{ServerCores: 0.1},
		Counters: &ServerCounters{Requests: map[string]int64{"SendMessage": 1000, "ReceiveMessage": 1500, "DeleteMessage": 1000},
			HeapAlloc: &HeapAlloc{Bytes: 24_500_000, Objects: 280_000}}}
	if p, _ := PerLifecycleOf(h); !p.HasHeap || p.HeapBytes != 7000 || p.HeapObjects != 80 {
		t.Errorf("heap: %+v; want 7000 bytes and 80 objects per request over 3500 requests", p)
	}
	if p, _ := PerLifecycleOf(e); p.HasHeap {
		t.Errorf("a server that exported no heap counters: %+v; want no heap figures", p)
	}
	if _, ok := PerLifecycleOf(&Result{WindowSec: 10}); ok {
		t.Error("a result without lifecycles gave figures")
	}
}

// The table takes the median over rounds and states each target's ratio;
// a run whose checks failed is not counted as meeting anything.
func TestLifecycleTableRatios(t *testing.T) {
	pg := func(label string, pgSec float64) *Result {
		return &Result{Label: label, WindowSec: 1, Lifecycles: 1000, CPU: &CPUStats{ServerCores: 0.4},
			PG: &PGStats{CPUSec: pgSec, WALBytes: 2_000_000, Commits: 3000}, Checks: Checks{Drained: true}}
	}
	sq := func(pgSec float64) *Result {
		return &Result{Label: "sql-queue/b1", Baseline: &BaselineResult{WindowSec: 1, Messages: 1000,
			PG: &PGStats{CPUSec: pgSec, WALBytes: 1_000_000, Commits: 3000}, CPU: &CPUStats{BenchCores: 0.1}}}
	}
	mem := &Result{Label: "mem/fifo-b1", WindowSec: 1, Lifecycles: 1000, CPU: &CPUStats{ServerCores: 0.2},
		Counters: &ServerCounters{Requests: map[string]int64{"SendMessage": 1000, "ReceiveMessage": 1000, "DeleteMessage": 1000},
			HeapAlloc: &HeapAlloc{Bytes: 21_000_000, Objects: 240_000}}}
	paced := &Result{Label: "mem@postgres/fifo-b1", WindowSec: 1, Lifecycles: 1000, CPU: &CPUStats{ServerCores: 0.32},
		Checks: Checks{Drained: true}}
	// Medians: postgres 1.2 ms (of 1.0, 1.2, 9.0), SQL queue 1.0 ms.
	results := []*Result{pg("postgres/fifo-b1", 1.0), pg("postgres/fifo-b1", 9.0), pg("postgres/fifo-b1", 1.2),
		sq(1.0), sq(0.9), sq(1.1), mem, paced}
	var b bytes.Buffer
	WriteLifecycleTable(&b, results)
	out := b.String()
	for _, want := range []string{
		"| postgres: PostgreSQL CPU | 1200 µs |",
		"PostgreSQL CPU, postgres ÷ SQL queue ≤ 1.3× | 1.20× (met) |",
		"WAL bytes, postgres ÷ SQL queue ≤ 1.3× | 2.00× (not met) |",
		"commits, postgres ÷ SQL queue ≤ 1× | 1.00× (met) |",
		"server CPU, postgres ÷ mem ≤ 1.5× | 2.00× (not met) |",
		"server CPU, postgres ÷ mem at postgres's rate ≤ 1.5× | 1.25× (met) |",
		"| sql-queue: client CPU | 100 µs |",
		"| mem: heap bytes per request | 7000 |",
		"| mem: heap objects per request | 80 |",
		"(floor of the above: mem + the SQL queue's client CPU) ÷ mem ≤ 1.5× | 1.50× (met) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The long poll's line gives the pickup p99 from receivable beside it.
	lp := &Result{Label: "postgres/longpoll", WindowSec: 1, Lifecycles: 100, Checks: Checks{Drained: true},
		Pickup: Summary{Count: 100, P99Ms: 7.2}, PickupReceivable: &Summary{Count: 100, P99Ms: 2.5}}
	b.Reset()
	WriteLifecycleTable(&b, append(results, lp))
	if want := "postgres 7.2 ms (not met; 2.5 ms from receivable)"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	// Rounds of the long poll: the median of their p99s, and how many.
	lp2, lp3 := *lp, *lp
	lp2.Pickup.P99Ms, lp3.Pickup.P99Ms = 3.1, 40
	lp2.PickupReceivable, lp3.PickupReceivable = nil, nil
	b.Reset()
	WriteLifecycleTable(&b, append(results, lp, &lp2, &lp3))
	if want := "postgres 7.2 ms (not met; 2.5 ms from receivable; median of 3 rounds)"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	// A failed check takes the system out of the ratios.
	results[0].Checks.Missing = 1
	b.Reset()
	WriteLifecycleTable(&b, results)
	if strings.Contains(b.String(), "PostgreSQL CPU, postgres ÷ SQL queue") {
		t.Errorf("a run with a missing message still gave a ratio:\n%s", b.String())
	}
}
