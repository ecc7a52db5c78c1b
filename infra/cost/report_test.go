package cost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Report writes the table the pricing gives, the chart and the counts,
// and says when a run fell short of its target rate.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	w := oneKiB
	m := func(name, kind string, lcps float64) Measurement {
		return Measurement{Variant: Variant{Name: name, Kind: kind}, Workload: w.Name, Rate: 100, Time: "2026-12-01T00:00:00Z", Machine: "test",
			WindowSec: 10, Lifecycles: int64(lcps * 10), OK: true,
			Requests:       map[string]int64{"SendMessage": int64(lcps * 10), "ReceiveMessage": int64(lcps * 10), "DeleteMessage": int64(lcps * 10)},
			RequestSeconds: map[string]float64{"ReceiveMessage": 40},
			BilledReads:    int64(lcps * 30), ServerCPUSec: 1, DBCPUSec: 1}
	}
	in := ReportInput{Dir: dir, Workload: w, Prices: prices(t), Assumptions: DefaultAssumptions(),
		Measurements: []Measurement{m("pg", "postgres", 100), m("fs", "firestore", 20)}}
	files, err := Report(in)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(files.Markdown)
	// SQS FIFO at 100 msg/s, 3 requests each: $394.20 → "394".
	for _, want := range []string{"| SQS FIFO | 3.94 | 39 | 394 | 3,942 | 39,420 |", "fs reached 20.0 msg/s of the 100 targeted", "pg: Cloud Run + Cloud SQL", "fs: Cloud Run + Firestore"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "cost-vs-rate.svg"))
	if n := strings.Count(string(svg), "<polyline"); n != 5 {
		t.Errorf("%d lines in the chart, want 5 (2 SQS, 3 deployments)", n)
	}
	var c Counts
	data, _ := os.ReadFile(files.Counts)
	if err := json.Unmarshal(data, &c); err != nil || len(c.Measurements) != 2 || len(c.Prices) == 0 {
		t.Errorf("counts.json: %v, %d measurements, %d prices", err, len(c.Measurements), len(c.Prices))
	}
	in.Measurements[0].Workload = "other"
	if _, err := Report(in); err == nil {
		t.Error("a report mixing workloads was written")
	}
}
