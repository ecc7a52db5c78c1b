package cost

import (
	"fmt"
	"math"
	"sort"
)

// Assumptions are the figures the pricing uses that are neither prices
// nor measurements. Every one is printed in the report.
type Assumptions struct {
	// FreeTiers subtracts the providers' free allowances. Off by default,
	// as in the seed's figures: list prices from the first request.
	FreeTiers bool `json:"free_tiers"`

	// The serverless front (Cloud Run, request-based billing).
	FrontVCPU           float64 `json:"front_vcpu"`            // vCPU per instance
	FrontMinGiB         float64 `json:"front_min_gib"`         // memory per instance, at least; more when the measured peak RSS × 1.5 needs it
	FrontMaxConcurrency float64 `json:"front_max_concurrency"` // requests one instance takes at once (Cloud Run's default 80)
	FrontCPUUtil        float64 `json:"front_cpu_util"`        // busy share of an instance's CPU that is useful work
	LambdaGB            float64 `json:"lambda_gb"`             // memory of the Lambda function (the alternative front)

	// Provisioned machines: Cloud SQL, a self-hosted VM. Sized from the
	// measured CPU-seconds per message × rate × the workload's peak/mean,
	// over CPUUtil, rounded up to the next tier (2, 4, 8, ... vCPUs).
	CPUUtil      float64 `json:"cpu_util"`
	MinVCPU      float64 `json:"min_vcpu"`
	GiBPerVCPU   float64 `json:"gib_per_vcpu"`
	MinDiskGiB   float64 `json:"min_disk_gib"`
	DiskUtil     float64 `json:"disk_util"`
	DiskReserve  float64 `json:"disk_reserve_gib"`
	HA           bool    `json:"ha"`                   // Cloud SQL with a standby (every resource twice)
	BytesPerMsg  float64 `json:"stored_bytes_extra"`   // stored per message beyond its body (attributes, indexes)
	SpannerUtil  float64 `json:"spanner_util"`         // of a node's documented peak reads and writes
	SpannerMinPU float64 `json:"spanner_min_pu"`       // smallest instance
	TierVCPUs    []int   `json:"tier_vcpus,omitempty"` // machine sizes, vCPUs
}

// DefaultAssumptions follow the seed's where it states them (2 vCPU, 8
// GiB, 100 GiB minimum; 4 GiB per vCPU; 0.7 CPU utilization; 0.8 disk
// utilization and a 20 GiB reserve).
func DefaultAssumptions() Assumptions {
	return Assumptions{
		FrontVCPU: 1, FrontMinGiB: 0.5, FrontMaxConcurrency: 80, FrontCPUUtil: 0.6, LambdaGB: 0.5,
		CPUUtil: 0.7, MinVCPU: 2, GiBPerVCPU: 4, MinDiskGiB: 100, DiskUtil: 0.8, DiskReserve: 20,
		BytesPerMsg: 512, SpannerUtil: 0.65, SpannerMinPU: 100,
		TierVCPUs: []int{2, 4, 8, 16, 32, 64, 96},
	}
}

// Line is one item of a bill.
type Line struct {
	Item   string  `json:"item"`
	USD    float64 `json:"usd"`
	Detail string  `json:"detail"`
}

// Bill is a month of one deployment at one rate.
type Bill struct {
	Deployment string  `json:"deployment"`
	Variant    string  `json:"variant"`
	Rate       float64 `json:"rate"`
	Lines      []Line  `json:"lines"`
	Total      float64 `json:"total"`
	// LambdaFront is what the front would cost as a Lambda function
	// behind a function URL instead of Cloud Run (0 when the deployment
	// has no serverless front).
	LambdaFront float64  `json:"lambda_front,omitempty"`
	CloudRun    float64  `json:"cloud_run_front,omitempty"`
	Notes       []string `json:"notes,omitempty"`
}

func (b *Bill) add(item string, usd float64, format string, args ...any) {
	b.Lines = append(b.Lines, Line{item, usd, fmt.Sprintf(format, args...)})
	b.Total += usd
}

// Profile is a measurement reduced to what scales with the message rate
// (per lifecycle: one message sent, received and deleted) and what does
// not (per second: empty receives, receives held open by consumers).
type Profile struct {
	Variant Variant `json:"variant"`
	Rate    float64 `json:"measured_rate"` // lifecycles/s in the window

	PerLC           map[string]float64 `json:"requests_per_lifecycle"` // by action; receives that returned messages only
	EmptyPerSec     float64            `json:"empty_receives_per_sec"`
	HeldReceives    float64            `json:"receives_in_flight"`       // mean ReceiveMessage requests open
	OtherSecPerLC   float64            `json:"other_request_sec_per_lc"` // request-seconds of the rest, per lifecycle
	Reads           float64            `json:"billed_reads_per_lc"`
	Writes          float64            `json:"billed_writes_per_lc"`
	Deletes         float64            `json:"billed_deletes_per_lc"`
	Retries         float64            `json:"retries_per_lc"`
	RWTxns          float64            `json:"rw_txns_per_lc,omitempty"`
	ROTxns          float64            `json:"ro_txns_per_lc,omitempty"`
	WakeWrites      float64            `json:"wake_publishes_per_lc"`
	WakeReads       float64            `json:"wake_reads_per_lc"`
	WakeBytes       float64            `json:"wake_bytes_per_lc"`
	ServerCPUPerLC  float64            `json:"server_cpu_sec_per_lc"`
	DBCPUPerLC      float64            `json:"db_cpu_sec_per_lc"`
	PeakRSSBytes    int64              `json:"peak_rss_bytes"`
	StoreCallsPerLC map[string]float64 `json:"store_calls_per_lc"`
}

// NewProfile reduces m. It fails when the window had no lifecycle.
func NewProfile(m Measurement) (Profile, error) {
	if m.Lifecycles <= 0 || m.WindowSec <= 0 {
		return Profile{}, fmt.Errorf("%s at %g msg/s: no message went through the measured window", m.Variant.Name, m.Rate)
	}
	lc := float64(m.Lifecycles)
	p := Profile{
		Variant: m.Variant, Rate: lc / m.WindowSec, PerLC: map[string]float64{}, StoreCallsPerLC: map[string]float64{},
		Reads: float64(m.BilledReads) / lc, Writes: float64(m.BilledWrites) / lc, Deletes: float64(m.BilledDeletes) / lc,
		Retries: float64(m.BilledRetries) / lc,
		RWTxns:  float64(m.BilledRWTxns) / lc, ROTxns: float64(m.BilledROTxns) / lc,
		WakeWrites: float64(m.WakeWrites) / lc, WakeReads: float64(m.WakeReads) / lc, WakeBytes: float64(m.WakeBytes) / lc,
		ServerCPUPerLC: m.ServerCPUSec / lc, DBCPUPerLC: m.DBCPUSec / lc, PeakRSSBytes: m.PeakRSSBytes,
	}
	for a, n := range m.Requests {
		if a == "ReceiveMessage" {
			empty := float64(n) * m.EmptyReceiveShare
			p.EmptyPerSec = empty / m.WindowSec
			p.PerLC[a] = (float64(n) - empty) / lc
			p.HeldReceives = m.RequestSeconds[a] / m.WindowSec
			continue
		}
		p.PerLC[a] = float64(n) / lc
		p.OtherSecPerLC += m.RequestSeconds[a] / lc
	}
	for op, n := range m.StoreCalls {
		p.StoreCallsPerLC[op] = float64(n) / lc
	}
	return p, nil
}

// nearest is the profile measured nearest to rate on a log scale.
func nearest(ps []Profile, rate float64) Profile {
	best := ps[0]
	for _, p := range ps[1:] {
		if math.Abs(math.Log(p.Rate/rate)) < math.Abs(math.Log(best.Rate/rate)) {
			best = p
		}
	}
	return best
}

// requestsPerSec at rate: what the clients send, by action.
func (p Profile) requestsPerSec(rate float64) map[string]float64 {
	out := map[string]float64{}
	for a, n := range p.PerLC {
		out[a] = n * rate
	}
	out["ReceiveMessage"] += p.EmptyPerSec
	return out
}

func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// SQSMonthly is native SQS's month at unitsPerSec billed request units
// (64 KiB chunks) at perMillion dollars, after free requests.
func SQSMonthly(unitsPerSec, perMillion, monthSeconds, free float64) float64 {
	return math.Max(0, unitsPerSec*monthSeconds-free) * perMillion / 1e6
}

// chunks is the 64 KiB request units of a payload (at least one).
func chunks(payload, unit float64) float64 { return math.Max(1, math.Ceil(payload/unit)) }

// SQSUnitsPerSec is the request units native SQS bills for the request
// mix of p at rate: sends and the receives that return messages count
// their payload's 64 KiB chunks, the rest one each.
func SQSUnitsPerSec(p Profile, w Workload, rate float64, chunkBytes float64) float64 {
	payload := chunks(float64(w.BatchFill*w.BodyBytes), chunkBytes)
	u := 0.0
	for a, n := range p.requestsPerSec(rate) {
		switch a {
		case "SendMessage", "SendMessageBatch":
			u += n * payload
		case "ReceiveMessage":
			nonEmpty := p.PerLC[a] * rate
			u += nonEmpty*payload + (n - nonEmpty)
		default:
			u += n
		}
	}
	return u
}

// PriceSQS is native SQS (FIFO or Standard) for the request mix measured.
func PriceSQS(ps []Profile, w Workload, pr *Prices, a Assumptions, rate float64, fifo bool) Bill {
	p := nearest(ps, rate)
	name, id := "SQS Standard", "sqs.standard.request"
	if fifo {
		name, id = "SQS FIFO", "sqs.fifo.request"
	}
	b := Bill{Deployment: name, Variant: "native", Rate: rate}
	units := SQSUnitsPerSec(p, w, rate, pr.Get("sqs.chunk_bytes"))
	free := 0.0
	if a.FreeTiers {
		free = pr.Get("sqs.free_requests")
	}
	b.add("requests", SQSMonthly(units, pr.Get(id), pr.MonthSeconds(), free),
		"%.4g request units/s (the request mix measured on %s) × %.0f s × $%.2f/M", units, p.Variant.Name, pr.MonthSeconds(), pr.Get(id))
	return b
}

// tier is the smallest machine size with at least need vCPUs.
func (a Assumptions) tier(need float64) float64 {
	need = math.Max(need, a.MinVCPU)
	for _, t := range a.TierVCPUs {
		if float64(t) >= need {
			return float64(t)
		}
	}
	return math.Ceil(need) // beyond the largest tier: more machines, priced by the vCPU
}

func storedGiB(w Workload, a Assumptions, rate float64) float64 {
	return rate * w.ResidenceSeconds * (float64(w.BodyBytes) + a.BytesPerMsg) / (1 << 30)
}

func (a Assumptions) diskGiB(stored float64) float64 {
	return math.Max(a.MinDiskGiB, stored/a.DiskUtil+a.DiskReserve)
}

// Price is the month of each deployment of p's variant at rate.
func Price(ps []Profile, w Workload, pr *Prices, a Assumptions, rate float64) []Bill {
	p := nearest(ps, rate)
	sec, hours := pr.MonthSeconds(), pr.MonthHours
	var bills []Bill
	wake := func(b *Bill) {
		if wakeKind(p.Variant.Wakeups) != "pubsub" {
			return
		}
		bytes := p.WakeBytes * rate * sec
		free := 0.0
		if a.FreeTiers {
			free = pr.Get("pubsub.free_gib") * (1 << 30)
		}
		b.add("Pub/Sub wake-ups", math.Max(0, bytes-free)/(1<<40)*pr.Get("pubsub.throughput"),
			"%.3g billed bytes/msg (%.3g publishes/msg) × %.4g msg/s × %.0f s at $%.0f/TiB", p.WakeBytes, p.WakeWrites, rate, sec, pr.Get("pubsub.throughput"))
	}
	vm := func(b *Bill, cpuPerLC float64, what string) {
		need := cpuPerLC * rate * w.PeakToMean / a.CPUUtil
		vcpu := a.tier(need)
		gib := math.Max(vcpu*a.GiBPerVCPU, 2*float64(p.PeakRSSBytes)/(1<<30))
		disk := a.diskGiB(storedGiB(w, a, rate))
		b.add("VM vCPU (N2)", vcpu*hours*pr.Get("gce.n2.vcpu_hour"), "%g vCPU (needs %.3g: %.3g CPU-s/msg of %s × %.4g msg/s × peak/mean %g / %.2f)", vcpu, need, cpuPerLC, what, rate, w.PeakToMean, a.CPUUtil)
		b.add("VM memory (N2)", gib*hours*pr.Get("gce.n2.gib_hour"), "%g GiB", gib)
		b.add("VM disk (pd-balanced)", disk*pr.Get("gce.pd_balanced_gib_month"), "%.0f GiB", disk)
	}
	front := func(b *Bill) {
		reqs := p.requestsPerSec(rate)
		conc := p.HeldReceives + p.OtherSecPerLC*rate
		cpu := p.ServerCPUPerLC * rate / a.FrontCPUUtil
		gib := math.Max(a.FrontMinGiB, math.Ceil(1.5*float64(p.PeakRSSBytes)/(1<<30)*4)/4)
		n := math.Max(1, math.Max(math.Ceil(conc/a.FrontMaxConcurrency), math.Ceil(cpu/a.FrontVCPU)))
		billed := n
		if n == 1 {
			// Request-based billing: the one instance is billed while it
			// has a request open; at most the mean requests open (as if
			// they never overlapped), at least its CPU share.
			billed = math.Min(1, math.Max(conc, cpu/a.FrontVCPU))
		}
		inst := billed * sec
		vcpuS, gibS, nreq := inst*a.FrontVCPU, inst*gib, sum(reqs)*sec
		if a.FreeTiers {
			vcpuS = math.Max(0, vcpuS-pr.Get("cloudrun.free_vcpu_seconds"))
			gibS = math.Max(0, gibS-2*pr.Get("cloudrun.free_vcpu_seconds"))
			nreq = math.Max(0, nreq-2e6)
		}
		usd := vcpuS*pr.Get("cloudrun.vcpu_second") + gibS*pr.Get("cloudrun.gib_second") + nreq*pr.Get("cloudrun.request")/1e6
		b.add("Cloud Run front", usd, "%.3g instances billed (mean %.3g requests open, %.3g vCPU busy; %g vCPU, %g GiB each) + %.4g requests/s", billed, conc, cpu, a.FrontVCPU, gib, sum(reqs))
		b.CloudRun = usd
		// The same requests as Lambda invocations: each billed for the
		// time it was open, a long poll's whole wait included.
		inv, gbs := sum(reqs)*sec, conc*a.LambdaGB*sec
		if a.FreeTiers {
			inv = math.Max(0, inv-pr.Get("lambda.free"))
			gbs = math.Max(0, gbs-400000)
		}
		b.LambdaFront = inv*pr.Get("lambda.request")/1e6 + gbs*pr.Get("lambda.gb_second") + 0*pr.Get("lambda.function_url")
	}
	switch p.Variant.Kind {
	case "embedded", "memory":
		b := Bill{Deployment: "one VM (embedded store)", Variant: p.Variant.Name, Rate: rate}
		vm(&b, p.ServerCPUPerLC, "sluice")
		b.Notes = append(b.Notes, "one machine: no failover; its disk is the only copy")
		bills = append(bills, b)
	case "postgres":
		b := Bill{Deployment: "Cloud Run + Cloud SQL", Variant: p.Variant.Name, Rate: rate}
		front(&b)
		need := p.DBCPUPerLC * rate * w.PeakToMean / a.CPUUtil
		vcpu := a.tier(need)
		gib := vcpu * a.GiBPerVCPU
		disk := a.diskGiB(storedGiB(w, a, rate))
		copies := 1.0
		if a.HA {
			copies = pr.Get("cloudsql.ha_factor")
		}
		b.add("Cloud SQL vCPU", copies*vcpu*hours*pr.Get("cloudsql.vcpu_hour"), "%g × %g vCPU (needs %.3g: %.3g CPU-s/msg of PostgreSQL × %.4g msg/s × peak/mean %g / %.2f)", copies, vcpu, need, p.DBCPUPerLC, rate, w.PeakToMean, a.CPUUtil)
		b.add("Cloud SQL memory", copies*gib*hours*pr.Get("cloudsql.gib_hour"), "%g × %g GiB", copies, gib)
		b.add("Cloud SQL storage", copies*disk*pr.Get("cloudsql.ssd_gib_month"), "%g × %.0f GiB SSD", copies, disk)
		wake(&b)
		bills = append(bills, b)

		s := Bill{Deployment: "one VM (sluice + PostgreSQL)", Variant: p.Variant.Name, Rate: rate}
		vm(&s, p.ServerCPUPerLC+p.DBCPUPerLC, "sluice and PostgreSQL")
		wake(&s)
		s.Notes = append(s.Notes, "self-hosted at Compute Engine N2 rates, the seed's 'PostgreSQL (one copy)' reference")
		bills = append(bills, s)
	case "firestore":
		b := Bill{Deployment: "Cloud Run + Firestore", Variant: p.Variant.Name, Rate: rate}
		front(&b)
		day := 86400 / sec // share of the month that is one day
		ops := func(item string, perLC float64, id, freeID string) {
			n := perLC * rate * sec
			if a.FreeTiers {
				n = math.Max(0, n-pr.Get(freeID)/day)
			}
			b.add(item, n/1e5*pr.Get(id), "%.3g/msg × %.4g msg/s × %.0f s at $%.2f/100k", perLC, rate, sec, pr.Get(id))
		}
		// Wake-ups through Firestore itself (the store's default, unless
		// the variant names another transport) are document writes and
		// reads billed as the store's are, under the same free tier.
		reads, writes := p.Reads, p.Writes
		if k := wakeKind(p.Variant.Wakeups); k == "" || k == "firestore" {
			reads, writes = reads+p.WakeReads, writes+p.WakeWrites
		}
		ops("Firestore reads", reads, "firestore.read", "firestore.free_reads_per_day")
		ops("Firestore writes", writes, "firestore.write", "firestore.free_writes_per_day")
		ops("Firestore deletes", p.Deletes, "firestore.delete", "firestore.free_deletes_per_day")
		st := storedGiB(w, a, rate)
		b.add("Firestore storage", st*pr.Get("firestore.storage"), "%.3g GiB resident", st)
		wake(&b)
		bills = append(bills, b)
	case "spanner":
		b := Bill{Deployment: "Cloud Run + Spanner", Variant: p.Variant.Name, Rate: rate}
		front(&b)
		pu, nodes, reads, writes := SpannerPU(p, w, pr, a, rate)
		b.add("Spanner compute", pu/100*hours*pr.Get("spanner.pu_hour"),
			"%g processing units (%.3g nodes: %.4g reads/s = (%.3g rows read + %.3g read-only transactions)/msg, %.4g writes/s = %.3g commits/msg, × peak/mean %g at %.2f of a node's %g reads/s or %g writes/s)",
			pu, nodes, reads, p.Reads, p.ROTxns, writes, p.RWTxns, w.PeakToMean, a.SpannerUtil, pr.Get("spanner.node_reads_per_sec"), pr.Get("spanner.node_writes_per_sec"))
		if p.RWTxns > 0 && p.Writes > p.RWTxns {
			// The other reading of the guide: every mutation (a column of a
			// row, an index entry) as one of its single-row writes. Shown as
			// the bound it is, not priced.
			up := p
			up.RWTxns = p.Writes
			upu, _, _, _ := SpannerPU(up, w, pr, a, rate)
			b.Notes = append(b.Notes, fmt.Sprintf("counting each of the %.3g mutations/msg as a write instead of each commit (an upper bound: a mutation is a column or an index entry, the guide's write a whole 1 KB row) it would be %g processing units, $%s", p.Writes, upu, money(upu/100*hours*pr.Get("spanner.pu_hour"))))
		}
		st := storedGiB(w, a, rate) * (1 << 30) / 1e9
		b.add("Spanner storage", st*pr.Get("spanner.storage"), "%.3g GB", st)
		if p.Reads+p.ROTxns+p.RWTxns == 0 {
			b.Notes = append(b.Notes, "the store exported no rows read or transactions: compute is the minimum instance")
		}
		wake(&b)
		bills = append(bills, b)
	}
	return bills
}

// SpannerPU is the compute capacity that p's work at rate needs, with the
// node share, reads/s and writes/s it was sized from. Google's sizing
// guide gives a regional node (1,000 processing units) about 22,500 reads
// or 3,500 writes a second, a read being a single-row read of 1 KB and a
// write a commit of a single 1 KB row. Here a read is a row read (a
// message row is about 1 KB, its body) plus one per read-only transaction
// (a read that returns no row still costs a round of work: the idle
// checks of a long poll); a write is a committed read-write transaction,
// whatever rows it wrote (the low end: a commit of a few rows costs more
// than one of one; Price notes the mutation count as the high end). Reads
// and writes add up as shares of a node; the total is scaled by
// peak/mean, over the utilization target, and rounded up to steps of 100
// processing units below a node and 1,000 above, at least the minimum.
func SpannerPU(p Profile, w Workload, pr *Prices, a Assumptions, rate float64) (pu, nodes, reads, writes float64) {
	reads = (p.Reads + p.ROTxns) * rate
	writes = p.RWTxns * rate
	nodes = (reads/pr.Get("spanner.node_reads_per_sec") + writes/pr.Get("spanner.node_writes_per_sec")) * w.PeakToMean / a.SpannerUtil
	pu = math.Max(a.SpannerMinPU, math.Ceil(nodes*10-1e-9)*100)
	if pu > 1000 {
		pu = math.Ceil(pu/1000-1e-9) * 1000
	}
	return pu, nodes, reads, writes
}

// Curve is one deployment's month at each rate.
type Curve struct {
	Name   string    `json:"name"`
	Rates  []float64 `json:"rates"`
	USD    []float64 `json:"usd"`
	Native bool      `json:"native"` // an SQS reference line
}

// Curves prices every variant and native SQS at rates.
func Curves(profiles map[string][]Profile, w Workload, pr *Prices, a Assumptions, rates []float64) []Curve {
	byName := map[string]*Curve{}
	var order []string
	put := func(name string, native bool, r, usd float64) {
		c := byName[name]
		if c == nil {
			c = &Curve{Name: name, Native: native}
			byName[name] = c
			order = append(order, name)
		}
		c.Rates = append(c.Rates, r)
		c.USD = append(c.USD, usd)
	}
	var names []string
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, r := range rates {
		// Native SQS priced from the first variant's request mix: every
		// variant serves the same client requests.
		if len(names) > 0 {
			ps := profiles[names[0]]
			put("SQS Standard", true, r, PriceSQS(ps, w, pr, a, r, false).Total)
			put("SQS FIFO", true, r, PriceSQS(ps, w, pr, a, r, true).Total)
		}
		for _, n := range names {
			for _, b := range Price(profiles[n], w, pr, a, r) {
				put(b.Variant+": "+b.Deployment, false, r, b.Total)
			}
		}
	}
	out := make([]Curve, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out
}

// Crossover is a rate where a deployment's curve crosses an SQS line.
type Crossover struct {
	Curve, SQS string
	Rate, USD  float64
	// Cheaper tells which side is cheaper above the crossing.
	CheaperAbove string
}

// Crossovers finds where each deployment's curve crosses each SQS line,
// by log-log interpolation between the sampled rates.
func Crossovers(cs []Curve) []Crossover {
	var out []Crossover
	for _, s := range cs {
		if !s.Native {
			continue
		}
		for _, c := range cs {
			if c.Native {
				continue
			}
			for i := 1; i < len(c.Rates); i++ {
				d0 := math.Log(c.USD[i-1]) - math.Log(s.USD[i-1])
				d1 := math.Log(c.USD[i]) - math.Log(s.USD[i])
				if math.IsNaN(d0) || math.IsNaN(d1) || math.IsInf(d0, 0) || math.IsInf(d1, 0) || (d0 < 0) == (d1 < 0) || d0 == d1 {
					continue
				}
				t := d0 / (d0 - d1)
				lr := math.Log(c.Rates[i-1]) + t*(math.Log(c.Rates[i])-math.Log(c.Rates[i-1]))
				lu := math.Log(s.USD[i-1]) + t*(math.Log(s.USD[i])-math.Log(s.USD[i-1]))
				cheaper := c.Name
				if d1 > 0 {
					cheaper = s.Name
				}
				out = append(out, Crossover{Curve: c.Name, SQS: s.Name, Rate: math.Exp(lr), USD: math.Exp(lu), CheaperAbove: cheaper})
			}
		}
	}
	return out
}
