package conformance

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

// The stress area races claims against sends, deletes, visibility changes
// and redrives on the same queues and groups, from two instances (on a
// store with Harness.OpenInstance, two Stores on one backend), and judges
// the outcome with a checker (stresscheck.go). What it asserts does not
// depend on the interleaving; only how much of each kind happens does.
func testStress(t *testing.T, s suite) {
	s.test(t, "FIFOClaimsRaceEverything", func(e *env) { runStress(e, true) })
	s.test(t, "StandardClaimsRaceEverything", func(e *env) { runStress(e, false) })
	s.test(t, "DedupRaceAcrossInstances", testDedupRace)
	s.test(t, "DeletesKeepTheirOutcomes", testDeleteOutcomes)
}

const (
	stressRounds     = 6
	stressClaimers   = 8
	stressSenders    = 4
	stressClaimOps   = 8 // per claimer and round
	stressSendOps    = 3 // per sender and round
	stressGroups     = 6
	stressMaxReceive = 3
	// stressStep is how far the clock moves between rounds. No visibility
	// timeout used is a multiple of it, so no window ends exactly at a
	// round's time (where a store may fairly go either way).
	stressStep = 15 * time.Second
)

var (
	stressReceiveVTs = []int64{20, 40, 100}
	stressChangeVTs  = []int64{10, 25, 55}
)

// run is what one delivery gave a claimer of one group (Standard: one
// message): the messages still held, oldest first.
type run struct {
	tok       int
	group     string // "" on a Standard queue
	msgs      []contract.Message
	until     time.Time
	abandoned bool // left to time out; its receipts are kept to try
}

type claimer struct {
	e    *env
	svc  *service.Service
	url  string
	c    *checker
	rnd  *rand.Rand
	runs []*run
}

func runStress(e *env, fifo bool) {
	name, dlqName := "stress", "stress-dlq"
	if fifo {
		name, dlqName = "stress.fifo", "stress-dlq.fifo"
	}
	var dlq string
	if fifo {
		dlq = e.createFIFO(dlqName, nil)
	} else {
		dlq = e.create(dlqName, nil)
	}
	attrs := redrive(dlqName, stressMaxReceive)
	var url string
	if fifo {
		url = e.createFIFO(name, attrs)
	} else {
		url = e.create(name, attrs)
	}
	c := newChecker(fifo, stressMaxReceive)
	svcs := []*service.Service{e.svc, e.newService()}

	claimers := make([]*claimer, stressClaimers)
	for i := range claimers {
		claimers[i] = &claimer{e: e, svc: svcs[i%2], url: url, c: c, rnd: rand.New(rand.NewPCG(uint64(i), 7))}
	}
	sendRnd := make([]*rand.Rand, stressSenders)
	for i := range sendRnd {
		sendRnd[i] = rand.New(rand.NewPCG(uint64(i), 11))
	}
	sentBy := make([]int, stressSenders)
	for r := range stressRounds {
		var wg sync.WaitGroup
		for _, cl := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl.round()
			}()
		}
		for i := range stressSenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range stressSendOps {
					sentBy[i] = stressSend(e, svcs[i%2], url, c, sendRnd[i], i, sentBy[i], fifo)
				}
			}()
		}
		wg.Wait()
		if r < stressRounds-1 {
			e.clock.Advance(stressStep)
		}
	}
	for _, f := range c.failures {
		e.t.Error(f)
	}
	if e.t.Failed() {
		return
	}

	// Drain: every window ends, one claimer takes everything left and
	// deletes it; what was received maxReceiveCount times moves on the way.
	e.clock.Advance(time.Hour)
	drain := &claimer{e: e, svc: e.svc, url: url, c: c}
	for i := 0; ; i++ {
		if i == 1000 {
			e.t.Fatalf("source queue not drained after 1000 receives: counts %v", e.counts(url))
		}
		ms := drain.receive(10, 100)
		for _, r := range drain.runs {
			drain.deleteAll(r)
		}
		drain.runs = nil
		if len(ms) == 0 && e.counts(url) == (counts{"0", "0", "0"}) {
			break
		}
	}
	c.checkDelivered()
	c.checkOrder()

	// Every acknowledged send was deleted once, or is in the DLQ (once,
	// after maxReceiveCount receives).
	inDLQ := map[string]bool{}
	for i := 0; ; i++ {
		if i == 1000 {
			e.t.Fatalf("DLQ not drained after 1000 receives: counts %v", e.counts(dlq))
		}
		ms := e.receive(&contract.ReceiveMessageInput{QueueUrl: dlq, MaxNumberOfMessages: i64(10), WaitTimeSeconds: i64(0),
			VisibilityTimeout: i64(100), MessageSystemAttributeNames: []string{"All"}})
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			s, ok := c.sent[m.MessageId]
			switch {
			case !ok || s.body != m.Body:
				c.failures = append(c.failures, fmt.Sprintf("DLQ holds %s (%q), not an acknowledged send", m.MessageId, m.Body))
			case inDLQ[m.MessageId]:
				c.failures = append(c.failures, fmt.Sprintf("%s delivered twice from the DLQ", s.body))
			case c.deleted[m.MessageId]:
				c.failures = append(c.failures, fmt.Sprintf("%s is in the DLQ although its delete succeeded", s.body))
			case len(c.deliveredAt[m.MessageId]) < stressMaxReceive:
				c.failures = append(c.failures, fmt.Sprintf("%s moved to the DLQ after %d receives, maxReceiveCount %d", s.body, len(c.deliveredAt[m.MessageId]), stressMaxReceive))
			}
			inDLQ[m.MessageId] = true
			e.del(dlq, m.ReceiptHandle)
		}
	}
	lost := 0
	for id, s := range c.sent {
		if !c.deleted[id] && !inDLQ[id] {
			lost++
			if lost <= 10 {
				c.failures = append(c.failures, fmt.Sprintf("acknowledged send %s (%s) lost: never deleted, not in the DLQ", s.body, id))
			}
		}
	}
	if lost > 10 {
		c.failures = append(c.failures, fmt.Sprintf("... %d acknowledged sends lost in all", lost))
	}
	for _, f := range c.failures {
		e.t.Error(f)
	}
	e.wantCounts(url, 0, 0, 0)
	e.wantCounts(dlq, 0, 0, 0)
	e.t.Logf("%d sent, %d deliveries, %d moved to the DLQ", len(c.sent), len(c.deliveries), len(inDLQ))
}

// stressSend sends one message or a batch to random groups; bodies (and
// deduplication ids) are unique. It returns the sender's new message count.
func stressSend(e *env, svc *service.Service, url string, c *checker, rnd *rand.Rand, sender, n int, fifo bool) int {
	group := func() *string {
		if !fifo {
			return nil
		}
		return str("g" + strconv.Itoa(rnd.IntN(stressGroups)))
	}
	dedup := func(body string) *string {
		if !fifo {
			return nil
		}
		return str(body)
	}
	if rnd.IntN(2) == 0 {
		n++
		body := fmt.Sprintf("s%d-%03d", sender, n)
		g := group()
		out, err := svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body, MessageGroupId: g, MessageDeduplicationId: dedup(body)})
		if err != nil {
			c.failf("SendMessage %s: %v", body, err)
			return n
		}
		c.sentOK(out.MessageId, body, deref(g), out.SequenceNumber)
		return n
	}
	var entries []contract.SendMessageBatchRequestEntry
	for k := range 2 + rnd.IntN(9) {
		n++
		body := fmt.Sprintf("s%d-%03d", sender, n)
		entries = append(entries, contract.SendMessageBatchRequestEntry{Id: strconv.Itoa(k), MessageBody: str(body), MessageGroupId: group(), MessageDeduplicationId: dedup(body)})
	}
	out, err := svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
	if err != nil {
		c.failf("SendMessageBatch: %v", err)
		return n
	}
	if len(out.Failed) > 0 || len(out.Successful) != len(entries) {
		c.failf("SendMessageBatch: %d successful, failed %+v", len(out.Successful), out.Failed)
	}
	for _, r := range out.Successful {
		k, _ := strconv.Atoi(r.Id)
		c.sentOK(r.MessageId, *entries[k].MessageBody, deref(entries[k].MessageGroupId), r.SequenceNumber)
	}
	return n
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// round is one claimer's work at one clock reading: first it lets go of
// what timed out (trying an abandoned receipt now and then), then it
// receives and deals with what it holds.
func (cl *claimer) round() {
	now := cl.e.clock.Now()
	kept := cl.runs[:0]
	for _, r := range cl.runs {
		if r.until.After(now) {
			kept = append(kept, r)
			continue
		}
		if r.abandoned && cl.c.fifo && cl.rnd.IntN(2) == 0 {
			cl.staleDelete(r)
		}
	}
	cl.runs = kept
	for range stressClaimOps {
		var live []*run
		for _, r := range cl.runs {
			if !r.abandoned {
				live = append(live, r)
			}
		}
		if len(live) == 0 || cl.rnd.IntN(3) == 0 {
			cl.receive(int64(1+cl.rnd.IntN(10)), stressReceiveVTs[cl.rnd.IntN(len(stressReceiveVTs))])
			continue
		}
		r := live[cl.rnd.IntN(len(live))]
		switch f := cl.rnd.IntN(10); {
		case f < 5:
			cl.deleteAll(r)
		case f < 7:
			cl.deletePrefixReleaseRest(r, cl.rnd.IntN(len(r.msgs)))
		case f < 9:
			cl.change(r, stressChangeVTs[cl.rnd.IntN(len(stressChangeVTs))])
		default:
			r.abandoned = true
		}
		cl.drop()
	}
}

// drop forgets runs with nothing left.
func (cl *claimer) drop() {
	kept := cl.runs[:0]
	for _, r := range cl.runs {
		if len(r.msgs) > 0 {
			kept = append(kept, r)
		}
	}
	cl.runs = kept
}

func (cl *claimer) receive(max, vt int64) []contract.Message {
	now := cl.e.clock.Now()
	out, err := cl.svc.ReceiveMessage(cl.e.op(), &contract.ReceiveMessageInput{QueueUrl: cl.url, MaxNumberOfMessages: i64(max),
		WaitTimeSeconds: i64(0), VisibilityTimeout: i64(vt), MessageSystemAttributeNames: []string{"All"}})
	if err != nil {
		cl.c.failf("ReceiveMessage: %v", err)
		return nil
	}
	if len(out.Messages) > int(max) {
		cl.c.failf("ReceiveMessage MaxNumberOfMessages %d returned %d", max, len(out.Messages))
	}
	if len(out.Messages) == 0 {
		return nil
	}
	tok := cl.c.delivered(now, secs(int(vt)), out.Messages)
	byGroup := map[string]*run{}
	for _, m := range out.Messages {
		g := m.Attributes["MessageGroupId"]
		if r := byGroup[g]; r != nil && cl.c.fifo {
			r.msgs = append(r.msgs, m)
			continue
		}
		r := &run{tok: tok, group: g, msgs: []contract.Message{m}, until: now.Add(secs(int(vt)))}
		byGroup[g] = r
		cl.runs = append(cl.runs, r)
	}
	return out.Messages
}

// deleteAll deletes the run in order, one by one or as a batch. The group
// is given up before the last delete: from then on its next message may go
// to anyone.
func (cl *claimer) deleteAll(r *run) {
	if len(r.msgs) > 1 && cl.rnd != nil && cl.rnd.IntN(3) == 0 {
		var entries []contract.DeleteMessageBatchRequestEntry
		for i, m := range r.msgs {
			cl.c.deleting(m.MessageId)
			entries = append(entries, contract.DeleteMessageBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle})
		}
		cl.c.releaseGroup(r.tok, r.group)
		out, err := cl.svc.DeleteMessageBatch(cl.e.op(), &contract.DeleteMessageBatchInput{QueueUrl: cl.url, Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			cl.c.failf("DeleteMessageBatch of current receipts: err %v, failed %+v", err, failedOf(out))
		} else {
			for _, m := range r.msgs {
				cl.c.deletedOK(m.MessageId)
			}
		}
		r.msgs = nil
		return
	}
	for i, m := range r.msgs {
		if i == len(r.msgs)-1 {
			cl.c.releaseGroup(r.tok, r.group)
		}
		cl.deleteOne(m)
	}
	r.msgs = nil
}

func failedOf(out *contract.DeleteMessageBatchOutput) []contract.BatchResultErrorEntry {
	if out == nil {
		return nil
	}
	return out.Failed
}

func (cl *claimer) deleteOne(m contract.Message) {
	cl.c.deleting(m.MessageId)
	_, err := cl.svc.DeleteMessage(cl.e.op(), &contract.DeleteMessageInput{QueueUrl: cl.url, ReceiptHandle: m.ReceiptHandle})
	if err != nil {
		cl.c.failf("DeleteMessage %s with a current receipt: %v", m.Body, err)
		return
	}
	cl.c.deletedOK(m.MessageId)
}

// deletePrefixReleaseRest deletes the first k messages and makes the rest
// visible again, newest first, so the group stays held until its oldest
// message is released (whether a store blocks a group on its head or on
// any message in flight, it is held until then).
func (cl *claimer) deletePrefixReleaseRest(r *run, k int) {
	for _, m := range r.msgs[:k] {
		cl.deleteOne(m)
	}
	rest := r.msgs[k:]
	for i := len(rest) - 1; i >= 0; i-- {
		m := rest[i]
		group := ""
		if i == 0 {
			group = r.group
		}
		cl.c.release(r.tok, m.MessageId, group)
		if err := cl.cmv(m, 0); err != nil {
			cl.c.failf("ChangeMessageVisibility %s to 0 with a current receipt: %v", m.Body, err)
		}
	}
	r.msgs = nil
}

// change sets the run's visibility timeout to vt from now (shorter or
// longer than it was) and keeps holding it.
func (cl *claimer) change(r *run, vt int64) {
	now := cl.e.clock.Now()
	for _, m := range r.msgs {
		if err := cl.cmv(m, vt); err != nil {
			cl.c.failf("ChangeMessageVisibility %s to %d with a current receipt: %v", m.Body, vt, err)
		}
	}
	r.until = now.Add(secs(int(vt)))
	for _, m := range r.msgs {
		cl.c.extended(r.tok, m.MessageId, r.group, r.until)
	}
}

func (cl *claimer) cmv(m contract.Message, vt int64) error {
	_, err := cl.svc.ChangeMessageVisibility(cl.e.op(), &contract.ChangeMessageVisibilityInput{QueueUrl: cl.url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: i64(vt)})
	return err
}

// staleDelete deletes with a receipt whose window has ended (FIFO): the
// queue refuses it, or, if the message is gone meanwhile, accepts it; it
// must never delete a message another receiver now holds or may receive.
func (cl *claimer) staleDelete(r *run) {
	_, err := cl.svc.DeleteMessage(cl.e.op(), &contract.DeleteMessageInput{QueueUrl: cl.url, ReceiptHandle: r.msgs[0].ReceiptHandle})
	if err == nil {
		return
	}
	want := contract.ErrReceiptHandleExpired(r.msgs[0].ReceiptHandle)
	if ce, ok := err.(*contract.Error); !ok || ce.Code != want.Code || ce.Message != want.Message {
		cl.c.failf("DeleteMessage with an expired receipt: %v, want success or %s %q", err, want.Code, want.Message)
	}
}
