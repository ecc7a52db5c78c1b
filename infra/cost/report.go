package cost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// TableRates are the rates of the report's table.
var TableRates = []float64{1, 10, 100, 1000, 10000}

// chartRates sample the chart's curves: four a decade from 1 to 10,000.
func chartRates() []float64 {
	var out []float64
	for e := 0.0; e <= 4.0001; e += 0.25 {
		out = append(out, math.Round(math.Pow(10, e)*1000)/1000)
	}
	return out
}

// ReportInput is what Report writes up.
type ReportInput struct {
	Dir          string
	Workload     Workload
	Measurements []Measurement
	Prices       *Prices
	Assumptions  Assumptions
	Now          time.Time
	Command      string // how the measurements were made, for the report
}

// ReportFiles are the files Report wrote.
type ReportFiles struct {
	Markdown, SVG, PNG, Counts string
	PNGError                   string // why there is no PNG
}

// Counts is the raw counts file: every measurement, its profile, and the
// bills at the table's rates.
type Counts struct {
	Workload     Workload      `json:"workload"`
	Assumptions  Assumptions   `json:"assumptions"`
	Measurements []Measurement `json:"measurements"`
	Profiles     []Profile     `json:"profiles"`
	Bills        []Bill        `json:"bills"`
	Curves       []Curve       `json:"curves"`
	Crossovers   []Crossover   `json:"crossovers"`
	Prices       []PriceRow    `json:"prices_used"`
}

// Report prices the measurements and writes report.md, cost-vs-rate.svg
// (and .png, converted with rsvg-convert when it is installed) and
// counts.json into in.Dir.
func Report(in ReportInput) (*ReportFiles, error) {
	if len(in.Measurements) == 0 {
		return nil, fmt.Errorf("cost report: no measurements")
	}
	if in.Now.IsZero() {
		in.Now = time.Now().UTC()
	}
	if err := os.MkdirAll(in.Dir, 0o755); err != nil {
		return nil, err
	}
	profiles := map[string][]Profile{}
	var all []Profile
	var variants []string
	for _, m := range in.Measurements {
		if m.Workload != in.Workload.Name {
			return nil, fmt.Errorf("cost report: measurement of workload %q in a report of %q", m.Workload, in.Workload.Name)
		}
		p, err := NewProfile(m)
		if err != nil {
			return nil, err
		}
		if profiles[m.Variant.Name] == nil {
			variants = append(variants, m.Variant.Name)
		}
		profiles[m.Variant.Name] = append(profiles[m.Variant.Name], p)
		all = append(all, p)
	}
	sort.Strings(variants)
	pr, a, w := in.Prices, in.Assumptions, in.Workload
	chart := Curves(profiles, w, pr, a, chartRates())
	xs := Crossovers(chart)
	table := Curves(profiles, w, pr, a, TableRates)
	var bills []Bill
	for _, r := range TableRates {
		ps := profiles[variants[0]]
		bills = append(bills, PriceSQS(ps, w, pr, a, r, false), PriceSQS(ps, w, pr, a, r, true))
		for _, v := range variants {
			bills = append(bills, Price(profiles[v], w, pr, a, r)...)
		}
	}

	files := &ReportFiles{
		Markdown: filepath.Join(in.Dir, "report.md"), SVG: filepath.Join(in.Dir, "cost-vs-rate.svg"),
		PNG: filepath.Join(in.Dir, "cost-vs-rate.png"), Counts: filepath.Join(in.Dir, "counts.json"),
	}
	machine := in.Measurements[0].Machine
	title := fmt.Sprintf("sluice vs. Amazon SQS: USD/month, workload %s", w.Name)
	sub := fmt.Sprintf("measured %s on %s; list prices, %s", in.Measurements[0].Time[:10], machine, freeText(a))
	var svg bytes.Buffer
	if err := WriteChart(&svg, title, sub, chart, xs); err != nil {
		return nil, err
	}
	if err := os.WriteFile(files.SVG, svg.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if conv, err := exec.LookPath("rsvg-convert"); err == nil {
		if out, err := exec.Command(conv, "-f", "png", "-o", files.PNG, files.SVG).CombinedOutput(); err != nil {
			files.PNGError = fmt.Sprintf("rsvg-convert: %v: %s", err, out)
			files.PNG = ""
		}
	} else {
		files.PNGError = "rsvg-convert is not installed (Debian: librsvg2-bin)"
		files.PNG = ""
	}

	c := Counts{Workload: w, Assumptions: a, Measurements: in.Measurements, Profiles: all, Bills: bills, Curves: chart, Crossovers: xs, Prices: pr.Used()}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(files.Counts, data, 0o644); err != nil {
		return nil, err
	}

	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f("# %s\n\n", title)
	f("Measured %s on %s. Report written %s.\n\n", in.Measurements[0].Time, machine, in.Now.Format(time.RFC3339))
	if in.Command != "" {
		f("Made with `%s`.\n\n", in.Command)
	}
	f("Workload **%s**: %s\n\n```json\n%s\n```\n\n", w.Name, w.Description, mustJSON(w))
	f("## USD per month\n\n")
	f("List prices (%s). Each sluice row is the whole bill of that deployment: its front (a Cloud Run service, or the VM) and its backend. The SQS rows price the same client requests on native SQS.\n\n", freeText(a))
	f("| deployment |")
	for _, r := range TableRates {
		f(" %s msg/s |", num(r))
	}
	f("\n|---|")
	for range TableRates {
		f("--:|")
	}
	f("\n")
	for _, cu := range table {
		f("| %s |", cu.Name)
		for _, v := range cu.USD {
			f(" %s |", money(v))
		}
		f("\n")
	}
	f("\n![cost vs rate](cost-vs-rate.svg)\n\n")
	if files.PNGError != "" {
		f("(No PNG: %s.)\n\n", files.PNGError)
	}
	f("### Crossovers\n\n")
	if len(xs) == 0 {
		f("No line crosses an SQS line between 1 and 10,000 msg/s.\n\n")
	}
	for i, x := range xs {
		f("- %s: **%s** crosses **%s** at about %s msg/s ($%s/month); above it, %s is cheaper.\n", letter(i), x.Curve, x.SQS, num(x.Rate), num(x.USD), x.CheaperAbove)
	}
	f("\n### Front doors\n\nThe serverless front of each deployment, as priced above (Cloud Run, request-based billing) and as a Lambda function behind a function URL instead (each request an invocation billed for the time it was open: a long poll's whole wait).\n\n")
	f("| deployment | front |")
	for _, r := range TableRates {
		f(" %s msg/s |", num(r))
	}
	f("\n|---|---|")
	for range TableRates {
		f("--:|")
	}
	f("\n")
	fronts := map[string][2][]float64{}
	var frontNames []string
	for _, bl := range bills {
		if bl.CloudRun == 0 && bl.LambdaFront == 0 {
			continue
		}
		k := bl.Variant + ": " + bl.Deployment
		if _, ok := fronts[k]; !ok {
			frontNames = append(frontNames, k)
		}
		v := fronts[k]
		v[0], v[1] = append(v[0], bl.CloudRun), append(v[1], bl.LambdaFront)
		fronts[k] = v
	}
	for _, k := range frontNames {
		for i, name := range []string{"Cloud Run", "Lambda + function URL"} {
			f("| %s | %s |", k, name)
			for _, v := range fronts[k][i] {
				f(" %s |", money(v))
			}
			f("\n")
		}
	}

	f("\n## What each variant did, per message\n\n")
	f("Over the measured window; one message is one send → receive → delete lifecycle. Requests and their open time are the server's own counters (`/metrics`), billed operations its store's and wake-up transport's, CPU from `/proc`. Fixed per-second costs (empty receives, receives held open by consumers) are shown per second: they do not grow with the rate.\n\n")
	f("| variant | window | target msg/s | measured msg/s | requests/msg | empty receives/s | receives open | billed reads/msg | writes/msg | deletes/msg | retries/msg | wake publishes/msg | wake bytes/msg | sluice CPU ms/msg | PostgreSQL CPU ms/msg | peak RSS | checks |\n")
	f("|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for i, p := range all {
		m := in.Measurements[i]
		ok := "ok"
		if !m.OK {
			ok = fmt.Sprintf("FAILED (%d errors)", m.Errors)
		}
		f("| %s | %gs | %g | %.1f | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f | %.2f | %.0f | %.3f | %.3f | %.1f MiB | %s |\n",
			p.Variant.Name, m.WindowSec, m.Rate, p.Rate, perMsg(p.PerLC), p.EmptyPerSec, p.HeldReceives, p.Reads, p.Writes, p.Deletes, p.Retries,
			p.WakeWrites, p.WakeBytes, 1000*p.ServerCPUPerLC, 1000*p.DBCPUPerLC, float64(p.PeakRSSBytes)/(1<<20), ok)
	}
	for i, p := range all {
		if m := in.Measurements[i]; p.Rate < 0.8*m.Rate {
			f("\n**%s reached %.1f msg/s of the %g targeted** (the backend, or its emulator here, did not keep up): its per-message counts are those of the slower run, idle work spread over fewer messages, and every rate is priced from them.\n", p.Variant.Name, p.Rate, m.Rate)
		}
	}
	f("\nEmpty receives, of all receives: the workload expects %.0f%%; measured", 100*w.EmptyReceiveShare)
	for i, p := range all {
		f(" %s %.0f%%", p.Variant.Name, 100*in.Measurements[i].EmptyReceiveShare)
		if i < len(all)-1 {
			f(",")
		}
	}
	f(" (it follows from the rate, the consumers and how they poll; the measured share is what is priced).\n")
	f("\nStore calls per message:\n\n")
	for _, p := range all {
		f("- %s at %.1f msg/s: %s", p.Variant.Name, p.Rate, perMsg(p.StoreCallsPerLC))
		if p.RWTxns+p.ROTxns > 0 {
			f("; transactions %.2f read-write (committed) and %.2f read-only", p.RWTxns, p.ROTxns)
		}
		f("\n")
	}

	f("\n## The bills at 100 msg/s\n\n")
	for _, bl := range bills {
		if bl.Rate != 100 {
			continue
		}
		f("**%s: %s** — $%s\n\n", bl.Variant, bl.Deployment, money(bl.Total))
		for _, l := range bl.Lines {
			f("- %s: $%s — %s\n", l.Item, money(l.USD), l.Detail)
		}
		for _, n := range bl.Notes {
			f("- note: %s\n", n)
		}
		f("\n")
	}

	f("## Check against the seed's figures\n\n")
	fifo := SQSMonthly(100, pr.Get("sqs.fifo.request"), pr.MonthSeconds(), 0)
	f("- 100 SQS request units per second on FIFO: %.0f s × 100 × $%.2f/M = **$%.2f**/month; the seed says $131.40.\n", pr.MonthSeconds(), pr.Get("sqs.fifo.request"), fifo)
	f("- The seed's axis counts request units, not messages. An unbatched lifecycle is three requests (send, receive, delete), so 100 msg/s is 300 units/s: $%.2f on FIFO; the table above prices the requests the clients really made, empty receives included.\n", 3*fifo)
	f("- Cloud SQL at its floor (2 vCPU, 8 GiB, 100 GiB SSD, one copy): 2 × 730 × $0.0413 + 8 × 730 × $0.007 + 100 × $0.17 = $118.18, the seed's figure; with a standby, $236.36. The seed's \"PostgreSQL (one copy)\" $80.90 is the same allocation self-hosted at Compute Engine N2 rates (2 × 730 × $0.031611 + 8 × 730 × $0.004237 + 100 × $0.10): our \"one VM\" rows at their floor. Ours differ from the seed's above the floor because ours are sized from the PostgreSQL CPU-seconds measured per message, where the seed assumes 1,500 operations per vCPU-second and a 2× ordering multiplier; and ours add the front (Cloud Run) that runs sluice, which the seed leaves out (\"adapter hosting\").\n\n")

	f("## Assumptions\n\n")
	f("- Every rate is priced from the measurement nearest to it on a log scale; per-message counts scale linearly with the rate, per-second ones (empty receives, receives held open) stay. Rates far from any measurement are extrapolations: at 10,000 msg/s a variant measured at 100 msg/s is assumed to do 100 times the work, which a local run did not show it can.\n")
	f("- A month is %g hours (%.0f s), as in the seed.\n", pr.MonthHours, pr.MonthSeconds())
	f("- Native SQS serves exactly the requests the load generator made against sluice (same batching, same empty receives); sends and the receives that return messages are billed per 64 KiB chunk of their payload.\n")
	f("- Cloud Run front, request-based billing: an instance is billed while it has a request open. With fewer than one request open on average, the instance is billed for the mean number open (as if requests never overlapped, an upper bound); otherwise for max(open/concurrency, CPU needed) instances all the time. Long polls held by consumers keep it billed: that is measured (the server's request-seconds), not guessed.\n")
	f("- The Lambda alternative bills every request as an invocation for the time it was open, with %g GB; CPU time on Lambda scales with memory and was not measured there.\n", a.LambdaGB)
	f("- Machines (Cloud SQL, a VM) are sized for peak/mean × mean CPU over the utilization target and rounded up to the next size; memory is %g GiB per vCPU; disk at least %g GiB.\n", a.GiBPerVCPU, a.MinDiskGiB)
	f("- Spanner is sized by Google's guide (a regional node of 1,000 processing units: about %g reads/s or %g writes/s, a read being a single-row read of 1 KB, a write a commit of a single 1 KB row) at %.2f of it: a read here is a row read (a message row is about its body) plus one per read-only transaction (a read that finds nothing still works); a write is a committed read-write transaction, whatever rows it wrote: the low end, since a commit of several rows costs more than one of one. Its mutations (one per column written and index entry) are not the guide's writes; the bill notes what counting them as writes would cost, as the high end.\n", pr.Get("spanner.node_reads_per_sec"), pr.Get("spanner.node_writes_per_sec"), a.SpannerUtil)
	f("- PostgreSQL's CPU is that of the local server's processes (the load generator's machine); Firestore's and Spanner's are the providers' and are billed by operation or processing unit, not by our CPU.\n")
	f("- Storage holds messages for the workload's residence time (%g s) at body + %g bytes.\n", w.ResidenceSeconds, a.BytesPerMsg)
	f("- Not priced: network egress, backups, logging and monitoring, load balancers, committed-use and sustained-use discounts, taxes.\n\n")
	f("```json\n%s\n```\n\n", mustJSON(a))

	f("## Prices used\n\nFrom `infra/cost/prices.json`; *unconfirmed* marks a figure that could not be read on the provider's page (or a copy of it) on the date given, and should be checked.\n\n")
	f("| id | service | item | figure | unit | source | as of | |\n|---|---|---|--:|---|---|---|---|\n")
	for _, r := range pr.Used() {
		flag := "confirmed"
		if !r.Confirmed {
			flag = "*unconfirmed*"
		}
		f("| %s | %s | %s | %g | %s | %s | %s | %s |\n", r.ID, r.Service, r.Item, r.USD, r.Unit, r.Source, r.AsOf, flag)
	}
	if err := os.WriteFile(files.Markdown, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return files, nil
}

func freeText(a Assumptions) string {
	if a.FreeTiers {
		return "free tiers subtracted"
	}
	return "no free tiers"
}

func money(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func perMsg(m map[string]float64) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		if m[k] >= 0.0005 {
			parts = append(parts, fmt.Sprintf("%s %.3g", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

func mustJSON(v any) string {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(data)
}
