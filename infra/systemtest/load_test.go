package systemtest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// loadSpec sizes a mixed load on one FIFO and one Standard queue.
type loadSpec struct {
	fifoQueue, stdQueue string

	groups, perGroup int // FIFO: groups × messages per group
	stdMessages      int

	fifoProducers, stdProducers int // in all; they spread over the instances
	fifoConsumers, stdConsumers int // per instance

	visibility time.Duration // the queues' VisibilityTimeout
	dupEvery   int           // every dupEvery-th FIFO message is sent again (same dedup id) through another instance
	strict     bool          // no visibility timeout can expire: FIFO exactly once

	budget time.Duration // the whole load, draining included
	// stallLimit, when set, replaces defaultStallLimit.
	stallLimit time.Duration

	// work is how long a consumer works on what it received before
	// deleting it. consumersDieWithHome: consumers stop with their home
	// instance (as if they ran on its host), dropping undeleted what
	// they hold; otherwise they move on to the next instance.
	work                 time.Duration
	consumersDieWithHome bool

	// event, when set, runs once when eventAt of the sends are
	// acknowledged, while the load goes on (a kill, a restart).
	event   func()
	eventAt float64
	// probe, when set, runs while the load goes on (wake-up probes).
	probe func(ctx context.Context)
}

// moderated cuts the load down for a store that is slow under contention
// (storeKind.moderate): fewer messages, two producers and one consumer
// per instance for each queue, and more time. The rest (repeats, sends
// through two instances at once, deletes through another instance, the
// event) stays.
func (s loadSpec) moderated() loadSpec {
	s.groups, s.perGroup, s.stdMessages = 8, size(12, 6), size(200, 80)
	s.fifoProducers, s.stdProducers = 2, 2
	s.fifoConsumers, s.stdConsumers = 1, 1
	s.budget = 90 * time.Second
	return s
}

// loadStats counts requests by outcome.
type loadStats struct {
	mu    sync.Mutex
	ops   map[string]int // "<op> ok" and "<op> <error kind>"
	perIn map[string]int // successful requests per instance
	after map[string]int // successful requests per instance after the event
	took  map[string][]time.Duration
}

func newLoadStats() *loadStats {
	return &loadStats{ops: map[string]int{}, perIn: map[string]int{}, after: map[string]int{}, took: map[string][]time.Duration{}}
}

func (s *loadStats) add(op, inst string, err error, afterEvent bool, start time.Time) {
	d := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.took[op] = append(s.took[op], d)
	if err == nil {
		s.ops[op+" ok"]++
		s.perIn[inst]++
		if afterEvent {
			s.after[inst]++
		}
		return
	}
	s.ops[op+" "+errKind(err)]++
}

// addKind counts a failure that is not a request error (a batch entry's).
func (s *loadStats) addKind(key string) {
	s.mu.Lock()
	s.ops[key]++
	s.mu.Unlock()
}

func (s *loadStats) failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.ops {
		if !strings.HasSuffix(k, " ok") {
			n += v
		}
	}
	return n
}

func (s *loadStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []string
	for k := range s.ops {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var sb strings.Builder
	for i, k := range ks {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%s=%d", k, s.ops[k])
	}
	fmt.Fprintf(&sb, "; successful requests per instance %v", s.perIn)
	return sb.String()
}

// latencies is each operation's latency at the client (SDK retries
// included): median, 95th percentile and maximum.
func (s *loadStats) latencies() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []string
	for k := range s.took {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var sb strings.Builder
	for i, k := range ks {
		ds := slices.Clone(s.took[k])
		slices.Sort(ds)
		if i > 0 {
			sb.WriteString(", ")
		}
		r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		fmt.Fprintf(&sb, "%s %s/%s/%s", k, r(ds[len(ds)/2]), r(ds[len(ds)*95/100]), r(ds[len(ds)-1]))
	}
	return sb.String()
}

// loadRun is one running load.
type loadRun struct {
	t     *testing.T
	c     *cluster
	spec  loadSpec
	l     *ledger
	stats *loadStats
	rr    atomic.Int64 // round-robin over instances
	event atomic.Bool  // the event has happened
}

// pick returns the next instance index round-robin, skipping instances
// known to be dead.
func (r *loadRun) pick() int {
	n := len(r.c.insts)
	for range n {
		i := int(r.rr.Add(1) % int64(n))
		if r.c.insts[i].alive() {
			return i
		}
	}
	return int(r.rr.Load() % int64(n))
}

// defaultStallLimit ends a load early, as a failure, when the consumers
// get nowhere for this long after the producers are done (a receive path
// that fails every time, say), rather than waiting for the whole budget.
const defaultStallLimit = 20 * time.Second

// retryPause is the pause between a failed request and the next try.
const retryPause = 100 * time.Millisecond

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// runLoad runs the load to its end (every acknowledged message received and
// deleted, both queues empty) or to the budget, and verifies the ledger.
func runLoad(t *testing.T, c *cluster, spec loadSpec) (*ledger, *loadStats) {
	t.Helper()
	r := &loadRun{t: t, c: c, spec: spec, stats: newLoadStats(),
		l: newLedger(spec.groups, spec.perGroup, spec.strict, spec.visibility)}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), spec.budget)
	defer cancel()
	consumeCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()

	var consumers, producers, side sync.WaitGroup
	for i := range c.insts {
		// Consumers are numbered across the cluster, so that with one per
		// instance they still differ (see consume).
		for j := range spec.fifoConsumers {
			consumers.Go(func() { r.consume(consumeCtx, true, i, i*spec.fifoConsumers+j) })
		}
		for j := range spec.stdConsumers {
			consumers.Go(func() { r.consume(consumeCtx, false, i, i*spec.stdConsumers+j) })
		}
	}
	for p := range spec.fifoProducers {
		producers.Go(func() { r.produceFIFO(ctx, p) })
	}
	for p := range spec.stdProducers {
		producers.Go(func() { r.produceStd(ctx, p) })
	}
	producersDone := make(chan struct{})
	go func() {
		producers.Wait()
		r.l.setProducersDone()
		close(producersDone)
	}()
	// The side tasks (probes, the event) are not cut short when the load
	// ends before them; the budget bounds them too.
	sideCtx, sideCancel := context.WithTimeout(context.Background(), spec.budget)
	defer sideCancel()
	if spec.probe != nil {
		side.Go(func() { spec.probe(sideCtx) })
	}
	total := spec.groups*spec.perGroup + spec.stdMessages
	var eventAt time.Time
	if spec.event != nil {
		side.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for r.l.acked() < int(spec.eventAt*float64(total)) {
				select {
				case <-ctx.Done():
					t.Errorf("the load ended before its event (acknowledged %d of %d)", r.l.acked(), total)
					return
				case <-tick.C:
				}
			}
			eventAt = time.Now()
			t.Logf("event at %s: %d of %d sends acknowledged", eventAt.Sub(start).Round(time.Millisecond), r.l.acked(), total)
			spec.event()
			r.event.Store(true)
		})
	}

	// Wait until every acknowledged message was received and both queues
	// are empty, or the budget is spent.
	var producersTook time.Duration
	stallLimit := cmp.Or(spec.stallLimit, defaultStallLimit)
	finished := false
	tick := time.NewTicker(250 * time.Millisecond)
	lastLog := time.Now()
	lastProgress, progressAt := -1, time.Now()
	for !finished {
		select {
		case <-ctx.Done():
			f, s := r.l.missing()
			t.Errorf("the load did not finish within its budget of %s: %d of %d sends acknowledged, %d FIFO and %d Standard acknowledged messages not received yet",
				spec.budget, r.l.acked(), total, f, s)
			finished = true
			continue
		case <-producersDone:
			producersTook = time.Since(start)
			producersDone = nil // closed: would be ready for ever
		case <-tick.C:
		}
		if time.Since(lastLog) > 5*time.Second {
			f, s := r.l.missing()
			t.Logf("  progress %s: acknowledged %d/%d, not yet received FIFO %d Standard %d", time.Since(start).Round(time.Second), r.l.acked(), total, f, s)
			lastLog = time.Now()
		}
		if p := r.l.progress(); p != lastProgress {
			lastProgress, progressAt = p, time.Now()
		} else if producersTook > 0 && time.Since(progressAt) > stallLimit {
			f, s := r.l.missing()
			t.Errorf("the load stalled: nothing received or deleted for %s after the producers finished; %d FIFO and %d Standard acknowledged messages not received",
				stallLimit, f, s)
			break
		}
		if !r.l.done() {
			continue
		}
		fq, err1 := c.counts(ctx, spec.fifoQueue)
		sq, err2 := c.counts(ctx, spec.stdQueue)
		if err1 == nil && err2 == nil && fq == [3]int{} && sq == [3]int{} {
			finished = true
		}
	}
	tick.Stop()
	side.Wait()
	stopConsumers()
	consumers.Wait()
	cancel()
	producers.Wait()
	t.Logf("load: %d FIFO messages (%d groups) and %d Standard over %d instances; producers took %s, everything %s",
		spec.groups*spec.perGroup, spec.groups, spec.stdMessages, len(c.insts),
		producersTook.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	t.Logf("requests: %s", r.stats)
	t.Logf("latency at the client, median/p95/max: %s", r.stats.latencies())
	if r.event.Load() {
		r.stats.mu.Lock()
		t.Logf("successful requests per instance after the event: %v", r.stats.after)
		r.stats.mu.Unlock()
	}

	r.l.verify(t)
	// The queues end empty: nothing left visible, in flight or delayed.
	qctx, qcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer qcancel()
	for _, q := range []string{spec.fifoQueue, spec.stdQueue} {
		n, err := c.counts(qctx, q)
		switch {
		case err != nil:
			t.Errorf("counts of %s: %v", q, err)
		case n != [3]int{}:
			t.Errorf("queue %s does not end empty: ApproximateNumberOfMessages=%d NotVisible=%d Delayed=%d", q, n[0], n[1], n[2])
		default:
			t.Logf("queue %s ends empty (0 visible, 0 in flight, 0 delayed)", q)
		}
	}
	return r.l, r.stats
}

// ---- producers

// produceFIFO sends the messages of the groups g ≡ p (mod fifoProducers), in
// order within each group, interleaving its groups; odd producers send
// chunks of up to 4 consecutive messages of a group in one
// SendMessageBatch. A send that fails is repeated, with the same
// deduplication ids, through the next instance until it is acknowledged:
// the send either happened or not, and the repeat cannot double it.
//
// Deduplication is exercised two ways (dupEvery > 0): every dupEvery-th
// message is sent once more, with the same deduplication id and another
// body, through another instance, concurrently with the group's next send;
// and single-message producers send every dupEvery-th message (offset by
// half) through two instances at once, as a client retrying a send that
// timed out would: both must be answered with the same MessageId.
func (r *loadRun) produceFIFO(ctx context.Context, p int) {
	spec := r.spec
	var groups []int
	for g := p; g < spec.groups; g += spec.fifoProducers {
		groups = append(groups, g)
	}
	chunk := 1
	if p%2 == 1 {
		chunk = 4
	}
	var dups sync.WaitGroup
	defer dups.Wait()
	next := make([]int, spec.groups)
	for remaining := true; remaining; {
		remaining = false
		for _, g := range groups {
			k0 := next[g]
			if k0 >= spec.perGroup {
				continue
			}
			remaining = true
			n := min(chunk, spec.perGroup-k0)
			var via int
			var ok bool
			if n == 1 && spec.dupEvery > 0 && k0%spec.dupEvery == spec.dupEvery/2 {
				via, ok = r.sendFIFORace(ctx, g, k0)
			} else {
				via, ok = r.sendFIFO(ctx, g, k0, n, -1)
			}
			if !ok {
				return
			}
			next[g] = k0 + n
			for k := k0; k < k0+n; k++ {
				if spec.dupEvery > 0 && k%spec.dupEvery == spec.dupEvery-1 {
					dups.Go(func() { r.sendDup(ctx, g, k, via) })
				}
			}
		}
	}
}

// sendFIFORace sends message k of group g through two instances at once.
func (r *loadRun) sendFIFORace(ctx context.Context, g, k int) (int, bool) {
	first := r.pick()
	second := (first + 1) % len(r.c.insts)
	var wg sync.WaitGroup
	var via [2]int
	var ok [2]bool
	for j, i := range []int{first, second} {
		wg.Go(func() { via[j], ok[j] = r.sendFIFO(ctx, g, k, 1, i) })
	}
	wg.Wait()
	r.l.mu.Lock()
	r.l.raced++
	r.l.mu.Unlock()
	return via[0], ok[0] && ok[1]
}

// sendFIFO sends messages k0..k0+n-1 of group g until acknowledged, first
// through instance first (any when negative), and returns the instance that
// acknowledged them; false when the context ended first.
func (r *loadRun) sendFIFO(ctx context.Context, g, k0, n, first int) (int, bool) {
	for try := 0; ; try++ {
		i := first
		if try > 0 || i < 0 || !r.c.insts[i].alive() {
			i = r.pick()
		}
		cl, qurl, inst := r.c.clients[i], r.c.url(r.spec.fifoQueue, i), r.c.insts[i].name
		if n == 1 {
			t0 := time.Now()
			out, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(qurl),
				MessageBody: aws.String(fifoBody(g, k0)), MessageGroupId: aws.String(groupID(g)),
				MessageDeduplicationId: aws.String(dedupID(g, k0))})
			r.stats.add("SendMessage(FIFO)", inst, err, r.event.Load(), t0)
			if err == nil {
				r.l.fifoAck(g, k0, aws.ToString(out.MessageId), aws.ToString(out.SequenceNumber))
				return i, true
			}
		} else {
			var entries []types.SendMessageBatchRequestEntry
			for k := k0; k < k0+n; k++ {
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("k%d", k)),
					MessageBody: aws.String(fifoBody(g, k)), MessageGroupId: aws.String(groupID(g)),
					MessageDeduplicationId: aws.String(dedupID(g, k))})
			}
			t0 := time.Now()
			out, err := cl.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(qurl), Entries: entries})
			r.stats.add("SendMessageBatch(FIFO)", inst, err, r.event.Load(), t0)
			if err == nil {
				for _, f := range out.Failed {
					r.l.mu.Lock()
					r.l.violate("SendMessageBatch(FIFO) through %s: entry %s failed: %s %s", inst, aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
					r.l.mu.Unlock()
				}
				for _, s := range out.Successful {
					var k int
					fmt.Sscanf(aws.ToString(s.Id), "k%d", &k)
					r.l.fifoAck(g, k, aws.ToString(s.MessageId), aws.ToString(s.SequenceNumber))
				}
				if len(out.Failed) == 0 {
					return i, true
				}
			}
		}
		if !sleepCtx(ctx, retryPause) {
			return 0, false
		}
	}
}

// sendDup repeats message k of group g with the same deduplication id but
// another body, through another instance than the one that acknowledged the
// original (orig); the answer must be the original's MessageId and
// SequenceNumber, and the body must never be delivered.
func (r *loadRun) sendDup(ctx context.Context, g, k, orig int) bool {
	n := len(r.c.insts)
	for try := 0; ; try++ {
		i := 0
		if n > 1 {
			i = (orig + 1 + try%(n-1)) % n
		}
		if !r.c.insts[i].alive() {
			i = r.pick()
		}
		t0 := time.Now()
		out, err := r.c.clients[i].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(r.c.url(r.spec.fifoQueue, i)),
			MessageBody: aws.String(dupBody(g, k)), MessageGroupId: aws.String(groupID(g)),
			MessageDeduplicationId: aws.String(dedupID(g, k))})
		r.stats.add("SendMessage(FIFO repeat)", r.c.insts[i].name, err, r.event.Load(), t0)
		if err == nil {
			r.l.dupAck(g, k, aws.ToString(out.MessageId), aws.ToString(out.SequenceNumber), r.c.insts[i].name)
			return true
		}
		if !sleepCtx(ctx, retryPause) {
			return false
		}
	}
}

// produceStd sends its share of the Standard messages: even producers in
// batches of 10, odd ones one by one. A failed send is repeated (the first
// try may have happened: at-least-once allows the copy).
func (r *loadRun) produceStd(ctx context.Context, p int) {
	spec := r.spec
	n := spec.stdMessages / spec.stdProducers
	if p < spec.stdMessages%spec.stdProducers {
		n++
	}
	batch := 1
	if p%2 == 0 {
		batch = 10
	}
	for i := 0; i < n; i += batch {
		var bodies []string
		for j := i; j < min(i+batch, n); j++ {
			bodies = append(bodies, stdBody(p, j))
		}
		for len(bodies) > 0 {
			for _, b := range bodies {
				r.l.stdAttempt(b)
			}
			inst := r.pick()
			cl, qurl, name := r.c.clients[inst], r.c.url(spec.stdQueue, inst), r.c.insts[inst].name
			if len(bodies) == 1 {
				t0 := time.Now()
				out, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(qurl), MessageBody: aws.String(bodies[0])})
				r.stats.add("SendMessage(Standard)", name, err, r.event.Load(), t0)
				if err == nil {
					r.l.stdAck(bodies[0], aws.ToString(out.MessageId))
					bodies = nil
					continue
				}
			} else {
				var entries []types.SendMessageBatchRequestEntry
				for j, b := range bodies {
					entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("e%d", j)), MessageBody: aws.String(b)})
				}
				t0 := time.Now()
				out, err := cl.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(qurl), Entries: entries})
				r.stats.add("SendMessageBatch(Standard)", name, err, r.event.Load(), t0)
				if err == nil {
					var again []string
					for _, s := range out.Successful {
						var j int
						fmt.Sscanf(aws.ToString(s.Id), "e%d", &j)
						r.l.stdAck(bodies[j], aws.ToString(s.MessageId))
					}
					for _, f := range out.Failed {
						var j int
						fmt.Sscanf(aws.ToString(f.Id), "e%d", &j)
						again = append(again, bodies[j])
						r.l.mu.Lock()
						r.l.violate("SendMessageBatch(Standard) through %s: entry %s failed: %s %s", name, aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
						r.l.mu.Unlock()
					}
					bodies = again
					continue
				}
			}
			if !sleepCtx(ctx, retryPause) {
				return
			}
		}
	}
}

// ---- consumers

// consume receives from one queue through instance home (moving on to the
// next instance after a failure, or stopping with its home instance when
// consumersDieWithHome) and deletes what it got, through the
// receiving instance or, for odd consumers, through the next one (receipt
// handles are not tied to an instance). Consumer j is numbered across the
// cluster: even ones long poll with WaitTimeSeconds=5 and delete one by
// one, odd ones poll with 1 and delete in batches.
func (r *loadRun) consume(ctx context.Context, fifo bool, home, j int) {
	queue, op := r.spec.stdQueue, "Standard"
	if fifo {
		queue, op = r.spec.fifoQueue, "FIFO"
	}
	wait := int32(1)
	if j%2 == 0 {
		wait = 5
	}
	n := len(r.c.insts)
	cur := home
	for ctx.Err() == nil {
		if !r.c.insts[cur].alive() {
			if r.spec.consumersDieWithHome {
				return
			}
			cur = (cur + 1) % n
			continue
		}
		reqStart := time.Now()
		out, err := r.c.clients[cur].ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.c.url(queue, cur)), MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{
				types.MessageSystemAttributeNameSequenceNumber, types.MessageSystemAttributeNameMessageGroupId,
				types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if ctx.Err() != nil {
			return
		}
		r.stats.add("ReceiveMessage("+op+")", r.c.insts[cur].name, err, r.event.Load(), reqStart)
		if err != nil {
			if !r.spec.consumersDieWithHome {
				cur = (cur + 1) % n
			}
			sleepCtx(ctx, retryPause)
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		inst := r.c.insts[cur].name
		if fifo {
			r.l.fifoReceived(out.Messages, reqStart, time.Now(), inst)
		} else {
			r.l.stdReceived(out.Messages, reqStart, time.Now(), inst)
		}
		if r.spec.work > 0 {
			sleepCtx(ctx, r.spec.work)
		}
		if r.spec.consumersDieWithHome && !r.c.insts[home].alive() {
			r.l.abandoned(fifo, out.Messages)
			return
		}
		del := cur
		if j%2 == 1 && r.c.insts[(cur+1)%n].alive() {
			del = (cur + 1) % n
		}
		if j%2 == 1 && len(out.Messages) > 1 {
			r.deleteBatch(ctx, fifo, queue, op, del, out.Messages, reqStart)
			continue
		}
		for idx, m := range out.Messages {
			if r.spec.consumersDieWithHome && !r.c.insts[home].alive() {
				r.l.abandoned(fifo, out.Messages[idx:])
				return
			}
			r.deleteOne(ctx, fifo, queue, op, del, m, reqStart)
		}
	}
}

func (r *loadRun) deleted(fifo bool, m types.Message, reqStart time.Time) {
	now := time.Now()
	body := aws.ToString(m.Body)
	if fifo {
		if _, g, k, ok := parseFIFO(body); ok {
			r.l.fifoDeleted(g, k, reqStart, now)
		}
		return
	}
	r.l.stdDeleted(body, aws.ToString(m.MessageId), reqStart, now)
}

// deleteOne deletes one message, trying each live instance once (only the
// given one when consumers die with their home); a message whose delete
// fails comes back when its visibility timeout ends.
func (r *loadRun) deleteOne(ctx context.Context, fifo bool, queue, op string, i int, m types.Message, reqStart time.Time) {
	n := len(r.c.insts)
	if r.spec.consumersDieWithHome {
		n = 1 // a consumer that dies with its host does not try elsewhere
	}
	for try := range n {
		k := (i + try) % len(r.c.insts)
		if !r.c.insts[k].alive() {
			r.stats.addKind("DeleteMessage(" + op + ") not sent: instance dead")
			continue
		}
		t0 := time.Now()
		_, err := r.c.clients[k].DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.c.url(queue, k)), ReceiptHandle: m.ReceiptHandle})
		if ctx.Err() != nil {
			return
		}
		r.stats.add("DeleteMessage("+op+")", r.c.insts[k].name, err, r.event.Load(), t0)
		if err == nil {
			r.deleted(fifo, m, reqStart)
			return
		}
	}
}

func (r *loadRun) deleteBatch(ctx context.Context, fifo bool, queue, op string, i int, msgs []types.Message, reqStart time.Time) {
	var entries []types.DeleteMessageBatchRequestEntry
	for j, m := range msgs {
		entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("d%d", j)), ReceiptHandle: m.ReceiptHandle})
	}
	n := len(r.c.insts)
	if r.spec.consumersDieWithHome {
		n = 1
	}
	for try := range n {
		k := (i + try) % len(r.c.insts)
		if !r.c.insts[k].alive() {
			r.stats.addKind("DeleteMessageBatch(" + op + ") not sent: instance dead")
			continue
		}
		t0 := time.Now()
		out, err := r.c.clients[k].DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.c.url(queue, k)), Entries: entries})
		if ctx.Err() != nil {
			return
		}
		r.stats.add("DeleteMessageBatch("+op+")", r.c.insts[k].name, err, r.event.Load(), t0)
		if err != nil {
			continue
		}
		for _, s := range out.Successful {
			var j int
			fmt.Sscanf(aws.ToString(s.Id), "d%d", &j)
			r.deleted(fifo, msgs[j], reqStart)
		}
		for _, f := range out.Failed {
			r.stats.addKind("DeleteMessageBatch(" + op + ") entry api:" + aws.ToString(f.Code))
		}
		return
	}
}
