package cost

import (
	"math"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/infra/bench"
)

func prices(t *testing.T) *Prices {
	t.Helper()
	p, err := DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f (±%g)", what, got, want, tol)
	}
}

func line(t *testing.T, b Bill, item string) float64 {
	t.Helper()
	for _, l := range b.Lines {
		if l.Item == item {
			return l.USD
		}
	}
	t.Fatalf("%s: no line %q in %+v", b.Deployment, item, b.Lines)
	return 0
}

// unbatched is one send, one receive and one delete per message.
func unbatched(kind string) Profile {
	return Profile{Variant: Variant{Name: kind, Kind: kind}, Rate: 100,
		PerLC: map[string]float64{"SendMessage": 1, "ReceiveMessage": 1, "DeleteMessage": 1}}
}

var oneKiB = Workload{Name: "t", Rates: []float64{100}, BodyBytes: 1024, BatchFill: 1, PeakToMean: 1, ResidenceSeconds: 60}

// The seed's figure: 100 SQS request units per second on FIFO.
// 100 units/s × 730 h × 3600 s = 262,800,000 units; × $0.50/M = $131.40.
// At 1 and 10 units/s the seed has $1.31 and $13.14 (131.4/100 = 1.314).
func TestSQSSeedFigure(t *testing.T) {
	p := prices(t)
	near(t, "SQS FIFO at 100 units/s", SQSMonthly(100, p.Get("sqs.fifo.request"), p.MonthSeconds(), 0), 131.40, 0.005)
	near(t, "SQS FIFO at 1 unit/s", SQSMonthly(1, p.Get("sqs.fifo.request"), p.MonthSeconds(), 0), 1.314, 0.0005)
	near(t, "SQS FIFO at 10,000 units/s", SQSMonthly(10000, p.Get("sqs.fifo.request"), p.MonthSeconds(), 0), 13140, 0.01)
	// With the free tier: (262,800,000 - 1,000,000) × 0.50/M = 130.90.
	near(t, "SQS FIFO at 100 units/s, free tier", SQSMonthly(100, 0.50, p.MonthSeconds(), 1e6), 130.90, 0.005)
}

// A message is three requests when unbatched: 100 msg/s is 300 units/s,
// 300 × 2,628,000 × 0.50/M = $394.20 on FIFO, × 0.40/M = $315.36 on
// Standard. The seed's axis is request units, not messages: its $131.40
// is a third of this.
func TestSQSFromRequestMix(t *testing.T) {
	p, a := prices(t), DefaultAssumptions()
	ps := []Profile{unbatched("embedded")}
	near(t, "FIFO 100 msg/s unbatched", PriceSQS(ps, oneKiB, p, a, 100, true).Total, 394.20, 0.005)
	near(t, "Standard 100 msg/s unbatched", PriceSQS(ps, oneKiB, p, a, 100, false).Total, 315.36, 0.005)

	// Batches of 10: 0.1 SendMessageBatch, 0.1 ReceiveMessage, 0.1
	// DeleteMessageBatch per message; 10 KiB payloads are one chunk. 1,000
	// msg/s → 300 units/s → Standard $315.36.
	batched := []Profile{{Variant: Variant{Name: "e", Kind: "embedded"}, Rate: 1000,
		PerLC: map[string]float64{"SendMessageBatch": 0.1, "ReceiveMessage": 0.1, "DeleteMessageBatch": 0.1}}}
	w := oneKiB
	w.BatchFill = 10
	near(t, "Standard 1,000 msg/s batched", PriceSQS(batched, w, p, a, 1000, false).Total, 315.36, 0.005)

	// 100 KiB bodies: a send is 2 chunks, a receive that returns it 2, a
	// delete 1: 5 units a message; at 10 msg/s, 50 units/s × 2,628,000 ×
	// 0.40/M = $52.56.
	big := oneKiB
	big.BodyBytes = 100 * 1024
	near(t, "Standard 10 msg/s of 100 KiB", PriceSQS(ps, big, p, a, 10, false).Total, 52.56, 0.005)

	// Empty receives are per second, not per message: 8 consumers
	// long-polling 20 s make 0.4 empty receives/s whatever the rate. At 1
	// msg/s: 3 + 0.4 = 3.4 units/s × 2,628,000 × 0.40/M = $3.57408.
	idle := unbatched("embedded")
	idle.EmptyPerSec = 0.4
	near(t, "Standard 1 msg/s with 0.4 empty receives/s", PriceSQS([]Profile{idle}, oneKiB, p, a, 1, false).Total, 3.57408, 0.00001)
}

// At the smallest size the seed's two PostgreSQL figures come out:
// Cloud SQL: 2 vCPU × 730 h × 0.0413 = 60.298, 8 GiB × 730 × 0.007 =
// 40.88, 100 GiB × 0.17 = 17.00: $118.18.
// One self-hosted N2 VM: 2 × 730 × 0.031611 = 46.152, 8 × 730 × 0.004237 =
// 24.744, 100 × 0.10 = 10.00: $80.90 (the seed's "PostgreSQL (one copy)").
func TestPostgresSeedFloors(t *testing.T) {
	p, a := prices(t), DefaultAssumptions()
	pg := unbatched("postgres")
	pg.DBCPUPerLC, pg.ServerCPUPerLC = 0.0001, 0.0001 // 0.01 cores at 100 msg/s: the minimum machine
	bills := Price([]Profile{pg}, oneKiB, p, a, 100)
	if len(bills) != 2 {
		t.Fatalf("bills %+v", bills)
	}
	sql := bills[0]
	near(t, "Cloud SQL vCPU+memory+storage", line(t, sql, "Cloud SQL vCPU")+line(t, sql, "Cloud SQL memory")+line(t, sql, "Cloud SQL storage"), 118.18, 0.005)
	vm := bills[1]
	near(t, "self-hosted VM", vm.Total, 80.90, 0.005)

	// HA doubles Cloud SQL: 236.36, the seed's "two copies".
	a.HA = true
	sql = Price([]Profile{pg}, oneKiB, p, a, 100)[0]
	near(t, "Cloud SQL HA", line(t, sql, "Cloud SQL vCPU")+line(t, sql, "Cloud SQL memory")+line(t, sql, "Cloud SQL storage"), 236.36, 0.01)
	a.HA = false

	// Sizing follows the measured CPU: 0.004 CPU-s/msg of PostgreSQL at
	// 1,000 msg/s with peak/mean 2 over 0.7 utilization needs 11.4 vCPU:
	// the 16-vCPU tier, 64 GiB: 16 × 730 × 0.0413 = 482.384, 64 × 730 ×
	// 0.007 = 327.04.
	pg.DBCPUPerLC = 0.004
	w := oneKiB
	w.PeakToMean = 2
	sql = Price([]Profile{pg}, w, p, a, 1000)[0]
	near(t, "Cloud SQL 16 vCPU", line(t, sql, "Cloud SQL vCPU"), 482.384, 0.001)
	near(t, "Cloud SQL 64 GiB", line(t, sql, "Cloud SQL memory"), 327.04, 0.001)
}

// Firestore at 10 msg/s, 3 reads, 2 writes and 1 delete a message: 26.28 M
// messages a month; reads 78.84 M → 788.4 × $0.06 = 47.304, writes 52.56 M
// → 525.6 × $0.18 = 94.608, deletes 26.28 M → 262.8 × $0.02 = 5.256.
// The front holds 8 long polls, so its one instance is billed all month:
// 2,628,000 vCPU-s × 0.000024 = 63.072, 0.5 GiB → 1,314,000 GiB-s ×
// 0.0000025 = 3.285; requests 30 /s (3 per message) → 78.84 M × 0.40/M =
// 31.536. The same on Lambda: 8 open × 0.5 GB × 2,628,000 s = 10,512,000
// GB-s × 0.0000166667 = 175.2004, + 78.84 M × 0.20/M = 15.768.
func TestFirestoreAndFronts(t *testing.T) {
	p, a := prices(t), DefaultAssumptions()
	fs := unbatched("firestore")
	fs.Reads, fs.Writes, fs.Deletes = 3, 2, 1
	fs.HeldReceives = 8
	b := Price([]Profile{fs}, oneKiB, p, a, 10)[0]
	near(t, "reads", line(t, b, "Firestore reads"), 47.304, 0.0005)
	near(t, "writes", line(t, b, "Firestore writes"), 94.608, 0.0005)
	near(t, "deletes", line(t, b, "Firestore deletes"), 5.256, 0.0005)
	near(t, "Cloud Run", line(t, b, "Cloud Run front"), 63.072+3.285+31.536, 0.001)
	near(t, "Lambda front", b.LambdaFront, 175.2004+15.768, 0.01)

	// Without held polls and little CPU the instance is billed for the
	// time requests are open: 0.05 request-seconds a message at 10 msg/s
	// is 0.5 of an instance: 1,314,000 s × (0.000024 + 0.5 × 0.0000025) =
	// 33.1785, + requests 31.536.
	fs.HeldReceives, fs.OtherSecPerLC = 0, 0.05
	b = Price([]Profile{fs}, oneKiB, p, a, 10)[0]
	near(t, "Cloud Run, half busy", line(t, b, "Cloud Run front"), 33.1785+31.536, 0.001)
}

// Pub/Sub wake-ups: 2,000 billed bytes a message (a publish and a pull, at
// least 1,000 bytes each) at 100 msg/s: 100 × 2,628,000 × 2,000 =
// 5.256e11 bytes = 0.478033 TiB × $40 = $19.1213.
func TestPubSubWakeups(t *testing.T) {
	p, a := prices(t), DefaultAssumptions()
	pg := unbatched("postgres")
	pg.Variant.Wakeups = "pubsub://proj/topic"
	pg.WakeBytes = 2000
	b := Price([]Profile{pg}, oneKiB, p, a, 100)[0]
	near(t, "Pub/Sub", line(t, b, "Pub/Sub wake-ups"), 19.1213, 0.0005)
}

// Spanner's compute from the counts, by hand (prices $0.09 per 100 PU-hour,
// 730 h; a node 22,500 reads/s or 3,500 writes/s; utilization 0.65).
func TestSpanner(t *testing.T) {
	p, a := prices(t), DefaultAssumptions()
	compute := func(sp Profile, w Workload, rate float64) (float64, Bill) {
		t.Helper()
		b := Price([]Profile{sp}, w, p, a, rate)[0]
		return line(t, b, "Spanner compute"), b
	}

	// Nothing counted: the 100-unit minimum, 1 × 730 × 0.09 = $65.70.
	usd, b := compute(unbatched("spanner"), oneKiB, 100)
	near(t, "minimum", usd, 65.70, 0.0005)
	if len(b.Notes) == 0 || !strings.Contains(b.Notes[0], "minimum") {
		t.Errorf("notes %v: want the minimum explained", b.Notes)
	}

	// 100 msg/s at peak/mean 2: reads (4 rows + 2 read-only transactions)
	// × 100 = 600/s, writes 3 commits × 100 = 300/s. Node share (600/22,500
	// + 300/3,500) × 2 / 0.65 = 0.3458 → 400 PU → 4 × 730 × 0.09 = $262.80.
	// The 30 mutations a message are not writes: counted as such they
	// would be (600/22,500 + 3,000/3,500) × 2 / 0.65 = 2.72 nodes → 3,000
	// PU, $1,971, which the bill notes and does not charge.
	sp := unbatched("spanner")
	sp.Reads, sp.ROTxns, sp.RWTxns, sp.Writes = 4, 2, 3, 30
	w := oneKiB
	w.PeakToMean = 2
	pu, nodes, reads, writes := SpannerPU(sp, w, p, a, 100)
	near(t, "reads/s", reads, 600, 1e-9)
	near(t, "writes/s", writes, 300, 1e-9)
	near(t, "nodes", nodes, (600.0/22500+300.0/3500)*2/0.65, 1e-9)
	near(t, "processing units", pu, 400, 0)
	usd, b = compute(sp, w, 100)
	near(t, "400 PU", usd, 262.80, 0.0005)
	if len(b.Notes) == 0 || !strings.Contains(b.Notes[0], "3000 processing units, $1,971") {
		t.Errorf("notes %v: want the mutation bound, 3000 PU, $1,971", b.Notes)
	}

	// Read-only transactions that return no row (idle checks) still count:
	// 2,250 of them a second at peak/mean 1 are 2,250/22,500/0.65 = 0.154
	// nodes → 200 PU → $131.40.
	idle := unbatched("spanner")
	idle.ROTxns = 22.5
	near(t, "empty reads", func() float64 { u, _ := compute(idle, oneKiB, 100); return u }(), 131.40, 0.0005)

	// Exactly 0.9 of a node: 2,047.5 commits/s (0.9 × 3,500 × 0.65) → 900
	// PU, 9 × 730 × 0.09 = $591.30 (in floating point the share comes out
	// 0.9000000000000002: not 1,000 PU from that).
	edge := unbatched("spanner")
	edge.RWTxns = 20.475
	near(t, "0.9 node", func() float64 { u, _ := compute(edge, oneKiB, 100); return u }(), 591.30, 0.0005)

	// Above a node, whole nodes: 3,000 commits/s at 1,000 msg/s → 3,000 /
	// 3,500 / 0.65 = 1.32 nodes → 2,000 PU → 20 × 730 × 0.09 = $1,314.
	big := unbatched("spanner")
	big.RWTxns = 3
	near(t, "2 nodes", func() float64 { u, _ := compute(big, oneKiB, 1000); return u }(), 1314, 0.001)
}

// A sweep prices each rate from the measurement nearest on a log scale:
// 50 msg/s is nearer 10 (ln 5) than 1,000 (ln 20).
func TestNearest(t *testing.T) {
	a, b := unbatched("postgres"), unbatched("postgres")
	a.Rate, b.Rate = 10, 1000
	if got := nearest([]Profile{a, b}, 50).Rate; got != 10 {
		t.Errorf("nearest to 50: %g, want 10", got)
	}
	if got := nearest([]Profile{a, b}, 300).Rate; got != 1000 {
		t.Errorf("nearest to 300: %g, want 1000", got)
	}
}

// Two lines crossing: SQS doubles per decade-step sample, the variant is
// flat at 100; they cross where SQS = 100.
func TestCrossovers(t *testing.T) {
	rates := []float64{1, 10, 100, 1000}
	cs := []Curve{
		{Name: "SQS FIFO", Native: true, Rates: rates, USD: []float64{1, 10, 1000, 10000}},
		{Name: "v", Rates: rates, USD: []float64{100, 100, 100, 100}},
	}
	x := Crossovers(cs)
	if len(x) != 1 {
		t.Fatalf("crossovers %+v", x)
	}
	// Between 10 ($10) and 100 ($1000) on log-log the SQS line is at
	// $100 halfway: rate 10^1.5 = 31.62.
	near(t, "crossing rate", x[0].Rate, 31.6228, 0.001)
	near(t, "crossing $", x[0].USD, 100, 0.001)
	if x[0].CheaperAbove != "v" {
		t.Errorf("cheaper above: %s, want v", x[0].CheaperAbove)
	}
}

func TestNewProfile(t *testing.T) {
	m := Measurement{Variant: Variant{Name: "pg", Kind: "postgres"}, WindowSec: 10, Lifecycles: 1000,
		Requests:          map[string]int64{"SendMessage": 1000, "ReceiveMessage": 1100, "DeleteMessage": 1000},
		RequestSeconds:    map[string]float64{"SendMessage": 2, "ReceiveMessage": 40, "DeleteMessage": 1},
		EmptyReceiveShare: 100.0 / 1100,
		ServerCPUSec:      5, DBCPUSec: 3, WakeBytes: 2e6}
	p, err := NewProfile(m)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "rate", p.Rate, 100, 1e-9)
	near(t, "receives per message", p.PerLC["ReceiveMessage"], 1, 1e-9)
	near(t, "empty receives/s", p.EmptyPerSec, 10, 1e-9)
	near(t, "receives open", p.HeldReceives, 4, 1e-9)
	near(t, "other request-s per message", p.OtherSecPerLC, 0.003, 1e-12)
	near(t, "server CPU/msg", p.ServerCPUPerLC, 0.005, 1e-12)
	near(t, "db CPU/msg", p.DBCPUPerLC, 0.003, 1e-12)
	near(t, "wake bytes/msg", p.WakeBytes, 2000, 1e-9)
	if _, err := NewProfile(Measurement{WindowSec: 10}); err == nil {
		t.Error("a window without messages gave a profile")
	}
}

func TestWorkloads(t *testing.T) {
	ws, err := Workloads()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, w := range ws {
		names[w.Name] = true
	}
	for _, n := range []string{"steady-100", "bursty", "idle-longpoll", "batched-high"} {
		if !names[n] {
			t.Errorf("no shipped workload %s (have %v)", n, names)
		}
	}
	for _, bad := range []string{
		`{"name":"x","rates":[1],"body_bytes":1024,"batch_fill":11}`,
		`{"name":"x","rates":[],"body_bytes":1024}`,
		`{"name":"x","rates":[1],"body_bytes":1024,"long_poll_share":1.5}`,
		`{"name":"x","rates":[1],"body_bytes":1024,"long_poll_share":-0.5}`,
		`{"name":"x","rates":[1],"body_bytes":1024,"unknown":1}`,
	} {
		if _, err := ParseWorkload([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	// Between the ends: a fill of 5, a quarter of the consumers long-polling
	// (20 s unless told).
	w, err := ParseWorkload([]byte(`{"name":"x","rates":[1],"body_bytes":1024,"batch_fill":5,"long_poll_share":0.25}`))
	if err != nil || w.BatchFill != 5 || w.LongPollShare != 0.25 || w.WaitTimeSeconds != 20 {
		t.Errorf("%+v, %v: want fill 5, share 0.25, 20 s", w, err)
	}
}

func TestPriceTable(t *testing.T) {
	p := prices(t)
	for _, r := range p.Rows {
		if r.Unit == "" || r.Service == "" {
			t.Errorf("row %s: no unit or service", r.ID)
		}
		if len(r.AsOf) != 10 || r.AsOf[4] != '-' {
			t.Errorf("row %s: as_of %q is not a date", r.ID, r.AsOf)
		}
	}
	if _, err := ParsePrices([]byte(`{"month_hours":730,"rows":[{"id":"a","usd":1}]}`)); err == nil {
		t.Error("a row without source or date was accepted")
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{1: "1", 20.47: "20", 2.5: "2.5", 3.0001: "3", 752: "752", 7600: "7.6k", 10000: "10k", 0.5: "0.5"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// A Spanner run's transactions come through from the load generator's
// scrape (rw_txn and ro_txn kinds) into the measurement and per message
// into the profile, beside rows read and mutations.
func TestSpannerCountsFromResult(t *testing.T) {
	r := &bench.Result{WindowSec: 10, Lifecycles: 100, Billed: &bench.BilledStats{ByOperation: map[string]map[string]int64{
		"MessageSend":  {"read": 300, "write": 8000, "rw_txn": 100},
		"MessageClaim": {"read": 400, "write": 1000, "rw_txn": 120, "ro_txn": 50},
		"QueueGet":     {"read": 10, "ro_txn": 10},
	}}}
	m := FromResult(r, Variant{Name: "spanner", Kind: "spanner"}, "t", 10, "")
	if m.BilledReads != 710 || m.BilledWrites != 9000 || m.BilledRWTxns != 220 || m.BilledROTxns != 60 {
		t.Fatalf("reads %d writes %d rw %d ro %d, want 710 9000 220 60", m.BilledReads, m.BilledWrites, m.BilledRWTxns, m.BilledROTxns)
	}
	m.Requests = map[string]int64{"SendMessage": 100}
	p, err := NewProfile(m)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "commits/msg", p.RWTxns, 2.2, 1e-12)
	near(t, "read-only transactions/msg", p.ROTxns, 0.6, 1e-12)
	near(t, "rows read/msg", p.Reads, 7.1, 1e-12)
}

// A second of the rate waits at most, at least 20 messages.
func TestBacklog(t *testing.T) {
	for rate, want := range map[float64]int{1: 20, 20: 20, 100: 100, 1000: 1000, 0.5: 20, 333.3: 334} {
		if got := Backlog(rate); got != want {
			t.Errorf("Backlog(%v) = %d, want %d", rate, got, want)
		}
	}
}

// A Firestore deployment wakes its long polls through Firestore (the
// store's default transport): those writes and reads are billed as the
// store's are. At 100 msg/s a month is 262.8 M messages; one wake-up write
// and one read each cost 2,628 × $0.18 + 2,628 × $0.06 = $630.72. Woken
// through Pub/Sub instead, they are not Firestore operations.
func TestFirestoreWakeupOperationsArePriced(t *testing.T) {
	p, a := prices(t), DefaultAssumptions()
	fs := unbatched("firestore")
	fs.Reads, fs.Writes, fs.Deletes = 8.4, 6.2, 1
	without := Price([]Profile{fs}, oneKiB, p, a, 100)[0]
	fs.WakeWrites, fs.WakeReads = 1, 1
	with := Price([]Profile{fs}, oneKiB, p, a, 100)[0]
	near(t, "Firestore wake-up operations at 100 msg/s", with.Total-without.Total, 630.72, 0.01)
	fs.Variant.Wakeups = "pubsub://p/t"
	viaPubSub := Price([]Profile{fs}, oneKiB, p, a, 100)[0]
	for _, item := range []string{"Firestore reads", "Firestore writes"} {
		if lineUSD(viaPubSub, item) != lineUSD(without, item) {
			t.Errorf("woken through Pub/Sub: %s $%.2f, want $%.2f (no Firestore operations for wake-ups)", item, lineUSD(viaPubSub, item), lineUSD(without, item))
		}
	}
}

func lineUSD(b Bill, item string) float64 {
	for _, l := range b.Lines {
		if l.Item == item {
			return l.USD
		}
	}
	return -1
}
