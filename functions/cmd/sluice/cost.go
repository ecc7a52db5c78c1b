package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/infra/cost"
)

const costUsage = `sluice cost: what a workload costs a month on each variant of sluice,
measured, beside native Amazon SQS.

Usage:
  sluice cost run --workload W --spawn STORE_URL [flags]   measure a variant (starts sluice serve)
  sluice cost run --workload W --endpoint URL [flags]      measure a running server
  sluice cost report --workload W --out DIR RUN.json...    price runs: DIR/report.md, charts, counts.json
  sluice cost workloads                                    list the shipped workloads

Flags of run:
  --workload W        a shipped workload's name (sluice cost workloads) or a workload file
  --spawn STORE       start "<server-bin> serve --store STORE" for each rate of the workload
  --wakeups URL       with --spawn: the server's --wakeups (e.g. pubsub://PROJECT/TOPIC)
  --server-bin PATH   the sluice binary --spawn starts (default: this executable)
  --endpoint URL      a running server instead (its /metrics must be reachable there)
  --server-pid PID    with --endpoint: the server's process, for its CPU and peak RSS
  --variant NAME      the variant's name in reports (default: the store kind, -wake-up kind)
  --kind KIND         how it is priced: embedded, memory, postgres, firestore, spanner
                      (default: from the store URL)
  --duration D        measured window per rate (default 20s)
  --warmup D          unmeasured warm-up before it (default 3s)
  --out FILE          write the measurements as JSON there (default: standard output)

Flags of report:
  --workload W        the workload the runs measured
  --out DIR           where to write (created)
  --prices FILE       a price table instead of the shipped infra/cost/prices.json
  --free-tiers        subtract the providers' free allowances (default: list prices only)
  --ha                Cloud SQL with a standby

Exit status: 0 when every run passed its checks, 1 otherwise, 2 on bad usage.
`

func costCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, costUsage)
		return 2
	}
	switch args[0] {
	case "run":
		return costRun(ctx, args[1:], stdout, stderr)
	case "report":
		return costReport(args[1:], stdout, stderr)
	case "workloads":
		ws, err := cost.Workloads()
		if err != nil {
			fmt.Fprintf(stderr, "sluice cost: %v\n", err)
			return 1
		}
		for _, w := range ws {
			fmt.Fprintf(stdout, "%-14s %s\n", w.Name, w.Description)
		}
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, costUsage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice cost: unknown subcommand %q\n\n%s", args[0], costUsage)
	return 2
}

func costRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice cost run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, costUsage) }
	var c cost.MeasureConfig
	var workload, out string
	fs.StringVar(&workload, "workload", "", "workload")
	fs.StringVar(&c.Variant.Store, "spawn", "", "store URL of a server to start")
	fs.StringVar(&c.Variant.Wakeups, "wakeups", "", "wake-ups URL of the server started")
	fs.StringVar(&c.ServerBin, "server-bin", "", "sluice binary for --spawn")
	fs.StringVar(&c.Endpoint, "endpoint", "", "SQS endpoint")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "server process id")
	fs.StringVar(&c.Variant.Name, "variant", "", "variant name")
	fs.StringVar(&c.Variant.Kind, "kind", "", "pricing kind")
	fs.DurationVar(&c.Duration, "duration", cost.DefaultDuration, "measured window")
	fs.DurationVar(&c.Warmup, "warmup", cost.DefaultWarmup, "warm-up")
	fs.StringVar(&out, "out", "", "output file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || workload == "" || (c.Endpoint == "") == (c.Variant.Store == "") || c.Duration <= 0 || c.Warmup < 0 {
		fmt.Fprintln(stderr, "sluice cost run: give --workload and exactly one of --spawn and --endpoint (sluice cost help)")
		return 2
	}
	w, err := cost.LoadWorkload(workload)
	if err != nil {
		fmt.Fprintf(stderr, "sluice cost: %v\n", err)
		return 2
	}
	c.Workload = w
	if c.Variant.Store != "" && c.ServerBin == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "sluice cost: cannot find this executable (use --server-bin): %v\n", err)
			return 1
		}
		c.ServerBin = exe
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c.Log = stderr
	ms, err := cost.Measure(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "sluice cost: %v\n", err)
		return 1
	}
	data, err := json.MarshalIndent(ms, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "sluice cost: %v\n", err)
		return 1
	}
	data = append(data, '\n')
	if out == "" {
		_, err = stdout.Write(data)
	} else {
		err = os.WriteFile(out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice cost: %v\n", err)
		return 1
	}
	status := 0
	for _, m := range ms {
		p, perr := cost.NewProfile(m)
		state := "ok"
		if !m.OK {
			state, status = "FAILED", 1
		}
		if perr != nil {
			fmt.Fprintf(stderr, "cost: %s at %g msg/s: %v\n", m.Variant.Name, m.Rate, perr)
			status = 1
			continue
		}
		fmt.Fprintf(stderr, "cost: %s at %g msg/s: %.1f msg/s measured, checks %s; per message: requests %.2f, billed reads %.2f writes %.2f deletes %.2f, wake bytes %.0f, sluice CPU %.3f ms, PostgreSQL CPU %.3f ms\n",
			m.Variant.Name, m.Rate, p.Rate, state, sumMap(p.PerLC), p.Reads, p.Writes, p.Deletes, p.WakeBytes, 1000*p.ServerCPUPerLC, 1000*p.DBCPUPerLC)
	}
	return status
}

func sumMap(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

func costReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice cost report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, costUsage) }
	var workload, dir, pricesFile string
	a := cost.DefaultAssumptions()
	fs.StringVar(&workload, "workload", "", "workload")
	fs.StringVar(&dir, "out", "", "output directory")
	fs.StringVar(&pricesFile, "prices", "", "price table")
	fs.BoolVar(&a.FreeTiers, "free-tiers", false, "subtract free tiers")
	fs.BoolVar(&a.HA, "ha", false, "Cloud SQL with a standby")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if workload == "" || dir == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "sluice cost report: give --workload, --out and the run files")
		return 2
	}
	w, err := cost.LoadWorkload(workload)
	if err != nil {
		fmt.Fprintf(stderr, "sluice cost: %v\n", err)
		return 2
	}
	pr, err := cost.DefaultPrices()
	if pricesFile != "" {
		pr, err = cost.LoadPrices(pricesFile)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice cost: %v\n", err)
		return 1
	}
	var ms []cost.Measurement
	for _, name := range fs.Args() {
		data, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(stderr, "sluice cost: %v\n", err)
			return 1
		}
		var part []cost.Measurement
		if err := json.Unmarshal(data, &part); err != nil {
			fmt.Fprintf(stderr, "sluice cost: %s: %v\n", name, err)
			return 1
		}
		ms = append(ms, part...)
	}
	files, err := cost.Report(cost.ReportInput{
		Dir: dir, Workload: w, Measurements: ms, Prices: pr, Assumptions: a, Now: time.Now().UTC(),
		Command: "sluice cost report " + strings.Join(args, " "),
	})
	if err != nil {
		fmt.Fprintf(stderr, "sluice cost: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "cost: wrote %s, %s, %s", files.Markdown, files.SVG, files.Counts)
	if files.PNG != "" {
		fmt.Fprintf(stdout, ", %s", files.PNG)
	}
	fmt.Fprintln(stdout)
	if files.PNGError != "" {
		fmt.Fprintf(stderr, "cost: no PNG: %s\n", files.PNGError)
	}
	return 0
}
