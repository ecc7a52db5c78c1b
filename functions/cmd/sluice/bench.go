package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/infra/bench"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
)

const benchUsage = `sluice bench: drive send → receive → delete lifecycles through the SQS API
and report throughput, latency per action and the checks (every message
received, FIFO order within each group, no errors).

Usage:
  sluice bench --endpoint http://127.0.0.1:9324 [flags]
  sluice bench --spawn STORE_URL [flags]     start sluice serve on STORE_URL, bench it, stop it
  sluice bench --table RESULT.json...        print a table of --json results

Flags:
  --endpoint URL      SQS endpoint (required unless --spawn)
  --receive-endpoint URL
                      consumers receive and delete here instead: another instance on the
                      same store, so pickup measures wake-ups across instances
  --spawn STORE       start "<server-bin> serve --addr 127.0.0.1:0 --store STORE" for the run;
                      its peak RSS (VmHWM) and CPU are reported, it is stopped with SIGTERM
  --server-bin PATH   the sluice binary --spawn starts (default: this executable)
  --server-pid PID    the server's process when not spawned: its peak RSS (VmHWM) and CPU
  --producers N       sending goroutines (default 8)
  --consumers N       receiving and deleting goroutines (default 8)
  --groups G          FIFO message groups (default 64)
  --size BYTES        message body size (default 1024)
  --fifo              a FIFO queue (default Standard)
  --batch             SendMessageBatch / ReceiveMessage of up to 10 / DeleteMessageBatch
  --duration D        measured window (default 20s)
  --warmup D          unmeasured warm-up before it (default 2s)
  --every D           also report the lifecycles/s of each part of the window this long
                      (a long run's pace; logged as each part ends, and in --json's intervals)
  --rate R            target sent messages/s over all producers (default 0: as fast as possible)
  --queue PREFIX      queue name prefix (default bench); a random suffix is added
  --long-poll         receives wait up to 20 s (WaitTimeSeconds=20)
  --max-backlog N     producers pause while N sent messages are not received yet (default 1000)
  --resident N        first fill a second queue of the same kind with N messages that nobody
                      receives until the run ends (a deep backlog beside the measured queue)
  --drain D           how long consumers may take to get the rest after the window (default 60s)
  --ceiling DSN       also measure PostgreSQL at DSN alone with producers+consumers connections
                      (one-row INSERT … RETURNING + DELETE transactions) and print the ratio
  --baseline DSN      also measure a pure-SQL queue (pgmq-shaped: send, read with SKIP LOCKED,
                      delete; three commits) at DSN with max(producers, consumers) workers,
                      batches of 10 with --batch, and print the ratio
  --sql-queue DSN     measure only the pure-SQL queue (as --baseline) with the machine's CPU and
                      the database's WAL and commits over its window, as a result of its own
  --pg-stats DSN      report the CPU of the PostgreSQL cluster under DSN (found by its data
                      directory), the WAL it wrote and the commits of DSN's database over the window
  --server-cpus LIST  pin the --spawn server to these CPUs (taskset -c LIST)
  --lifecycle-table RESULT.json...
                      print server CPU, PostgreSQL CPU, WAL and commits per lifecycle: medians
                      over the results of one label, and their ratios to the yardsticks
  --protocol P        json (AWS JSON 1.0, default) or query (the Query protocol: form POSTs, XML
                      answers, for servers that speak only Query)
  --storage STORE     also open STORE (the server's store URL; one whose backend sizes
                      storage: spanner://) in this process and report the bytes the
                      queue's rows and index entries hold at the window's end, per
                      resident message
  --label NAME        name of the run in reports
  --json              print the result as JSON on stdout (the text report goes to stderr)

Exit status: 0 when every check passed, 1 when one failed or a request
failed, 2 on bad usage. The queue the run creates is deleted at the end.
`

type benchFlags struct {
	cfg       bench.Config
	spawn     string
	serverBin string
	ceiling   string
	baseline  string
	sqlQueue  string
	cpus      string
	lifecycle bool
	storage   string
	asJSON    bool
	table     bool
}

func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f benchFlags
	fs := flag.NewFlagSet("sluice bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage) }
	c := &f.cfg
	fs.StringVar(&c.Endpoint, "endpoint", "", "SQS endpoint")
	fs.StringVar(&c.ReceiveEndpoint, "receive-endpoint", "", "SQS endpoint of the consumers")
	fs.StringVar(&f.spawn, "spawn", "", "store URL of a server to start")
	fs.StringVar(&f.serverBin, "server-bin", "", "sluice binary for --spawn")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "server process id")
	fs.IntVar(&c.Producers, "producers", 8, "producers")
	fs.IntVar(&c.Consumers, "consumers", 8, "consumers")
	fs.IntVar(&c.Groups, "groups", 64, "FIFO message groups")
	fs.IntVar(&c.Size, "size", 1024, "body bytes")
	fs.BoolVar(&c.FIFO, "fifo", false, "FIFO queue")
	fs.BoolVar(&c.Batch, "batch", false, "batches of 10")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "measured window")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "warm-up")
	fs.DurationVar(&c.Every, "every", 0, "report the window in parts this long")
	fs.Float64Var(&c.Rate, "rate", 0, "target messages/s")
	fs.StringVar(&c.QueuePrefix, "queue", "bench", "queue name prefix")
	fs.BoolVar(&c.LongPoll, "long-poll", false, "WaitTimeSeconds=20")
	fs.IntVar(&c.MaxBacklog, "max-backlog", 1000, "backlog bound")
	fs.IntVar(&c.Resident, "resident", 0, "messages kept in a second queue during the run")
	fs.DurationVar(&c.Drain, "drain", 60*time.Second, "drain deadline")
	fs.StringVar(&f.ceiling, "ceiling", "", "PostgreSQL DSN for the ceiling")
	fs.StringVar(&f.baseline, "baseline", "", "PostgreSQL DSN for the SQL queue baseline")
	fs.StringVar(&f.sqlQueue, "sql-queue", "", "PostgreSQL DSN: measure only the SQL queue baseline")
	fs.StringVar(&c.PGStatsDSN, "pg-stats", "", "PostgreSQL DSN whose CPU, WAL and commits to report")
	fs.StringVar(&f.cpus, "server-cpus", "", "taskset CPU list for the --spawn server")
	fs.BoolVar(&f.lifecycle, "lifecycle-table", false, "print the per-lifecycle table of JSON results")
	fs.StringVar(&c.Protocol, "protocol", "json", "wire protocol: json or query")
	fs.StringVar(&f.storage, "storage", "", "store URL to read stored bytes from")
	fs.StringVar(&c.Label, "label", "", "run name")
	fs.BoolVar(&f.asJSON, "json", false, "JSON on stdout")
	fs.BoolVar(&f.table, "table", false, "print a table of JSON results")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if f.table || f.lifecycle {
		return benchTable(fs.Args(), f.lifecycle, stdout, stderr)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if f.sqlQueue != "" {
		return sqlQueueCmd(ctx, &f, stdout, stderr)
	}
	if (c.Endpoint == "") == (f.spawn == "") {
		fmt.Fprintln(stderr, "sluice bench: give exactly one of --endpoint and --spawn")
		return 2
	}
	if c.Duration <= 0 || c.Producers < 1 || c.Consumers < 1 || c.Groups < 1 || c.Size < 1 {
		fmt.Fprintln(stderr, "sluice bench: --duration, --producers, --consumers, --groups and --size must be positive")
		return 2
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c.Log = stderr

	var srv *bench.Server
	if f.spawn != "" {
		bin := f.serverBin
		if bin == "" {
			exe, err := os.Executable()
			if err != nil {
				fmt.Fprintf(stderr, "sluice bench: cannot find this executable (use --server-bin): %v\n", err)
				return 1
			}
			bin = exe
		}
		var err error
		srv, err = bench.SpawnOn(ctx, f.cpus, bin, f.spawn, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "sluice bench: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "bench: started %s serve (pid %d) on %s, store %s\n", bin, srv.PID, srv.URL, srv.Store)
		c.Endpoint = srv.URL
		c.ServerPID = srv.PID
	}
	stopServer := func(res *bench.Result) {
		if srv == nil {
			return
		}
		code, err := srv.Stop()
		if err != nil {
			fmt.Fprintf(stderr, "sluice bench: stopping the server: %v\n", err)
		}
		if res != nil {
			if res.Server == nil {
				res.Server = &bench.ServerStats{PID: srv.PID}
			}
			st := srv.Stats()
			res.Server.Spawned, res.Server.Store = true, st.Store
			res.Server.LogLines, res.Server.LogSamples = st.LogLines, st.LogSamples
			res.Server.ExitCode = code
		}
		srv = nil
	}
	defer stopServer(nil)
	if f.storage != "" {
		closeStore, err := storedBytes(ctx, f.storage, c)
		if err != nil {
			fmt.Fprintf(stderr, "sluice bench: --storage: %v\n", err)
			return 1
		}
		defer closeStore()
	}

	res, err := bench.Run(ctx, *c)
	if err != nil {
		fmt.Fprintf(stderr, "sluice bench: %v\n", err)
		return 1
	}
	if f.spawn != "" {
		res.Store = bench.StoreKind(f.spawn)
	}
	stopServer(res)

	failed := !res.OK()
	if f.ceiling != "" && ctx.Err() == nil {
		cl, err := bench.RunCeiling(ctx, bench.CeilingConfig{
			DSN: f.ceiling, Conns: c.Producers + c.Consumers,
			Duration: c.Duration, Warmup: c.Warmup, Payload: 1024, Log: stderr,
		})
		if err != nil {
			fmt.Fprintf(stderr, "sluice bench: ceiling: %v\n", err)
			failed = true
		}
		if cl != nil {
			if cl.TxPerSec > 0 {
				cl.Ratio = res.LifecyclesPerSec / cl.TxPerSec
			}
			res.Ceiling = cl
		}
	}
	if f.baseline != "" && ctx.Err() == nil {
		// Each worker both sends and reads, so the busier side of the
		// sluice run sets how many.
		batch := 1
		if c.Batch {
			batch = 10
		}
		bl, err := bench.RunBaseline(ctx, bench.BaselineConfig{
			DSN: f.baseline, Workers: max(c.Producers, c.Consumers), Batch: batch,
			Duration: c.Duration, Warmup: c.Warmup, Payload: c.Size, Log: stderr,
		})
		if err != nil {
			fmt.Fprintf(stderr, "sluice bench: baseline: %v\n", err)
			failed = true
		}
		if bl != nil {
			if bl.MessagesPerSec > 0 {
				bl.Ratio = res.ReceivedPerSec / bl.MessagesPerSec
			}
			res.Baseline = bl
		}
	}

	if f.asJSON {
		bench.WriteText(stderr, res)
		if !writeResultJSON(stdout, stderr, res) {
			return 1
		}
	} else {
		bench.WriteText(stdout, res)
	}
	if failed {
		return 1
	}
	return 0
}

func benchTable(files []string, lifecycle bool, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, "sluice bench --table: name the JSON result files")
		return 2
	}
	var results []*bench.Result
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(stderr, "sluice bench: %v\n", err)
			return 1
		}
		var r bench.Result
		if err := json.Unmarshal(data, &r); err != nil {
			fmt.Fprintf(stderr, "sluice bench: %s: %v\n", name, err)
			return 1
		}
		results = append(results, &r)
	}
	if lifecycle {
		bench.WriteLifecycleTable(stdout, results)
		return 0
	}
	bench.WriteTable(stdout, results)
	return 0
}

// sqlQueueCmd measures the SQL queue baseline alone, with the machine's
// CPU and the database's WAL and commits over its window, as a result of
// its own (Result.Baseline) for the per-lifecycle table.
func sqlQueueCmd(ctx context.Context, f *benchFlags, stdout, stderr io.Writer) int {
	c := &f.cfg
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	batch := 1
	if c.Batch {
		batch = 10
	}
	bl, err := bench.RunBaseline(ctx, bench.BaselineConfig{
		DSN: f.sqlQueue, Workers: max(c.Producers, c.Consumers), Batch: batch,
		Duration: c.Duration, Warmup: c.Warmup, Payload: c.Size, Measure: true, Log: stderr,
	})
	if err != nil {
		fmt.Fprintf(stderr, "sluice bench: sql queue: %v\n", err)
		return 1
	}
	res := &bench.Result{Label: c.Label, Store: "sql-queue", FIFO: c.FIFO, Batch: c.Batch, Producers: c.Producers, Consumers: c.Consumers,
		Size: c.Size, WarmupSec: c.Warmup.Seconds(), WindowSec: c.Duration.Seconds(), Baseline: bl}
	if f.asJSON {
		if !writeResultJSON(stdout, stderr, res) {
			return 1
		}
	} else {
		bench.WriteLifecycleTable(stdout, []*bench.Result{res})
	}
	if bl.Errors > 0 {
		return 1
	}
	return 0
}

// writeResultJSON prints res as indented JSON; false (said on stderr) when
// it could not.
func writeResultJSON(stdout, stderr io.Writer, res *bench.Result) bool {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(stderr, "sluice bench: %v\n", err)
		return false
	}
	return true
}

// storedBytes opens the store at url and sets c.StoredBytes to read what a
// queue holds in it (stores.StorageSizer); the returned func closes it.
func storedBytes(ctx context.Context, url string, c *bench.Config) (func(), error) {
	st, err := registry.Open(ctx, url, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	sizer, ok := st.(stores.StorageSizer)
	if !ok {
		_ = st.Close()
		return nil, fmt.Errorf("the %T store does not size what it stores", st)
	}
	c.StoredBytes = func(ctx context.Context, queue string) (int64, error) {
		q, err := st.QueueGet(ctx, &stores.QueueGetParams{Name: queue})
		if err != nil {
			return 0, err
		}
		return sizer.QueueStoredBytes(ctx, q.Name, q.ID)
	}
	return func() { _ = st.Close() }, nil
}
