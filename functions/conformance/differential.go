package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/memstore"
)

// The differential area runs one seeded random sequence of SQS calls on the
// store under test and on a memstore (the reference), each through its own
// service on the same clock, and requires the same answers: errors,
// bodies, attributes, digests, counts. Ids differ between the two, so
// MessageIds and SequenceNumbers are compared as a one-to-one mapping,
// receipts are kept in pairs, and each send carries a key attribute that
// pairs the messages of a Standard receive (whose order is not promised).
func testDifferential(t *testing.T, s suite) {
	for seed := uint64(1); seed <= 3; seed++ {
		s.test(t, "Seed"+strconv.FormatUint(seed, 10), func(e *env) { runDifferential(e, seed, 250) })
	}

	// Found by the seeds above, kept small: design (as ReceiveUpToMax) a
	// receive returns what is receivable up to MaxNumberOfMessages; a
	// message it moves to the DLQ is not returned, so it must not use up
	// the count and cut another group's run short (the rest of that run
	// would then wait behind its head in flight).
	s.test(t, "FIFORedriveDoesNotShortenTheReceive", func(e *env) {
		dlq := e.createFIFO("dlq.fifo", nil)
		src := e.createFIFO("src.fifo", redrive("dlq.fifo", 1))
		e.sendFIFO(src, "a1", "A", "a1")
		for _, b := range []string{"b1", "b2", "b3"} {
			e.sendFIFO(src, b, "B", b)
		}
		wantBodies(e.t, e.recvVT(src, 1, 0), "a1") // received once: the next receive moves it
		wantBodies(e.t, e.recvVT(src, 3, 30), "b1", "b2", "b3")
		e.wantCounts(dlq, 1, 0, 0)
		e.wantCounts(src, 0, 3, 0)
	})
}

// diffQueue is one queue of the differential run.
type diffQueue struct {
	name    string
	fifo    bool
	content bool   // ContentBasedDeduplication
	dlq     string // the queue its RedrivePolicy names, if any
	attrs   map[string]string
}

// diffQueues, each dead-letter queue before its sources.
var diffQueues = []diffQueue{
	{name: "dlq"},
	{name: "dlq.fifo", fifo: true},
	{name: "std", dlq: "dlq", attrs: map[string]string{"MessageRetentionPeriod": "300"}},
	{name: "f.fifo", fifo: true, dlq: "dlq.fifo"},
	{name: "c.fifo", fifo: true, content: true, attrs: map[string]string{"ContentBasedDeduplication": "true"}},
}

// stdCap bounds the messages in std and dlq together, and in the FIFO
// queues together: a receive of 10 then returns every receivable one, so
// both stores must return the same set. Which ones a smaller receive
// returns is not promised: any visible Standard messages, and FIFO groups
// in any order across groups.
const stdCap = 10

type bimap struct{ ab, ba map[string]string }

func newBimap() bimap { return bimap{map[string]string{}, map[string]string{}} }

// match reports whether a (test) and b (reference) pair up consistently
// with every pair seen before, and records the pair.
func (m bimap) match(a, b string) bool {
	if x, ok := m.ab[a]; ok {
		return x == b
	}
	if _, ok := m.ba[b]; ok {
		return false
	}
	m.ab[a], m.ba[b] = b, a
	return true
}

type receiptPair struct {
	queue      diffQueue
	test, ref  string
	body, key  string
	receivedAt int // step
}

type differ struct {
	e        *env
	ref      *service.Service
	rnd      *rand.Rand
	step     int
	history  []string
	ids      bimap // MessageId
	seqs     bimap // SequenceNumber
	receipts []receiptPair
	sends    int
}

func runDifferential(e *env, seed uint64, steps int) {
	ref := service.New(service.Config{Store: memstore.New(), Region: Region, AccountID: AccountID, BaseURL: BaseURL,
		Clock: e.clock.Now, RepairInterval: repairInterval})
	e.t.Cleanup(ref.Shutdown)
	d := &differ{e: e, ref: ref, rnd: rand.New(rand.NewPCG(seed, 1)), ids: newBimap(), seqs: newBimap()}
	for _, q := range diffQueues {
		attrs := map[string]string{}
		for k, v := range q.attrs {
			attrs[k] = v
		}
		if q.fifo {
			attrs["FifoQueue"] = "true"
		}
		if q.dlq != "" {
			attrs["RedrivePolicy"] = redrive(q.dlq, 2)["RedrivePolicy"]
		}
		if _, _, ok := d.do("create "+q.name, func(svc *service.Service) (any, error) {
			return svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: q.name, Attributes: attrs})
		}); !ok {
			e.t.Fatalf("CreateQueue %s failed on both", q.name)
		}
	}
	for d.step = 1; d.step <= steps && !e.t.Failed(); d.step++ {
		switch r := d.rnd.IntN(100); {
		case r < 25:
			d.advance(time.Duration(1+d.rnd.IntN(10)) * time.Second)
		case r < 28:
			d.advance(time.Duration(61+d.rnd.IntN(300)) * time.Second)
		}
		q := diffQueues[d.rnd.IntN(len(diffQueues))]
		switch op := d.rnd.IntN(100); {
		case op < 22:
			d.send(q)
		case op < 32:
			d.sendBatch(q)
		case op < 60:
			d.receive(q)
		case op < 75:
			d.deleteOne()
		case op < 80:
			d.deleteBatch()
		case op < 93:
			d.changeVisibility()
		case op < 95:
			d.purge(q)
		default:
			d.counts(q)
		}
		d.counts(q)
		if q.dlq != "" {
			d.counts(queueByName(q.dlq))
		}
	}
	// Every window ends; both must hold the same messages, and give them up
	// the same way.
	d.advance(time.Hour)
	for _, q := range diffQueues {
		for range 50 {
			if n := d.receiveIn(q, 10, 30, ""); n == 0 {
				break
			}
		}
		d.counts(q)
	}
	e.t.Logf("seed %d: %d steps, %d messages sent, %d deliveries compared", seed, steps, d.sends, len(d.receipts))
}

func queueByName(name string) diffQueue {
	for _, q := range diffQueues {
		if q.name == name {
			return q
		}
	}
	panic("no queue " + name)
}

func (d *differ) advance(by time.Duration) {
	d.e.clock.Advance(by)
	d.note("clock +%v", by)
}

func (d *differ) note(format string, args ...any) {
	d.history = append(d.history, fmt.Sprintf("step %d: ", d.step)+fmt.Sprintf(format, args...))
}

// fail reports a difference with the last steps that led to it and ends
// the run: from here on the two diverge anyway.
func (d *differ) fail(format string, args ...any) {
	d.e.t.Helper()
	from := max(0, len(d.history)-40)
	d.e.t.Fatalf("step %d: %s\nthe last steps:\n  %s", d.step, fmt.Sprintf(format, args...), strings.Join(d.history[from:], "\n  "))
}

// errKey is what a client can tell of err: code, status and message, with
// the receipt handle the message may quote left out.
func errKey(err error, handles ...string) string {
	if err == nil {
		return "ok"
	}
	var ce *contract.Error
	if !errors.As(err, &ce) {
		return "not an SQS error: " + err.Error()
	}
	msg := ce.Message
	for _, h := range handles {
		if h != "" {
			msg = strings.ReplaceAll(msg, h, "<handle>")
		}
	}
	return fmt.Sprintf("%s (%d): %s", ce.Code, ce.Status, msg)
}

// do runs f on both and requires the same error; it returns both results.
func (d *differ) do(what string, f func(svc *service.Service) (any, error)) (test, ref any, ok bool) {
	d.e.t.Helper()
	d.note("%s", what)
	return d.both(what, f)
}

// both is do without a note in the history (for the counts after each step).
func (d *differ) both(what string, f func(svc *service.Service) (any, error)) (test, ref any, ok bool) {
	d.e.t.Helper()
	test, errT := f(d.e.svc)
	ref, errR := f(d.ref)
	if kt, kr := errKey(errT), errKey(errR); kt != kr {
		d.fail("%s: the store under test answered %s, the reference %s", what, kt, kr)
	}
	return test, ref, errT == nil
}

func (d *differ) body(q diffQueue) string {
	if q.content { // repeats, so content-based deduplication has work
		return "body-" + strconv.Itoa(d.rnd.IntN(6))
	}
	return "body-" + strconv.Itoa(d.rnd.IntN(1000)) + strings.Repeat("x", d.rnd.IntN(40))
}

// full reports whether the queues of q's kind (std and dlq, or the FIFO
// ones) hold stdCap messages (by the reference's counts).
func (d *differ) full(q diffQueue, adding int) bool {
	names := []string{"std", "dlq"}
	if q.fifo {
		names = []string{"f.fifo", "dlq.fifo", "c.fifo"}
	}
	n := 0
	for _, name := range names {
		out, err := d.ref.GetQueueAttributes(d.e.op(), &contract.GetQueueAttributesInput{QueueUrl: queueURL(name), AttributeNames: []string{"All"}})
		if err != nil {
			d.fail("reference GetQueueAttributes: %v", err)
		}
		for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
			v, _ := strconv.Atoi(out.Attributes[a])
			n += v
		}
	}
	return n+adding > stdCap
}

// message returns the parts of one send: body, key attribute, group,
// deduplication id and delay as the queue allows (now and then one it
// refuses).
func (d *differ) message(q diffQueue) (body string, attrs map[string]contract.MessageAttributeValue, group, dedup *string, delay *int64) {
	d.sends++
	body = d.body(q)
	attrs = map[string]contract.MessageAttributeValue{"k": strAttr("k" + strconv.Itoa(d.sends))}
	if q.fifo {
		group = str("g" + strconv.Itoa(d.rnd.IntN(3)))
		if !q.content || d.rnd.IntN(4) == 0 {
			dedup = str("d" + strconv.Itoa(d.rnd.IntN(12)))
		}
		if d.rnd.IntN(30) == 0 {
			group = nil // refused
		}
	} else if d.rnd.IntN(4) == 0 {
		delay = i64(int64(d.rnd.IntN(4) * 5))
	}
	return
}

func (d *differ) send(q diffQueue) {
	if d.full(q, 1) {
		return
	}
	body, attrs, group, dedup, delay := d.message(q)
	t, r, ok := d.do(fmt.Sprintf("SendMessage %s %q group %v dedup %v delay %v", q.name, body, deref(group), deref(dedup), delay),
		func(svc *service.Service) (any, error) {
			return svc.SendMessage(d.e.op(), &contract.SendMessageInput{QueueUrl: queueURL(q.name), MessageBody: str(body),
				MessageAttributes: attrs, MessageGroupId: group, MessageDeduplicationId: dedup, DelaySeconds: delay})
		})
	if !ok {
		return
	}
	a, b := t.(*contract.SendMessageOutput), r.(*contract.SendMessageOutput)
	d.sameSent(q, a.MessageId, b.MessageId, a.SequenceNumber, b.SequenceNumber,
		[3]string{a.MD5OfMessageBody, a.MD5OfMessageAttributes, a.MD5OfMessageSystemAttributes},
		[3]string{b.MD5OfMessageBody, b.MD5OfMessageAttributes, b.MD5OfMessageSystemAttributes})
}

// sameSent compares what a send was told; sequence numbers pair per queue
// (a store may number each queue on its own, or all of them together).
func (d *differ) sameSent(q diffQueue, idT, idR, seqT, seqR string, mdT, mdR [3]string) {
	d.e.t.Helper()
	if mdT != mdR {
		d.fail("send digests %v, reference %v", mdT, mdR)
	}
	if !d.ids.match(idT, idR) {
		d.fail("send MessageId %s does not pair with the reference's %s (a deduplicated send must echo the original)", idT, idR)
	}
	if (seqT == "") != (seqR == "") || seqT != "" && !d.seqs.match(q.name+" "+seqT, q.name+" "+seqR) {
		d.fail("send SequenceNumber %q does not pair with the reference's %q", seqT, seqR)
	}
}

func (d *differ) sendBatch(q diffQueue) {
	n := 1 + d.rnd.IntN(10)
	if d.full(q, n) {
		return
	}
	var entries []contract.SendMessageBatchRequestEntry
	for i := range n {
		body, attrs, group, dedup, delay := d.message(q)
		entries = append(entries, contract.SendMessageBatchRequestEntry{Id: "e" + strconv.Itoa(i), MessageBody: str(body),
			MessageAttributes: attrs, MessageGroupId: group, MessageDeduplicationId: dedup, DelaySeconds: delay})
	}
	t, r, ok := d.do(fmt.Sprintf("SendMessageBatch %s of %d", q.name, n), func(svc *service.Service) (any, error) {
		return svc.SendMessageBatch(d.e.op(), &contract.SendMessageBatchInput{QueueUrl: queueURL(q.name), Entries: entries})
	})
	if !ok {
		return
	}
	a, b := t.(*contract.SendMessageBatchOutput), r.(*contract.SendMessageBatchOutput)
	if fmt.Sprint(a.Failed) != fmt.Sprint(b.Failed) || len(a.Successful) != len(b.Successful) {
		d.fail("SendMessageBatch: %d successful, failed %+v; reference %d, %+v", len(a.Successful), a.Failed, len(b.Successful), b.Failed)
	}
	for i := range a.Successful {
		x, y := a.Successful[i], b.Successful[i]
		if x.Id != y.Id {
			d.fail("SendMessageBatch entry %d is %s, reference %s", i, x.Id, y.Id)
		}
		d.sameSent(q, x.MessageId, y.MessageId, x.SequenceNumber, y.SequenceNumber,
			[3]string{x.MD5OfMessageBody, x.MD5OfMessageAttributes, x.MD5OfMessageSystemAttributes},
			[3]string{y.MD5OfMessageBody, y.MD5OfMessageAttributes, y.MD5OfMessageSystemAttributes})
	}
}

func (d *differ) receive(q diffQueue) {
	n := int64(10) // see stdCap
	attempt := ""
	if q.fifo && d.rnd.IntN(3) == 0 {
		attempt = "a" + strconv.Itoa(d.rnd.IntN(3))
	}
	vt := []int64{0, 1, 5, 30, 30}[d.rnd.IntN(5)]
	d.receiveIn(q, n, vt, attempt)
}

// receiveIn receives on both and compares message by message; it returns
// how many messages came.
func (d *differ) receiveIn(q diffQueue, max, vt int64, attempt string) int {
	mk := func(svc *service.Service) (any, error) {
		in := &contract.ReceiveMessageInput{QueueUrl: queueURL(q.name), MaxNumberOfMessages: i64(max), WaitTimeSeconds: i64(0),
			VisibilityTimeout: i64(vt), MessageSystemAttributeNames: []string{"All"}, MessageAttributeNames: []string{"All"}}
		if attempt != "" {
			in.ReceiveRequestAttemptId = str(attempt)
		}
		return svc.ReceiveMessage(d.e.op(), in)
	}
	t, r, ok := d.do(fmt.Sprintf("ReceiveMessage %s max %d vt %d attempt %q", q.name, max, vt, attempt), mk)
	if !ok {
		return 0
	}
	a, b := t.(*contract.ReceiveMessageOutput).Messages, r.(*contract.ReceiveMessageOutput).Messages
	if !q.fifo {
		byKey := func(ms []contract.Message) {
			sort.Slice(ms, func(i, j int) bool { return keyOf(ms[i]) < keyOf(ms[j]) })
		}
		byKey(a)
		byKey(b)
	} else {
		// Order within a group is promised, across groups it is not.
		byGroup := func(ms []contract.Message) {
			sort.SliceStable(ms, func(i, j int) bool {
				return ms[i].Attributes["MessageGroupId"] < ms[j].Attributes["MessageGroupId"]
			})
		}
		byGroup(a)
		byGroup(b)
	}
	if len(a) != len(b) {
		d.fail("ReceiveMessage %s returned %d messages %s, the reference %d %s", q.name, len(a), describe(a), len(b), describe(b))
	}
	d.note("  got %s", describe(a))
	for i := range a {
		x, y := a[i], b[i]
		if x.Body != y.Body || keyOf(x) != keyOf(y) || x.MD5OfBody != y.MD5OfBody || x.MD5OfMessageAttributes != y.MD5OfMessageAttributes {
			d.fail("ReceiveMessage %s message %d: %s, the reference %s", q.name, i, describe(a), describe(b))
		}
		if !d.ids.match(x.MessageId, y.MessageId) {
			d.fail("ReceiveMessage %s: %s has MessageId %s, which does not pair with the reference's %s", q.name, keyOf(x), x.MessageId, y.MessageId)
		}
		for name := range unionKeys(x.Attributes, y.Attributes) {
			xv, yv := x.Attributes[name], y.Attributes[name]
			if name == "SequenceNumber" && xv != "" && yv != "" {
				if !d.seqs.match(q.name+" "+xv, q.name+" "+yv) {
					d.fail("ReceiveMessage %s: %s SequenceNumber %s does not pair with the reference's %s", q.name, keyOf(x), xv, yv)
				}
				continue
			}
			if name == "MessageDeduplicationId" && xv == x.MessageId && yv == y.MessageId {
				continue // a FIFO dead letter's is its MessageId, paired above
			}
			if xv != yv {
				d.fail("ReceiveMessage %s: %s attribute %s = %q, the reference %q", q.name, keyOf(x), name, xv, yv)
			}
		}
		d.receipts = append(d.receipts, receiptPair{queue: q, test: x.ReceiptHandle, ref: y.ReceiptHandle, body: x.Body, key: keyOf(x), receivedAt: d.step})
	}
	return len(a)
}

func keyOf(m contract.Message) string {
	if v, ok := m.MessageAttributes["k"]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}

func describe(ms []contract.Message) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s:%s(n=%s)", keyOf(m), m.Body, m.Attributes["ApproximateReceiveCount"])
		if g := m.Attributes["MessageGroupId"]; g != "" {
			parts[i] = g + "/" + parts[i]
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func unionKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// pick returns a receipt seen so far, mostly a recent one, and the queue to
// use it on (now and then another queue, which must refuse it).
func (d *differ) pick() (receiptPair, diffQueue, bool) {
	if len(d.receipts) == 0 {
		return receiptPair{}, diffQueue{}, false
	}
	i := len(d.receipts) - 1 - d.rnd.IntN(min(len(d.receipts), 12))
	if d.rnd.IntN(5) == 0 {
		i = d.rnd.IntN(len(d.receipts))
	}
	rp := d.receipts[i]
	q := rp.queue
	if d.rnd.IntN(20) == 0 {
		q = diffQueues[d.rnd.IntN(len(diffQueues))]
	}
	return rp, q, true
}

func (d *differ) deleteOne() {
	rp, q, ok := d.pick()
	if !ok {
		return
	}
	d.note("DeleteMessage %s on %s (received at step %d)", rp.key, q.name, rp.receivedAt)
	_, errT := d.e.svc.DeleteMessage(d.e.op(), &contract.DeleteMessageInput{QueueUrl: queueURL(q.name), ReceiptHandle: rp.test})
	_, errR := d.ref.DeleteMessage(d.e.op(), &contract.DeleteMessageInput{QueueUrl: queueURL(q.name), ReceiptHandle: rp.ref})
	if kt, kr := errKey(errT, rp.test), errKey(errR, rp.ref); kt != kr {
		d.fail("DeleteMessage %s: the store under test answered %s, the reference %s", rp.key, kt, kr)
	}
}

func (d *differ) deleteBatch() {
	rp, q, ok := d.pick()
	if !ok {
		return
	}
	var test, ref []contract.DeleteMessageBatchRequestEntry
	var keys []string
	for i := range 1 + d.rnd.IntN(4) {
		p := rp
		if i > 0 {
			p, _, _ = d.pick()
		}
		test = append(test, contract.DeleteMessageBatchRequestEntry{Id: "e" + strconv.Itoa(i), ReceiptHandle: p.test})
		ref = append(ref, contract.DeleteMessageBatchRequestEntry{Id: "e" + strconv.Itoa(i), ReceiptHandle: p.ref})
		keys = append(keys, p.key)
	}
	d.note("DeleteMessageBatch %v on %s", keys, q.name)
	a, errT := d.e.svc.DeleteMessageBatch(d.e.op(), &contract.DeleteMessageBatchInput{QueueUrl: queueURL(q.name), Entries: test})
	b, errR := d.ref.DeleteMessageBatch(d.e.op(), &contract.DeleteMessageBatchInput{QueueUrl: queueURL(q.name), Entries: ref})
	if kt, kr := errKey(errT), errKey(errR); kt != kr {
		d.fail("DeleteMessageBatch: the store under test answered %s, the reference %s", kt, kr)
	}
	if errT != nil {
		return
	}
	outcome := func(out *contract.DeleteMessageBatchOutput, entries []contract.DeleteMessageBatchRequestEntry) string {
		var parts []string
		for _, s := range out.Successful {
			parts = append(parts, s.Id+" ok")
		}
		for _, f := range out.Failed {
			msg := f.Message
			for _, en := range entries {
				msg = strings.ReplaceAll(msg, en.ReceiptHandle, "<handle>")
			}
			parts = append(parts, fmt.Sprintf("%s %s %v %s", f.Id, f.Code, f.SenderFault, msg))
		}
		sort.Strings(parts)
		return strings.Join(parts, "; ")
	}
	if ot, or := outcome(a, test), outcome(b, ref); ot != or {
		d.fail("DeleteMessageBatch %v: %s; the reference %s", keys, ot, or)
	}
}

func (d *differ) changeVisibility() {
	rp, q, ok := d.pick()
	if !ok {
		return
	}
	vt := []int64{0, 0, 2, 10, 60, 43201}[d.rnd.IntN(6)]
	d.note("ChangeMessageVisibility %s on %s to %d (received at step %d)", rp.key, q.name, vt, rp.receivedAt)
	_, errT := d.e.svc.ChangeMessageVisibility(d.e.op(), &contract.ChangeMessageVisibilityInput{QueueUrl: queueURL(q.name), ReceiptHandle: rp.test, VisibilityTimeout: i64(vt)})
	_, errR := d.ref.ChangeMessageVisibility(d.e.op(), &contract.ChangeMessageVisibilityInput{QueueUrl: queueURL(q.name), ReceiptHandle: rp.ref, VisibilityTimeout: i64(vt)})
	if kt, kr := errKey(errT, rp.test), errKey(errR, rp.ref); kt != kr {
		d.fail("ChangeMessageVisibility %s to %d: the store under test answered %s, the reference %s", rp.key, vt, kt, kr)
	}
}

func (d *differ) purge(q diffQueue) {
	d.do("PurgeQueue "+q.name, func(svc *service.Service) (any, error) {
		return svc.PurgeQueue(d.e.op(), &contract.PurgeQueueInput{QueueUrl: queueURL(q.name)})
	})
}

func (d *differ) counts(q diffQueue) {
	names := []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"}
	t, r, ok := d.both("counts "+q.name, func(svc *service.Service) (any, error) {
		return svc.GetQueueAttributes(d.e.op(), &contract.GetQueueAttributesInput{QueueUrl: queueURL(q.name), AttributeNames: names})
	})
	if !ok {
		return
	}
	a, b := t.(*contract.GetQueueAttributesOutput).Attributes, r.(*contract.GetQueueAttributesOutput).Attributes
	for _, n := range names {
		if a[n] != b[n] {
			d.fail("%s %s = %s, the reference %s", q.name, n, a[n], b[n])
		}
	}
}
