package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Mode describes a run's mode in words: "FIFO batched long-poll".
func (r *Result) Mode() string {
	parts := []string{"Standard"}
	if r.FIFO {
		parts[0] = "FIFO"
	}
	switch {
	case r.Batch && r.BatchFill > 1 && r.BatchFill != batchSize:
		parts = append(parts, fmt.Sprintf("batches of %d", r.BatchFill))
	case r.Batch:
		parts = append(parts, "batched")
	default:
		parts = append(parts, "unbatched")
	}
	if r.LongPoll {
		parts = append(parts, "long-poll")
	} else if r.LongPollers > 0 {
		parts = append(parts, fmt.Sprintf("long-poll (%d of %d consumers)", r.LongPollers, r.Consumers))
	}
	return strings.Join(parts, " ")
}

func rateText(r float64) string {
	if r <= 0 {
		return "max"
	}
	return fmt.Sprintf("%.0f/s", r)
}

func secs(s float64) string { return time.Duration(s * float64(time.Second)).String() }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// WriteText writes a human-readable report of one run.
func WriteText(w io.Writer, r *Result) {
	title := r.Mode()
	if r.Label != "" {
		title = r.Label + ": " + title
	}
	fmt.Fprintf(w, "%s, %d producers / %d consumers", title, r.Producers, r.Consumers)
	if r.FIFO {
		fmt.Fprintf(w, ", %d groups", r.Groups)
	}
	fmt.Fprintf(w, ", %d B, %s measured after %s warm-up, rate %s\n", r.Size, secs(r.WindowSec), secs(r.WarmupSec), rateText(r.TargetRate))
	fmt.Fprintf(w, "  endpoint %s, queue %s", r.Endpoint, r.Queue)
	if r.Store != "" {
		fmt.Fprintf(w, ", store %s", r.Store)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  throughput  %.1f lifecycles/s (sent %.1f/s, received %.1f/s)\n", r.LifecyclesPerSec, r.SentPerSec, r.ReceivedPerSec)
	if len(r.Intervals) > 0 {
		rates := make([]float64, len(r.Intervals))
		for i, iv := range r.Intervals {
			rates[i] = iv.LifecyclesPerSec
		}
		slices.Sort(rates)
		fmt.Fprintf(w, "  pace        %d parts: slowest %.0f, median %.0f, fastest %.0f lifecycles/s\n",
			len(rates), rates[0], median(rates), rates[len(rates)-1])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  latency (ms)\tcount\tp50\tp99\tmax\t")
	row := func(name string, s Summary) {
		fmt.Fprintf(tw, "  %s\t%d\t%.2f\t%.2f\t%.2f\t\n", name, s.Count, s.P50Ms, s.P99Ms, s.MaxMs)
	}
	row(r.SendAction, r.Send)
	row("ReceiveMessage", r.Receive)
	row(r.DeleteAction, r.Delete)
	row("pickup (send ack → receive returns)", r.Pickup)
	if r.PickupReceivable != nil {
		row("pickup from receivable (group freed)", *r.PickupReceivable)
	}
	row("end to end (send start → receive returns)", r.EndToEnd)
	tw.Flush()
	fmt.Fprintf(w, "  requests    %s; empty receives %d\n", requestsText(r.Requests), r.EmptyReceives)
	if r.Billed != nil {
		fmt.Fprint(w, billedText(r.Billed, r.Lifecycles))
	}
	if s := r.Stored; s != nil {
		if s.Error != "" {
			fmt.Fprintf(w, "  stored      (could not read: %s)\n", s.Error)
		} else {
			fmt.Fprintf(w, "  stored      %d bytes at the window's end, %d messages resident: %.0f bytes per message (the empty queue %d)\n",
				s.Bytes, s.Messages, s.PerMessage, s.EmptyBytes)
		}
	}
	if s := r.Resident; s != nil {
		fmt.Fprintf(w, "  resident    %d messages in %s, sent before the warm-up in %.1f s (%.0f/s)\n", s.Messages, s.Queue, s.FillSec, s.SentPerSec)
	}
	fmt.Fprintf(w, "  errors      %d", r.Errors)
	for _, a := range slices.Sorted(maps.Keys(r.ErrorsByAction)) {
		fmt.Fprintf(w, " [%s %d]", a, r.ErrorsByAction[a])
	}
	fmt.Fprintln(w)
	for _, s := range r.ErrorSamples {
		fmt.Fprintf(w, "    %s\n", s)
	}
	c := r.Checks
	fmt.Fprintf(w, "  checks      sent %d, received %d, missing %d, duplicates %d, received before ack %d",
		c.Sent, c.Received, c.Missing, c.Duplicates, c.ReceivedBeforeAck)
	if c.FailedButReceived > 0 || c.Foreign > 0 {
		fmt.Fprintf(w, ", failed sends received %d, foreign %d", c.FailedButReceived, c.Foreign)
	}
	if r.FIFO {
		fmt.Fprintf(w, ", FIFO order violations %d", c.OrderViolations)
	}
	if !c.Drained {
		fmt.Fprint(w, " (the drain deadline passed before everything was received)")
	}
	verdict := "OK"
	if !r.OK() {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, " — %s\n", verdict)
	for _, e := range c.OrderExamples {
		fmt.Fprintf(w, "    %s\n", e)
	}
	if s := r.Server; s != nil {
		fmt.Fprintf(w, "  server      pid %d, peak RSS (VmHWM) %s", s.PID, mib(s.PeakRSSBytes))
		if c := r.Counters; c != nil {
			if b, o, ok := c.PerRequest(); ok {
				fmt.Fprintf(w, ", heap allocated per request %.0f bytes in %.1f objects", b, o)
			}
		}
		if s.Spawned {
			fmt.Fprintf(w, ", %d stderr lines at warn or above", s.LogLines)
			if s.ExitCode != 0 {
				fmt.Fprintf(w, ", exit status %d", s.ExitCode)
			}
		}
		fmt.Fprintln(w)
		for _, l := range s.LogSamples {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	if p := r.CPU; p != nil {
		fmt.Fprintf(w, "  cpu         machine %.0f%% of %d CPUs; bench %.2f cores", p.MachineBusyPct, p.CPUs, p.BenchCores)
		if r.Server != nil {
			fmt.Fprintf(w, ", server %.2f cores", p.ServerCores)
		}
		fmt.Fprintf(w, ", other %.2f cores", p.OtherCores)
		if len(p.Others) > 0 {
			var parts []string
			for _, o := range p.Others {
				parts = append(parts, fmt.Sprintf("%s %.2f", o.Name, o.Cores))
			}
			fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
		}
		fmt.Fprintln(w)
	}
	if cl := r.Ceiling; cl != nil {
		fmt.Fprintf(w, "  ceiling     PostgreSQL %s, %d connections: %.1f tx/s (one INSERT … RETURNING + DELETE per tx; p50 %.2f ms, p99 %.2f ms, %d errors)\n",
			cl.Server, cl.Conns, cl.TxPerSec, cl.Tx.P50Ms, cl.Tx.P99Ms, cl.Errors)
		fmt.Fprintf(w, "              sluice lifecycles/s ÷ ceiling tx/s = %.3f\n", cl.Ratio)
	}
	if bl := r.Baseline; bl != nil {
		fmt.Fprintf(w, "  baseline    PostgreSQL %s, %d workers, %s: %.1f msgs/s (pgmq-shaped SQL queue: send, read with SKIP LOCKED, delete, three commits per lifecycle; p50 %.2f ms, p99 %.2f ms, %d errors)\n",
			bl.Server, bl.Workers, bl.mode(), bl.MessagesPerSec, bl.Lifecycle.P50Ms, bl.Lifecycle.P99Ms, bl.Errors)
		fmt.Fprintf(w, "              sluice received/s ÷ SQL queue msgs/s = %.3f\n", bl.Ratio)
	}
	if r.QueueKept != "" {
		fmt.Fprintf(w, "  warning     the queue was not deleted: %s\n", r.QueueKept)
	}
	if r.Resident != nil && r.Resident.Kept != "" {
		fmt.Fprintf(w, "  warning     the resident queue was not deleted: %s\n", r.Resident.Kept)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "  interrupted")
	}
}

func requestsText(m map[string]int64) string {
	var parts []string
	for _, a := range []string{"SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch"} {
		if n, ok := m[a]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", a, n))
		}
	}
	return strings.Join(parts, ", ")
}

// mode says whether the baseline batched: "unbatched", "batches of 10".
func (b *BaselineResult) mode() string {
	if b.Batch > 1 {
		return fmt.Sprintf("batches of %d", b.Batch)
	}
	return "unbatched"
}

// WriteTable writes one row per result. The ceiling, when one of the
// results measured it, gives the "÷ ceiling" column of every PostgreSQL
// row; the baselines give the "÷ SQL queue" column, each to the rows of its
// batch mode, so that batched runs are not compared with unbatched SQL.
func WriteTable(w io.Writer, results []*Result) {
	var ceiling *CeilingResult
	var baselines [2]*BaselineResult // unbatched, batched
	for _, r := range results {
		if r.Ceiling != nil {
			ceiling = r.Ceiling
		}
		if b := r.Baseline; b != nil {
			baselines[batchIndex(b.Batch > 1)] = b
		}
	}
	lat := func(s Summary) string {
		if s.Count == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f/%.1f/%.0f", s.P50Ms, s.P99Ms, s.MaxMs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tstore\tmode\trate\tmsgs/s\tsend ms p50/p99/max\trecv ms p50/p99/max\tdelete ms p50/p99/max\tpickup ms p50/p99\te2e ms p50/p99\terrors\tmissing\torder viol.\tpeak RSS\tcpu bench/server/other\t÷ ceiling\t÷ SQL queue\t")
	for _, r := range results {
		pickup := "-"
		if r.Pickup.Count > 0 {
			pickup = fmt.Sprintf("%.1f/%.1f", r.Pickup.P50Ms, r.Pickup.P99Ms)
		}
		e2e := "-"
		if r.EndToEnd.Count > 0 {
			e2e = fmt.Sprintf("%.1f/%.1f", r.EndToEnd.P50Ms, r.EndToEnd.P99Ms)
		}
		order := "-"
		if r.FIFO {
			order = fmt.Sprint(r.Checks.OrderViolations)
		}
		rss := "-"
		if r.Server != nil && r.Server.PeakRSSBytes > 0 {
			rss = mib(r.Server.PeakRSSBytes)
		}
		cpu := "-"
		if r.CPU != nil {
			cpu = fmt.Sprintf("%.2f/%.2f/%.2f", r.CPU.BenchCores, r.CPU.ServerCores, r.CPU.OtherCores)
		}
		ratio := "-"
		if ceiling != nil && ceiling.TxPerSec > 0 && r.Store == "postgres" {
			ratio = fmt.Sprintf("%.3f", r.LifecyclesPerSec/ceiling.TxPerSec)
		}
		sqlRatio := "-"
		// Rate-limited runs measure latency, not how far the store goes.
		if b := baselines[batchIndex(r.Batch)]; b != nil && b.MessagesPerSec > 0 && r.Store == "postgres" && r.TargetRate == 0 {
			sqlRatio = fmt.Sprintf("%.3f", r.LifecyclesPerSec/b.MessagesPerSec)
		}
		label := r.Label
		if label == "" {
			label = r.Queue
		}
		if !r.OK() {
			label += " (FAILED)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n",
			label, orDash(r.Store), r.Mode(), rateText(r.TargetRate), r.LifecyclesPerSec,
			lat(r.Send), lat(r.Receive), lat(r.Delete), pickup, e2e,
			r.Errors, r.Checks.Missing, order, rss, cpu, ratio, sqlRatio)
	}
	tw.Flush()
	if ceiling != nil || baselines != [2]*BaselineResult{} {
		fmt.Fprintln(w)
	}
	if ceiling != nil {
		fmt.Fprintf(w, "ceiling: PostgreSQL %s, %d connections, one-row INSERT … RETURNING + DELETE per transaction: %.1f tx/s (p50 %.2f ms, p99 %.2f ms, %d errors)\n",
			ceiling.Server, ceiling.Conns, ceiling.TxPerSec, ceiling.Tx.P50Ms, ceiling.Tx.P99Ms, ceiling.Errors)
	}
	for _, b := range baselines {
		if b != nil {
			fmt.Fprintf(w, "SQL queue, %s: PostgreSQL %s, %d workers, pgmq-shaped send + read (FOR UPDATE SKIP LOCKED) + delete, three commits per lifecycle: %.1f msgs/s (lifecycle p50 %.2f ms, p99 %.2f ms, %d errors)\n",
				b.mode(), b.Server, b.Workers, b.MessagesPerSec, b.Lifecycle.P50Ms, b.Lifecycle.P99Ms, b.Errors)
		}
	}
	for _, r := range results {
		for _, s := range r.ErrorSamples {
			fmt.Fprintf(w, "%s: error: %s\n", r.Label, s)
		}
		for _, e := range r.Checks.OrderExamples {
			fmt.Fprintf(w, "%s: order: %s\n", r.Label, e)
		}
		if r.Server != nil {
			for _, l := range r.Server.LogSamples {
				fmt.Fprintf(w, "%s: server log: %s\n", r.Label, l)
			}
		}
	}
}

func batchIndex(batched bool) int {
	if batched {
		return 1
	}
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
