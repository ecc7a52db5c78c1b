package systemtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
)

// size picks the full or the -short value.
func size(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

func queueAttrs(fifo bool, visibility time.Duration) map[string]string {
	a := map[string]string{"VisibilityTimeout": fmt.Sprint(int(visibility / time.Second))}
	if fifo {
		a["FifoQueue"] = "true"
	}
	return a
}

// TestThreeInstancesActAsOne runs three instances on one store (once on
// each of multiInstanceStores, and on PostgreSQL with Pub/Sub wake-ups) under a
// mixed load: producers spread over the instances send to a FIFO queue (16
// groups; some sends repeated with the same deduplication id through
// another instance, some sent through two instances at once) and a
// Standard queue; consumers on every instance
// receive (some long polling) and delete, often through another instance
// than the one that received. Visibility timeouts are long, so FIFO must be
// exactly once. Meanwhile wake-up probes check that a long poll on one
// instance is answered by a send through another: woken at once (median
// under notifyFast) where the store has a wake-up transport across
// processes (PostgreSQL's LISTEN/NOTIFY, Firestore's snapshot listeners),
// by its periodic check otherwise.
func TestThreeInstancesActAsOne(t *testing.T) {
	onStores(t, testThreeInstancesActAsOne, wakeVariants...)
}

func testThreeInstancesActAsOne(t *testing.T, kind storeKind) {
	c := kind.newCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const vis = 60 * time.Second
	c.createQueue(ctx, "orders.fifo", queueAttrs(true, vis))
	c.createQueue(ctx, "events", queueAttrs(false, vis))
	c.createQueue(ctx, "probe", nil)

	var probes []probeResult
	spec := loadSpec{
		fifoQueue: "orders.fifo", stdQueue: "events",
		groups: 16, perGroup: size(40, 15), stdMessages: size(1200, 400),
		fifoProducers: 4, stdProducers: 3,
		fifoConsumers: 2, stdConsumers: 2,
		visibility: vis, dupEvery: 8, strict: true,
		budget: 75 * time.Second,
		// Every ordered pair of instances: poll on one, send through another.
		probe: func(ctx context.Context) { probes = allPairs(ctx, c, "probe") },
	}
	if kind.moderate {
		spec = spec.moderated()
	}
	runLoad(t, c, spec)
	checkProbes(t, c, "during the load", probes, len(c.insts)*(len(c.insts)-1),
		func() []probeResult { return allPairs(ctx, c, "probe") })
	for _, in := range c.insts {
		t.Logf("%s log: %s", in.name, in.logSummary())
	}
}

// checkProbes fails the test when a probe's long poll was not answered
// with its message, or, where the cluster has a wake-up transport across
// instances (c.crossWake), when the median wake-up latency shows that polls
// are woken by their periodic re-check rather than by it. On a busy
// machine the latency can be high for other reasons: then again, at most
// twice, runs another round (retry) and judges the latency by that one.
func checkProbes(t *testing.T, c *cluster, when string, probes []probeResult, want int, again func() []probeResult) {
	t.Helper()
	judge := func(when string, probes []probeResult) (failed int, med time.Duration) {
		var s []string
		for _, p := range probes {
			s = append(s, p.String())
			if p.err != nil {
				failed++
			}
		}
		med = medianLatency(probes)
		t.Logf("wake-up probes %s (long poll <- send through another instance, latency from the send's start): %s; median %s",
			when, strings.Join(s, ", "), med.Round(time.Millisecond))
		if failed > 0 {
			t.Errorf("%d of %d long polls %s were not answered with the message sent through another instance", failed, len(probes), when)
		}
		return failed, med
	}
	if len(probes) < want {
		t.Errorf("only %d of %d wake-up probes ran %s", len(probes), want, when)
	}
	failed, med := judge(when, probes)
	if !c.crossWake {
		// Only the periodic check can answer them: it did, if none failed.
		t.Logf("no wake-up transport across instances on this store: long polls %s were answered by their periodic check of the store", when)
		return
	}
	for round := 1; round <= 2 && failed < len(probes) && med >= notifyFast && again != nil; round++ {
		t.Logf("median wake-up latency %s is not below %s: another round", med.Round(time.Millisecond), notifyFast)
		when = fmt.Sprintf("%s, round %d", when, round+1)
		probes = again()
		failed, med = judge(when, probes)
	}
	if failed < len(probes) && med >= notifyFast {
		t.Errorf("long polls %s woke %s (median) after a send through another instance: that is the periodic re-check, not a wake-up across instances (want < %s)",
			when, med.Round(time.Millisecond), notifyFast)
	}
}

// allPairs probes every ordered pair of live instances once.
func allPairs(ctx context.Context, c *cluster, queue string) []probeResult {
	var out []probeResult
	for a := range c.insts {
		for b := range c.insts {
			if a == b || ctx.Err() != nil || !c.insts[a].alive() || !c.insts[b].alive() {
				continue
			}
			out = append(out, c.probe(ctx, queue, a, b))
		}
	}
	return out
}

// TestKillServingInstance kills one of three instances (on one store, once
// on each of multiInstanceStores) with SIGKILL in the
// middle of a mixed load. Its in-flight requests fail at the clients, which
// go on through the other instances; its consumers die with it, and the
// messages they held (received, not deleted) must come back after the 2 s
// visibility timeout. No acknowledged send may be lost, FIFO
// order must hold in the sequence of deliveries, and the survivors must
// keep serving, and answer each other's long polls.
func TestKillServingInstance(t *testing.T) { onStores(t, testKillServingInstance, wakeVariants...) }

func testKillServingInstance(t *testing.T, kind storeKind) {
	c := kind.newCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const vis = 2 * time.Second
	c.createQueue(ctx, "orders.fifo", queueAttrs(true, vis))
	c.createQueue(ctx, "events", queueAttrs(false, vis))
	c.createQueue(ctx, "probe", nil)

	victim := c.insts[1]
	var killedAt time.Time
	spec := loadSpec{
		fifoQueue: "orders.fifo", stdQueue: "events",
		groups: 16, perGroup: size(30, 15), stdMessages: size(1000, 400),
		fifoProducers: 4, stdProducers: 3,
		fifoConsumers: 2, stdConsumers: 2,
		visibility: vis, dupEvery: 9,
		budget: 75 * time.Second,
		// The victim's consumers die with it, dropping what they hold.
		work: 100 * time.Millisecond, consumersDieWithHome: true,
		eventAt: 0.35,
		event: func() {
			victim.kill(t)
			killedAt = time.Now()
			t.Logf("killed %s (pid %d) with SIGKILL", victim.name, victim.cmd.Process.Pid)
		},
	}
	if kind.moderate {
		spec = spec.moderated()
		// The locks of a transaction the killed instance left open on
		// the emulator were seen to stall the FIFO queue for about a
		// minute before the survivors got on, and the Standard queue
		// with nothing else to do meanwhile: more than the usual stall
		// limit.
		spec.budget = 150 * time.Second
		spec.stallLimit = 75 * time.Second
	}
	_, stats := runLoad(t, c, spec)

	if killedAt.IsZero() {
		t.Fatal("the instance was never killed")
	}
	if ws, ok := victim.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("%s: want death by SIGKILL, got %v", victim.name, victim.cmd.ProcessState)
	}
	stats.mu.Lock()
	after := stats.after
	stats.mu.Unlock()
	for _, in := range c.insts {
		if in == victim {
			continue
		}
		if after[in.name] == 0 {
			t.Errorf("survivor %s served no request after the kill", in.name)
		}
		if !in.alive() {
			t.Errorf("survivor %s exited: %v", in.name, in.waitErr)
		}
	}
	// The survivors still wake (or at least answer) each other's long polls.
	again := func() []probeResult { return append(allPairs(ctx, c, "probe"), allPairs(ctx, c, "probe")...) }
	checkProbes(t, c, "after the kill, between the survivors", again(), 4, again)
	t.Logf("requests that failed at the clients (after the SDK's own retries): %d", stats.failures())
	for _, in := range c.insts {
		t.Logf("%s log: %s", in.name, in.logSummary())
	}
}

// TestPostgresRestart restarts PostgreSQL in the middle of a mixed load on
// two instances, cleanly (pg_ctl restart -m fast) and as after a crash
// (-m immediate: the start runs crash recovery, which empties the unlogged
// fifo_groups, rebuilt from the messages by the first operation that needs
// it), through infra/scripts/postgres.sh restart and crash. Requests during
// the outage may fail; afterwards the same processes must serve again
// without a restart of their own (the pool reconnects) and wake each
// other's long polls (the LISTEN connection is re-established). No
// acknowledged send may be lost and FIFO order must hold. The test runs
// its own PostgreSQL cluster, so the restart disturbs no other test.
func TestPostgresRestart(t *testing.T) {
	for _, stop := range []struct{ script, how string }{
		{"restart", "pg_ctl restart -m fast"},
		{"crash", "pg_ctl restart -m immediate"},
	} {
		t.Run(stop.script, func(t *testing.T) { testPostgresRestart(t, stop.script, stop.how) })
	}
}

func testPostgresRestart(t *testing.T, script, how string) {
	requirePostgres(t)
	pgURL, pgDir := privatePostgres(t)
	db := newDatabase(t, pgURL)
	c := newCluster(t, db, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const vis = 2 * time.Second
	c.createQueue(ctx, "orders.fifo", queueAttrs(true, vis))
	c.createQueue(ctx, "events", queueAttrs(false, vis))
	c.createQueue(ctx, "probe", nil)
	pids := []int{c.insts[0].cmd.Process.Pid, c.insts[1].cmd.Process.Pid}

	var restartTook time.Duration
	recovered := make([]time.Duration, len(c.insts))
	var wakeProbes []probeResult
	fastAt := map[string]time.Duration{}
	spec := loadSpec{
		fifoQueue: "orders.fifo", stdQueue: "events",
		groups: 16, perGroup: size(30, 15), stdMessages: size(1000, 400),
		fifoProducers: 4, stdProducers: 3,
		fifoConsumers: 2, stdConsumers: 2,
		visibility: vis, dupEvery: 9,
		budget:  90 * time.Second,
		eventAt: 0.35,
		event: func() {
			rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer rcancel()
			start := time.Now()
			if _, err := runPGScript(rctx, script, pgDir); err != nil {
				t.Errorf("restarting PostgreSQL: %v", err)
				return
			}
			restartTook = time.Since(start)
			t.Logf("PostgreSQL restarted (%s) in %s", how, restartTook.Round(time.Millisecond))
			// How soon does each instance answer a request that needs the
			// database again?
			var wg sync.WaitGroup
			for i := range c.insts {
				wg.Go(func() {
					for time.Since(start) < time.Minute {
						_, err := c.clients[i].GetQueueAttributes(rctx, &sqs.GetQueueAttributesInput{
							QueueUrl: aws.String(c.url("events", i)), AttributeNames: []types.QueueAttributeName{"All"}})
						if err == nil {
							recovered[i] = time.Since(start)
							return
						}
						time.Sleep(50 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			for i, in := range c.insts {
				if recovered[i] == 0 {
					t.Errorf("%s did not answer GetQueueAttributes within a minute of the restart", in.name)
				} else {
					t.Logf("%s answers again %s after the restart began", in.name, recovered[i].Round(time.Millisecond))
				}
			}
			// Long polls started now, woken by sends through the other
			// instance: every one must be answered with its message; soon
			// each instance must be woken through NOTIFY again.
			for time.Since(start) < 30*time.Second && len(fastAt) < len(c.insts) {
				for _, pair := range [][2]int{{0, 1}, {1, 0}} {
					p := c.probe(rctx, "probe", pair[0], pair[1])
					wakeProbes = append(wakeProbes, p)
					if _, ok := fastAt[p.poller]; !ok && p.err == nil && p.latency < notifyFast {
						fastAt[p.poller] = time.Since(start)
					}
				}
			}
		},
	}
	_, stats := runLoad(t, c, spec)
	t.Logf("requests that failed at the clients (after the SDK's own retries) around the restart: %d", stats.failures())

	for i, in := range c.insts {
		if !in.alive() || in.cmd.Process.Pid != pids[i] {
			t.Errorf("%s is not the same running process after the restart: %v", in.name, in.waitErr)
		}
	}
	// Crash recovery empties fifo_groups, and with FIFO messages stored an
	// instance must have rebuilt it; a clean restart keeps it.
	rebuilds := 0
	for _, in := range c.insts {
		b, err := os.ReadFile(in.logPath)
		if err != nil {
			t.Fatal(err)
		}
		rebuilds += strings.Count(string(b), "rebuilt it from the messages")
	}
	t.Logf("fifo_groups rebuilds logged by the instances: %d", rebuilds)
	if want := script == "crash"; (rebuilds > 0) != want {
		t.Errorf("the instances logged %d rebuilds of fifo_groups; want some: %v", rebuilds, want)
	}
	// Right after recovery (while the load went on), long polls on each
	// instance had to be woken through NOTIFY by sends through the other
	// one again: the listener reconnects with a backoff (up to 5 s), so a
	// few rounds are allowed for it.
	var s []string
	failed := 0
	for _, p := range wakeProbes {
		s = append(s, p.String())
		if p.err != nil {
			failed++
		}
	}
	t.Logf("wake-up probes after the restart, during the load: %s", strings.Join(s, ", "))
	if failed > 0 {
		t.Errorf("%d long polls after the restart were not answered with the message sent through the other instance", failed)
	}
	for _, in := range c.insts {
		if d, ok := fastAt[in.name]; ok {
			t.Logf("%s: long polls woken through NOTIFY again %s after the restart began", in.name, d.Round(time.Millisecond))
		} else {
			t.Errorf("%s: no long poll within 30s of the restart woke within %s of a send through the other instance: its LISTEN connection seems not re-established",
				in.name, notifyFast)
		}
	}
	// And at the end, once more.
	again := func() []probeResult { return append(allPairs(ctx, c, "probe"), allPairs(ctx, c, "probe")...) }
	checkProbes(t, c, "after the load", again(), 4, again)
	for _, in := range c.insts {
		t.Logf("%s log: %s", in.name, in.logSummary())
	}
}

// TestBadInputLeavesNoPartialState sends requests that must be rejected as
// a whole and checks, through the HTTP API of another instance, that they
// left nothing behind: no message, no queue.
func TestBadInputLeavesNoPartialState(t *testing.T) {
	admin := requirePostgres(t)
	db := newDatabase(t, admin)
	c := newCluster(t, db, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.createQueue(ctx, "plain", nil)
	c.createQueue(ctx, "ordered.fifo", map[string]string{"FifoQueue": "true"})
	a, b := c.clients[0], c.clients[1]
	plain, fifo := c.url("plain", 0), c.url("ordered.fifo", 0)

	// empty logs the rejection and checks that the queue is still empty,
	// asked of the other instance.
	empty := func(what, queue string, rejection error) {
		t.Helper()
		if rejection != nil {
			t.Logf("%s: rejected with %s (%v)", what, apiCode(rejection), rejection)
		}
		n, err := c.counts(ctx, queue)
		if err != nil {
			t.Fatalf("%s: counts: %v", what, err)
		}
		if n != [3]int{} {
			t.Errorf("%s left messages in %s: visible %d, in flight %d, delayed %d", what, queue, n[0], n[1], n[2])
		}
		out, err := b.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(c.url(queue, 1)), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatalf("%s: receive: %v", what, err)
		}
		if len(out.Messages) > 0 {
			t.Errorf("%s left %d receivable messages in %s, first %q", what, len(out.Messages), queue, aws.ToString(out.Messages[0].Body))
		}
	}
	entries := func(n int, fifo bool) []types.SendMessageBatchRequestEntry {
		var es []types.SendMessageBatchRequestEntry
		for i := range n {
			e := types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("e%d", i)), MessageBody: aws.String(fmt.Sprintf("body %d", i))}
			if fifo {
				e.MessageGroupId = aws.String("g")
				e.MessageDeduplicationId = aws.String(fmt.Sprintf("d%d", i))
			}
			es = append(es, e)
		}
		return es
	}

	// 11 entries: TooManyEntriesInBatchRequest, nothing sent.
	{
		_, err := a.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(plain), Entries: entries(11, false)})
		var te *types.TooManyEntriesInBatchRequest
		if !errors.As(err, &te) {
			t.Errorf("SendMessageBatch with 11 entries: want TooManyEntriesInBatchRequest, got %v", err)
		}
		empty("SendMessageBatch with 11 entries", "plain", err)
		_, err = a.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(fifo), Entries: entries(11, true)})
		if !errors.As(err, &te) {
			t.Errorf("FIFO SendMessageBatch with 11 entries: want TooManyEntriesInBatchRequest, got %v", err)
		}
		empty("FIFO SendMessageBatch with 11 entries", "ordered.fifo", err)
	}
	// A FIFO batch whose last entry lacks MessageGroupId: the whole request
	// is rejected, the valid entries before it are not sent.
	{
		es := entries(5, true)
		es[4].MessageGroupId = nil
		_, err := a.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(fifo), Entries: es})
		if code := apiCode(err); code != "MissingParameter" && code != "InvalidParameterValue" {
			t.Errorf("FIFO SendMessageBatch with an entry without MessageGroupId: want a request-level MissingParameter or InvalidParameterValue, got %v", err)
		}
		empty("FIFO SendMessageBatch with an entry without MessageGroupId", "ordered.fifo", err)
		// The deduplication ids of the rejected entries were not used up:
		// the same entries, fixed, are all accepted and delivered.
		es[4].MessageGroupId = aws.String("g")
		out, err := b.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(c.url("ordered.fifo", 1)), Entries: es})
		if err != nil || len(out.Successful) != 5 {
			t.Fatalf("the fixed FIFO batch: %v %+v", err, out)
		}
		got := 0
		for range 5 {
			r, err := a.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(fifo), MaxNumberOfMessages: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range r.Messages {
				if want := fmt.Sprintf("body %d", got); aws.ToString(m.Body) != want {
					t.Errorf("fixed FIFO batch: got %q, want %q (were rejected entries deduplicated against?)", aws.ToString(m.Body), want)
				}
				got++
				if _, err := a.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(fifo), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
			if got == 5 {
				break
			}
		}
		if got != 5 {
			t.Errorf("the fixed FIFO batch: received %d of 5 messages", got)
		}
		empty("the fixed FIFO batch, received and deleted", "ordered.fifo", nil)
	}
	// A FIFO batch with an entry without a deduplication id (and no
	// content-based deduplication): rejected as a whole.
	{
		es := entries(3, true)
		es[1].MessageDeduplicationId = nil
		_, err := a.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(fifo), Entries: es})
		if code := apiCode(err); code != "InvalidParameterValue" {
			t.Errorf("FIFO SendMessageBatch with an entry without MessageDeduplicationId: want InvalidParameterValue, got %v", err)
		}
		empty("FIFO SendMessageBatch with an entry without MessageDeduplicationId", "ordered.fifo", err)
	}
	// Repeated entry ids, a bad entry id, a batch over 1 MiB: rejected as a whole.
	{
		es := entries(3, false)
		es[2].Id = aws.String("e0")
		_, err := a.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(plain), Entries: es})
		var de *types.BatchEntryIdsNotDistinct
		if !errors.As(err, &de) {
			t.Errorf("SendMessageBatch with repeated entry ids: want BatchEntryIdsNotDistinct, got %v", err)
		}
		empty("SendMessageBatch with repeated entry ids", "plain", err)

		es = entries(3, false)
		es[2].Id = aws.String("bad id!")
		_, err = a.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(plain), Entries: es})
		var ie *types.InvalidBatchEntryId
		if !errors.As(err, &ie) {
			t.Errorf("SendMessageBatch with a bad entry id: want InvalidBatchEntryId, got %v", err)
		}
		empty("SendMessageBatch with a bad entry id", "plain", err)

		es = entries(10, false)
		big := strings.Repeat("x", 110*1024)
		for i := range es {
			es[i].MessageBody = aws.String(big)
		}
		_, err = a.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(plain), Entries: es})
		var le *types.BatchRequestTooLong
		if !errors.As(err, &le) {
			t.Errorf("SendMessageBatch of 10 × 110 KiB: want BatchRequestTooLong, got %v", err)
		}
		empty("SendMessageBatch of 10 × 110 KiB", "plain", err)
	}

	// CreateQueue rejected for a bad attribute leaves no queue: it is not
	// listed, GetQueueUrl does not find it (on either instance), and the
	// name can then be created with other attributes (no QueueNameExists
	// from a half-made queue, no QueueDeletedRecently either).
	badCreates := []struct {
		name  string
		attrs map[string]string
		code  string
	}{
		{"rejected-visibility", map[string]string{"VisibilityTimeout": "50000"}, "InvalidAttributeValue"},
		{"rejected-unknown", map[string]string{"DelaySeconds": "5", "Bogus": "1"}, "InvalidAttributeName"},
		{"rejected-retention", map[string]string{"MessageRetentionPeriod": "30"}, "InvalidAttributeValue"},
		{"rejected-redrive", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"not-an-arn","maxReceiveCount":"x"}`}, "InvalidParameterValue|InvalidAttributeValue"},
		{"rejected-fifo.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "maybe"}, "InvalidAttributeValue"},
		{"rejected-notfifo", map[string]string{"FifoQueue": "true"}, "InvalidParameterValue|InvalidAttributeValue|InvalidAttributeName"},
	}
	for _, bc := range badCreates {
		_, err := a.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(bc.name), Attributes: bc.attrs})
		if err == nil {
			t.Errorf("CreateQueue %s %v: accepted, want %s", bc.name, bc.attrs, bc.code)
			continue
		}
		if code := apiCode(err); !strings.Contains("|"+bc.code+"|", "|"+code+"|") {
			t.Errorf("CreateQueue %s %v: want %s, got %v", bc.name, bc.attrs, bc.code, err)
		} else {
			t.Logf("CreateQueue %s %v: rejected with %s", bc.name, bc.attrs, code)
		}
		for i, cl := range c.clients {
			_, err := cl.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(bc.name)})
			var qe *types.QueueDoesNotExist
			if !errors.As(err, &qe) {
				t.Errorf("after the rejected CreateQueue %s: GetQueueUrl through %s: want QueueDoesNotExist, got %v", bc.name, c.insts[i].name, err)
			}
		}
		list, err := b.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(bc.name)})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.QueueUrls) > 0 {
			t.Errorf("after the rejected CreateQueue %s: ListQueues lists %v", bc.name, list.QueueUrls)
		}
	}
	okAttrs := map[string]string{"VisibilityTimeout": "45", "DelaySeconds": "0"}
	for _, name := range []string{"rejected-visibility", "rejected-unknown"} {
		if _, err := b.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: okAttrs}); err != nil {
			t.Errorf("CreateQueue %s with valid attributes after a rejected one: %v", name, err)
		}
	}
	list, err := a.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list.QueueUrls {
		names = append(names, u[strings.LastIndex(u, "/")+1:])
	}
	t.Logf("queues at the end: %v", names)
	if want := []string{"ordered.fifo", "plain", "rejected-unknown", "rejected-visibility"}; strings.Join(slices.Sorted(slices.Values(names)), ",") != strings.Join(want, ",") {
		t.Errorf("queues at the end: %v, want %v", names, want)
	}

	// Cross-check in the database itself: no message rows at all.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if conn, err := pgx.Connect(cctx, db); err != nil {
		t.Errorf("connect to the test database: %v", err)
	} else {
		defer conn.Close(context.Background())
		var n int
		if err := conn.QueryRow(cctx, "SELECT count(*) FROM messages").Scan(&n); err != nil {
			t.Logf("(could not count the messages table: %v)", err)
		} else if n != 0 {
			t.Errorf("the messages table holds %d rows after only rejected sends and a received-and-deleted batch", n)
		}
	}
}
