package systemtest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The ledger records what the load sent and received and checks, as
// deliveries come in and at the end, what SQS promises:
//
//   - every acknowledged send is received (FIFO and Standard), with the
//     MessageId (and for FIFO the SequenceNumber) the send returned;
//   - FIFO, in strict mode (no visibility timeout can expire): every message
//     is received exactly once;
//   - FIFO order: a receive never hands out message k of a group before
//     every earlier message of that group was deleted, unless they come
//     in the same response, in send order (a message between two of them
//     may be missing only when it was deleted). The check is sound under
//     any failure:
//     a consumer marks messages "to be deleted" before asking to delete
//     them, and sluice may only hand out k after the group's earlier
//     messages are gone, which needs a delete request, which comes after the
//     mark; so finding an earlier message unmarked is an order break;
//   - deduplication: a repeated send with the same MessageDeduplicationId
//     returns the original MessageId and SequenceNumber, and its body (which
//     differs on purpose) is never delivered;
//   - a message whose delete was acknowledged before its visibility timeout
//     could have ended is never delivered by a receive that started later;
//   - a message is not delivered again before the visibility timeout of
//     its previous delivery could have ended (counted from the start of
//     that receive request, which is before sluice's clock started it);
//   - nothing is delivered that was never sent.
//
// Bodies: FIFO "F:<group>:<k>", the deliberate duplicate of it
// "D:<group>:<k>", Standard "S:<producer>:<n>".
type ledger struct {
	mu         sync.Mutex
	strict     bool
	visibility time.Duration

	fifo   [][]fifoMsg // [group][k]
	prefix []int       // per group: the lowest k not yet marked to be deleted

	std     map[string]*stdMsg // by body
	stdByID map[string]*stdMsg

	producersDone bool
	fifoAcked     int
	stdAcked      int

	dupSent, dupOK int
	raced          int // FIFO messages sent through two instances at once

	// Messages a consumer dropped without deleting (its instance died):
	// how often each had been delivered then. Each must come back.
	abandonedFIFO map[[2]int]int
	abandonedStd  map[string]int // by message id

	violations  []string
	nViolations int
	redelivered int // FIFO deliveries of a message delivered before
	stdDupDeliv int // Standard deliveries of a message id delivered before
	deliveries  int
	deletes     int // acknowledged deletes
}

type fifoMsg struct {
	acked             bool
	ackID, ackSeq     string
	deliveries        int
	deliveredIDs      map[string]bool
	deliveredSeqs     map[string]bool
	marked            bool
	deletedInWindowAt time.Time // when a delete made within the visibility timeout was acknowledged
	lastReqStart      time.Time // when the request of the latest delivery started
}

type stdMsg struct {
	body              string
	attempts          int
	acked             bool
	ackID             string
	deliveredIDs      map[string]int
	deletedInWindowAt map[string]time.Time // by message id
	lastReqStart      map[string]time.Time // by message id
}

func newLedger(groups, perGroup int, strict bool, visibility time.Duration) *ledger {
	l := &ledger{strict: strict, visibility: visibility, prefix: make([]int, groups),
		std: map[string]*stdMsg{}, stdByID: map[string]*stdMsg{},
		abandonedFIFO: map[[2]int]int{}, abandonedStd: map[string]int{}}
	l.fifo = make([][]fifoMsg, groups)
	for g := range l.fifo {
		l.fifo[g] = make([]fifoMsg, perGroup)
	}
	return l
}

func fifoBody(g, k int) string { return fmt.Sprintf("F:%02d:%05d", g, k) }
func dupBody(g, k int) string  { return fmt.Sprintf("D:%02d:%05d", g, k) }
func dedupID(g, k int) string  { return fmt.Sprintf("g%02d-k%05d", g, k) }
func groupID(g int) string     { return fmt.Sprintf("group-%02d", g) }
func stdBody(p, n int) string  { return fmt.Sprintf("S:%02d:%06d", p, n) }
func parseFIFO(body string) (kind byte, g, k int, ok bool) {
	if len(body) < 3 || (body[0] != 'F' && body[0] != 'D') {
		return 0, 0, 0, false
	}
	if _, err := fmt.Sscanf(body[2:], "%d:%d", &g, &k); err != nil {
		return 0, 0, 0, false
	}
	return body[0], g, k, true
}

const maxViolations = 40

func (l *ledger) violate(format string, args ...any) {
	l.nViolations++
	if len(l.violations) < maxViolations {
		l.violations = append(l.violations, fmt.Sprintf(format, args...))
	}
}

// ---- producers' side

func (l *ledger) fifoAck(g, k int, id, seq string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := &l.fifo[g][k]
	if m.acked {
		if m.ackID != id || m.ackSeq != seq {
			l.violate("FIFO %s acknowledged twice with different ids: %s/%s then %s/%s", fifoBody(g, k), m.ackID, m.ackSeq, id, seq)
		}
		return
	}
	m.acked, m.ackID, m.ackSeq = true, id, seq
	l.fifoAcked++
}

// dupAck records the answer to a deliberate repeat of (g, k) with the same
// deduplication id.
func (l *ledger) dupAck(g, k int, id, seq, via string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := &l.fifo[g][k]
	l.dupSent++
	if id == m.ackID && seq == m.ackSeq {
		l.dupOK++
		return
	}
	l.violate("duplicate send of %s (same MessageDeduplicationId, through %s) returned MessageId %s SequenceNumber %s; the original got %s %s",
		fifoBody(g, k), via, id, seq, m.ackID, m.ackSeq)
}

func (l *ledger) stdAttempt(body string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.std[body]
	if m == nil {
		m = &stdMsg{body: body, deliveredIDs: map[string]int{}, deletedInWindowAt: map[string]time.Time{}, lastReqStart: map[string]time.Time{}}
		l.std[body] = m
	}
	m.attempts++
}

func (l *ledger) stdAck(body, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.std[body]
	if !m.acked {
		l.stdAcked++
	}
	m.acked, m.ackID = true, id
	l.stdByID[id] = m
}

func (l *ledger) setProducersDone() {
	l.mu.Lock()
	l.producersDone = true
	l.mu.Unlock()
}

func (l *ledger) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fifoAcked + l.stdAcked
}

// ---- consumers' side

// delivery is one received message as a consumer hands it to the ledger.
type delivery struct {
	g, k  int
	body  string
	id    string
	seq   string
	group string
}

// fifoReceived checks one FIFO receive answer (received at now by a request
// that started at reqStart, through inst) and marks its messages to be deleted;
// the consumer deletes them afterwards.
func (l *ledger) fifoReceived(msgs []types.Message, reqStart, now time.Time, inst string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	byGroup := map[int][]delivery{}
	var order []int
	for _, msg := range msgs {
		body := aws.ToString(msg.Body)
		kind, g, k, ok := parseFIFO(body)
		if !ok || g < 0 || g >= len(l.fifo) || k < 0 || k >= len(l.fifo[g]) {
			l.violate("FIFO queue delivered an unknown body %q (id %s) through %s", body, aws.ToString(msg.MessageId), inst)
			continue
		}
		if kind == 'D' {
			l.violate("FIFO queue delivered %q: a repeat with an already used MessageDeduplicationId was not deduplicated (id %s, through %s)",
				body, aws.ToString(msg.MessageId), inst)
			continue
		}
		d := delivery{g: g, k: k, body: body, id: aws.ToString(msg.MessageId),
			seq: msg.Attributes["SequenceNumber"], group: msg.Attributes["MessageGroupId"]}
		if d.group != groupID(g) {
			l.violate("%s delivered with MessageGroupId %q, want %q", body, d.group, groupID(g))
		}
		if _, seen := byGroup[g]; !seen {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], d)
	}
	for _, g := range order {
		ds := byGroup[g]
		// In send order; a message skipped between two must be gone (marked
		// to be deleted: its delete may have succeeded while an earlier
		// one's failed, so that one came back).
	check:
		for i := 1; i < len(ds); i++ {
			if ds[i].k <= ds[i-1].k {
				l.violate("order: one receive through %s returned group %d messages %s: not in send order", inst, g, ks(ds))
				break
			}
			for j := ds[i-1].k + 1; j < ds[i].k; j++ {
				if !l.fifo[g][j].marked {
					l.violate("order: one receive through %s returned group %d messages %s, skipping message %d which was never deleted (delivered %d times so far)",
						inst, g, ks(ds), j, l.fifo[g][j].deliveries)
					break check
				}
			}
		}
		first := ds[0].k
		if first > l.prefix[g] {
			j := l.prefix[g]
			l.violate("order: group %d message %d delivered through %s while message %d (delivered %d times so far, sent-acked %v) was never deleted: %s",
				g, first, inst, j, l.fifo[g][j].deliveries, l.fifo[g][j].acked, ks(ds))
		}
		for _, d := range ds {
			m := &l.fifo[g][d.k]
			l.deliveries++
			if m.deliveries > 0 {
				l.redelivered++
				if l.strict {
					l.violate("FIFO %s delivered %d times (through %s), though no visibility timeout could expire", d.body, m.deliveries+1, inst)
				}
			}
			if m.deliveries > 0 && now.Before(m.lastReqStart.Add(l.visibility-50*time.Millisecond)) {
				l.violate("FIFO %s delivered again through %s %s after the start of the receive that delivered it before: within its visibility timeout of %s",
					d.body, inst, now.Sub(m.lastReqStart).Round(time.Millisecond), l.visibility)
			}
			m.lastReqStart = reqStart
			if !m.deletedInWindowAt.IsZero() && reqStart.After(m.deletedInWindowAt) {
				l.violate("FIFO %s delivered again through %s %s after its delete was acknowledged within its visibility timeout",
					d.body, inst, reqStart.Sub(m.deletedInWindowAt).Round(time.Millisecond))
			}
			m.deliveries++
			if m.deliveredIDs == nil {
				m.deliveredIDs, m.deliveredSeqs = map[string]bool{}, map[string]bool{}
			}
			m.deliveredIDs[d.id] = true
			m.deliveredSeqs[d.seq] = true
			m.marked = true
		}
		for l.prefix[g] < len(l.fifo[g]) && l.fifo[g][l.prefix[g]].marked {
			l.prefix[g]++
		}
	}
}

func ks(ds []delivery) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprint(d.k))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// fifoDeleted records an acknowledged delete of (g, k), received by a
// request that started at reqStart.
func (l *ledger) fifoDeleted(g, k int, reqStart, ackAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := &l.fifo[g][k]
	l.deletes++
	if ackAt.Sub(reqStart) < l.visibility-100*time.Millisecond && m.deletedInWindowAt.IsZero() {
		m.deletedInWindowAt = ackAt
	}
}

func (l *ledger) stdReceived(msgs []types.Message, reqStart, now time.Time, inst string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, msg := range msgs {
		body, id := aws.ToString(msg.Body), aws.ToString(msg.MessageId)
		m := l.std[body]
		if m == nil {
			l.violate("Standard queue delivered %q (id %s) through %s, which was never sent", body, id, inst)
			continue
		}
		l.deliveries++
		if m.deliveredIDs[id] > 0 {
			l.stdDupDeliv++
			if last := m.lastReqStart[id]; now.Before(last.Add(l.visibility - 50*time.Millisecond)) {
				l.violate("Standard %s (id %s) delivered again through %s %s after the start of the receive that delivered it before: within its visibility timeout of %s",
					body, id, inst, now.Sub(last).Round(time.Millisecond), l.visibility)
			}
		}
		m.lastReqStart[id] = reqStart
		if at, ok := m.deletedInWindowAt[id]; ok && reqStart.After(at) {
			l.violate("Standard %s (id %s) delivered again through %s %s after its delete was acknowledged within its visibility timeout",
				body, id, inst, reqStart.Sub(at).Round(time.Millisecond))
		}
		m.deliveredIDs[id]++
	}
}

func (l *ledger) stdDeleted(body, id string, reqStart, ackAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deletes++
	m := l.std[body]
	if m == nil {
		return
	}
	if _, ok := m.deletedInWindowAt[id]; !ok && ackAt.Sub(reqStart) < l.visibility-100*time.Millisecond {
		m.deletedInWindowAt[id] = ackAt
	}
}

// abandoned records messages a consumer received and dropped without
// deleting them: they must be delivered again after their visibility
// timeout.
func (l *ledger) abandoned(fifo bool, msgs []types.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, msg := range msgs {
		body := aws.ToString(msg.Body)
		if fifo {
			if _, g, k, ok := parseFIFO(body); ok && g < len(l.fifo) && k < len(l.fifo[g]) {
				l.abandonedFIFO[[2]int{g, k}] = l.fifo[g][k].deliveries
			}
			continue
		}
		if m := l.std[body]; m != nil {
			l.abandonedStd[aws.ToString(msg.MessageId)] = m.deliveredIDs[aws.ToString(msg.MessageId)]
		}
	}
}

// ---- progress and verdict

// missing counts acknowledged sends not received yet.
func (l *ledger) missing() (fifo, std int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for g := range l.fifo {
		for k := range l.fifo[g] {
			m := &l.fifo[g][k]
			if m.acked && !m.deliveredIDs[m.ackID] {
				fifo++
			}
		}
	}
	for _, m := range l.std {
		if m.acked && m.deliveredIDs[m.ackID] == 0 {
			std++
		}
	}
	return fifo, std
}

// progress is a number that grows while the consumers get anywhere.
func (l *ledger) progress() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deliveries + l.deletes
}

func (l *ledger) done() bool {
	l.mu.Lock()
	pd := l.producersDone
	l.mu.Unlock()
	if !pd {
		return false
	}
	f, s := l.missing()
	return f == 0 && s == 0
}

// reporter is what verify needs of a test (testing.TB has it; the ledger's
// own test passes a recorder).
type reporter interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Failed() bool
}

// verify reports every broken promise as a test error and logs the counts.
func (l *ledger) verify(t reporter) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var notAcked, notDelivered, wrongID, wrongSeq, multi int
	var examples []string
	note := func(format string, args ...any) {
		if len(examples) < 20 {
			examples = append(examples, fmt.Sprintf(format, args...))
		}
	}
	for g := range l.fifo {
		lastSeq := ""
		for k := range l.fifo[g] {
			m := &l.fifo[g][k]
			if !m.acked {
				notAcked++
				note("FIFO %s was never acknowledged (the producers ran out of time)", fifoBody(g, k))
				continue
			}
			if lastSeq != "" && !seqLess(lastSeq, m.ackSeq) {
				l.violate("FIFO %s acknowledged with SequenceNumber %s, not above its predecessor's %s", fifoBody(g, k), m.ackSeq, lastSeq)
			}
			lastSeq = m.ackSeq
			if !m.deliveredIDs[m.ackID] {
				notDelivered++
				note("NOT RECEIVED: FIFO %s (MessageId %s, SequenceNumber %s) acknowledged but never received (deliveries with other ids: %d)",
					fifoBody(g, k), m.ackID, m.ackSeq, m.deliveries)
				continue
			}
			if len(m.deliveredIDs) > 1 {
				wrongID++
				note("FIFO %s delivered under several MessageIds %v; acknowledged as %s", fifoBody(g, k), keys(m.deliveredIDs), m.ackID)
			}
			if len(m.deliveredSeqs) != 1 || !m.deliveredSeqs[m.ackSeq] {
				wrongSeq++
				note("FIFO %s delivered with SequenceNumber %v; acknowledged with %s", fifoBody(g, k), keys(m.deliveredSeqs), m.ackSeq)
			}
			if m.deliveries > 1 {
				multi++
			}
		}
	}
	notBack := 0
	for gk, n := range l.abandonedFIFO {
		if l.fifo[gk[0]][gk[1]].deliveries <= n {
			notBack++
			note("FIFO %s, held by a consumer of the killed instance, was never delivered again", fifoBody(gk[0], gk[1]))
		}
	}
	for id, n := range l.abandonedStd {
		if m := l.stdByID[id]; m == nil || m.deliveredIDs[id] <= n {
			notBack++
			note("Standard message %s, held by a consumer of the killed instance, was never delivered again", id)
		}
	}
	var stdNotAcked, stdLost, stdUnackedDelivered, stdMulti int
	for _, m := range l.std {
		if !m.acked {
			stdNotAcked++
			if len(m.deliveredIDs) > 0 {
				stdUnackedDelivered++
			}
			note("Standard %s was never acknowledged (the producers ran out of time)", m.body)
			continue
		}
		if m.deliveredIDs[m.ackID] == 0 {
			stdLost++
			note("NOT RECEIVED: Standard %s (MessageId %s) acknowledged but never received (attempts %d, other ids delivered %v)",
				m.body, m.ackID, m.attempts, m.deliveredIDs)
		}
		if len(m.deliveredIDs) > 1 {
			stdMulti++
		}
	}
	t.Logf("ledger: FIFO acknowledged %d (%d groups), deliveries %d in all, FIFO redeliveries %d, FIFO messages delivered more than once %d; "+
		"Standard acknowledged %d, Standard duplicate deliveries %d, Standard bodies stored under several ids (ambiguous sends retried) %d; "+
		"deliberate duplicate sends %d (%d returned the original id), FIFO messages sent through two instances at once %d",
		l.fifoAcked, len(l.fifo), l.deliveries, l.redelivered, multi, l.stdAcked, l.stdDupDeliv, stdMulti, l.dupSent, l.dupOK, l.raced)
	if len(l.abandonedFIFO)+len(l.abandonedStd) > 0 {
		t.Logf("ledger: %d FIFO and %d Standard messages were dropped undeleted by consumers of a killed instance; %d of them never came back",
			len(l.abandonedFIFO), len(l.abandonedStd), notBack)
	}
	if notBack > 0 {
		t.Errorf("%d messages held (received, not deleted) by consumers of the killed instance never came back after their visibility timeout", notBack)
	}
	if notAcked+stdNotAcked > 0 {
		t.Errorf("%d FIFO and %d Standard messages were never acknowledged before the deadline (%d of the Standard ones were delivered all the same)",
			notAcked, stdNotAcked, stdUnackedDelivered)
	}
	if notDelivered+stdLost > 0 {
		t.Errorf("NOT RECEIVED: %d FIFO and %d Standard acknowledged sends were never received (lost, or never handed out: see the queue counts)", notDelivered, stdLost)
	}
	if wrongID+wrongSeq > 0 {
		t.Errorf("%d FIFO messages delivered under another MessageId, %d with another SequenceNumber than the send returned", wrongID, wrongSeq)
	}
	if l.strict && multi > 0 {
		t.Errorf("%d FIFO messages delivered more than once without any visibility timeout expiring", multi)
	}
	if l.nViolations > 0 {
		t.Errorf("%d violations (first %d):\n  %s", l.nViolations, len(l.violations), strings.Join(l.violations, "\n  "))
	}
	if len(examples) > 0 && t.Failed() {
		t.Logf("examples:\n  %s", strings.Join(examples, "\n  "))
	}
}

// seqLess compares FIFO sequence numbers (decimal strings of up to 128 bits).
func seqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
