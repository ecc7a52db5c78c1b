package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/infra/cost"
)

// TestCostPipeline is the cost comparison end to end, short: `sluice cost
// run` starts `sluice serve` on the embedded store and on PostgreSQL
// (DATABASE_URL), drives a small workload through the SQS API, and `sluice
// cost report` prices what the servers' counters and /proc said into the
// report, the chart and the raw counts.
func TestCostPipeline(t *testing.T) {
	pg := os.Getenv("DATABASE_URL")
	if pg == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL is not set and CI=true forbids skipping: the cost run needs PostgreSQL (eval \"$(infra/scripts/postgres.sh start)\")")
		}
		t.Skip(`DATABASE_URL is not set: skipping the cost pipeline (eval "$(infra/scripts/postgres.sh start)")`)
	}
	t.Setenv("SLUICE_TEST_RUN_MAIN", "1") // the servers spawned are this binary acting as sluice
	dir := t.TempDir()
	wfile := filepath.Join(dir, "ci.json")
	if err := os.WriteFile(wfile, []byte(`{"name":"ci","description":"CI: 40 msg/s FIFO, long polls","rates":[40],
		"body_bytes":512,"batch_fill":1,"fifo":true,"groups":8,"producers":2,"consumers":2,
		"long_poll_share":1,"wait_time_seconds":2,"residence_seconds":60,"peak_to_mean":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := map[string]string{
		"embedded": "file://" + filepath.Join(dir, "data"),
		"postgres": pg,
	}
	var files []string
	for _, v := range []string{"embedded", "postgres"} {
		out := filepath.Join(dir, v+".json")
		code, _, errs := runCmd("cost", "run", "--workload", wfile, "--spawn", runs[v], "--server-bin", os.Args[0],
			"--variant", v, "--duration", "3s", "--warmup", "1s", "--out", out)
		if code != 0 {
			t.Fatalf("cost run %s: exit %d\n%s", v, code, tail(errs))
		}
		files = append(files, out)
	}
	report := filepath.Join(dir, "report")
	code, stdout, errs := runCmd(append([]string{"cost", "report", "--workload", wfile, "--out", report}, files...)...)
	if code != 0 {
		t.Fatalf("cost report: exit %d\n%s%s", code, stdout, tail(errs))
	}

	var counts cost.Counts
	data, err := os.ReadFile(filepath.Join(report, "counts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &counts); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range counts.Measurements {
		seen[m.Variant.Name] = true
		if !m.OK || m.Lifecycles == 0 || m.Requests["SendMessage"] == 0 || m.Requests["DeleteMessage"] == 0 {
			t.Errorf("%s: ok %v, lifecycles %d, server requests %v", m.Variant.Name, m.OK, m.Lifecycles, m.Requests)
		}
		if m.ServerCPUSec <= 0 || m.PeakRSSBytes <= 0 {
			t.Errorf("%s: server CPU %v s, peak RSS %d: the server process was not measured", m.Variant.Name, m.ServerCPUSec, m.PeakRSSBytes)
		}
		calls := int64(0)
		for _, n := range m.StoreCalls {
			calls += n
		}
		if calls == 0 {
			t.Errorf("%s: no store calls counted", m.Variant.Name)
		}
		// PostgreSQL bills no operations: its cost is the machine, sized
		// from its processes' CPU-seconds, which must have been seen.
		if m.Variant.Kind == "postgres" && m.DBCPUSec <= 0 {
			t.Errorf("postgres: PostgreSQL CPU %v s: its processes were not measured", m.DBCPUSec)
		}
	}
	if !seen["embedded"] || !seen["postgres"] {
		t.Errorf("variants in counts.json: %v", seen)
	}
	if len(counts.Bills) == 0 || len(counts.Curves) < 5 {
		t.Errorf("%d bills, %d curves: want SQS Standard, FIFO and three deployments", len(counts.Bills), len(counts.Curves))
	}

	md, err := os.ReadFile(filepath.Join(report, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| SQS FIFO |", "| postgres: Cloud Run + Cloud SQL |", "| embedded: one VM (embedded store) |", "## Prices used", "## Assumptions"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}

	svg, err := os.Open(filepath.Join(report, "cost-vs-rate.svg"))
	if err != nil {
		t.Fatal(err)
	}
	defer svg.Close()
	dec := xml.NewDecoder(svg)
	root, lines := "", 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "polyline" {
				lines++
			}
		}
	}
	if root != "svg" || lines != len(counts.Curves) {
		t.Errorf("chart: root <%s>, %d lines; want <svg> and %d", root, lines, len(counts.Curves))
	}
	if _, err := exec.LookPath("rsvg-convert"); err == nil {
		if st, err := os.Stat(filepath.Join(report, "cost-vs-rate.png")); err != nil || st.Size() < 1000 {
			t.Errorf("rsvg-convert is installed but the PNG is missing or tiny: %v", err)
		}
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}
