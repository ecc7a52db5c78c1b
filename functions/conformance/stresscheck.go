package conformance

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/contract"
)

// checker records what the actors of a stress test were told and judges it.
// Time is the suite's clock, which stands still while the actors race, so a
// visibility window is judged exactly: a delivery at now holds its message
// (and, on a FIFO queue, its group) until now+timeout unless its holder
// gives it up first. A holder marks a hold given up before the call that
// gives it up (after the call returns another receiver may already have
// it), and marks a delete begun before the call, so every judgement errs on
// the side of the store: what the checker reports, a client could see.
type checker struct {
	fifo       bool
	maxReceive int // the source queue's maxReceiveCount

	mu          sync.Mutex
	n           int                // event counter: orders deliveries and delete starts
	sent        map[string]sentMsg // by MessageId
	bodies      map[string]string  // body -> MessageId
	msgHold     map[string]*hold   // by MessageId
	groupHold   map[string]*hold   // by MessageGroupId (FIFO)
	deliveries  []delivery         // in the order they returned
	deliveredAt map[string][]int   // MessageId -> event numbers of its deliveries
	deleteAt    map[string]int     // MessageId -> event number its successful delete began
	deleted     map[string]bool    // the delete returned success
	failures    []string
}

type sentMsg struct{ body, group, seq string }

// hold is one delivery's claim on a message or a group.
type hold struct {
	token    int // the delivery's event number
	until    time.Time
	released bool
}

type delivery struct {
	at   int
	now  time.Time
	msgs []contract.Message
}

func newChecker(fifo bool, maxReceive int) *checker {
	return &checker{fifo: fifo, maxReceive: maxReceive, sent: map[string]sentMsg{}, bodies: map[string]string{},
		msgHold: map[string]*hold{}, groupHold: map[string]*hold{}, deliveredAt: map[string][]int{},
		deleteAt: map[string]int{}, deleted: map[string]bool{}}
}

func (c *checker) failf(format string, args ...any) {
	c.mu.Lock()
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// sentOK records an acknowledged send.
func (c *checker) sentOK(id, body, group, seq string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.sent[id]; dup {
		c.failures = append(c.failures, fmt.Sprintf("MessageId %s acknowledged for two sends (%s)", id, body))
	}
	c.sent[id] = sentMsg{body, group, seq}
	c.bodies[body] = id
}

// delivered records a receive at now with visibility timeout vt and
// returns its token (for the holds it creates).
func (c *checker) delivered(now time.Time, vt time.Duration, ms []contract.Message) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	tok := c.n
	c.deliveries = append(c.deliveries, delivery{tok, now, ms})
	until := now.Add(vt)
	groups := map[string]bool{}
	for _, m := range ms {
		id := m.MessageId
		prior := len(c.deliveredAt[id])
		c.deliveredAt[id] = append(c.deliveredAt[id], tok)
		if c.deleted[id] {
			c.failures = append(c.failures, fmt.Sprintf("%s (%s) delivered after its delete succeeded", id, m.Body))
		}
		if h := c.msgHold[id]; h != nil && !h.released && h.until.After(now) {
			c.failures = append(c.failures, fmt.Sprintf("%s (%s) delivered at %s while in flight until %s (delivery %d)",
				id, m.Body, now.Format(time.TimeOnly), h.until.Format(time.TimeOnly), h.token))
		}
		if prior >= c.maxReceive {
			c.failures = append(c.failures, fmt.Sprintf("%s (%s) delivered a %d. time: past maxReceiveCount %d it should have moved to the DLQ",
				id, m.Body, prior+1, c.maxReceive))
		}
		if got := m.Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(prior+1) {
			c.failures = append(c.failures, fmt.Sprintf("%s (%s): ApproximateReceiveCount %q on its delivery number %d", id, m.Body, got, prior+1))
		}
		c.msgHold[id] = &hold{token: tok, until: until}
		if !c.fifo {
			continue
		}
		g := m.Attributes["MessageGroupId"]
		if groups[g] {
			continue
		}
		groups[g] = true
		if h := c.groupHold[g]; h != nil && !h.released && h.until.After(now) {
			c.failures = append(c.failures, fmt.Sprintf("group %s handed to delivery %d at %s while delivery %d holds it until %s",
				g, tok, now.Format(time.TimeOnly), h.token, h.until.Format(time.TimeOnly)))
		}
		c.groupHold[g] = &hold{token: tok, until: until}
	}
	return tok
}

// release gives up tok's hold on message id and, when group is set, on the
// group: call it before the call that makes them receivable again.
func (c *checker) release(tok int, id, group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.msgHold[id]; h != nil && h.token == tok {
		h.released = true
	}
	if h := c.groupHold[group]; group != "" && h != nil && h.token == tok {
		h.released = true
	}
}

// releaseGroup gives up tok's hold on a group (before its last delete: the
// message deleted stays held until it is gone).
func (c *checker) releaseGroup(tok int, group string) { c.release(tok, "", group) }

// deleting records that a delete of id begins.
func (c *checker) deleting(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.deleteAt[id] = c.n
}

func (c *checker) deletedOK(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted[id] {
		c.failures = append(c.failures, fmt.Sprintf("%s deleted twice with current receipts", id))
	}
	c.deleted[id] = true
}

// extended records a visibility change of tok's hold on id (and group).
func (c *checker) extended(tok int, id, group string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.msgHold[id]; h != nil && h.token == tok {
		h.until = until
	}
	if h := c.groupHold[group]; group != "" && h != nil && h.token == tok {
		h.until = until
	}
}

// checkOrder judges, once every send is known, that each FIFO delivery was
// the group's oldest messages: every earlier message of the group was in the
// same delivery before it, or its delete had begun, or it had been received
// maxReceiveCount times (so the claim moves it to the DLQ).
func (c *checker) checkOrder() {
	if !c.fifo {
		return
	}
	byGroup := map[string][]string{} // group -> MessageIds by sequence number
	for id, s := range c.sent {
		byGroup[s.group] = append(byGroup[s.group], id)
	}
	for _, ids := range byGroup {
		sort.Slice(ids, func(i, j int) bool { return seqLess(c.sent[ids[i]].seq, c.sent[ids[j]].seq) })
	}
	for _, d := range c.deliveries {
		inThis := map[string]bool{}
		lastSeq := map[string]string{}
		for _, m := range d.msgs {
			g := m.Attributes["MessageGroupId"]
			seq := m.Attributes["SequenceNumber"]
			if prev, ok := lastSeq[g]; ok && !seqLess(prev, seq) {
				c.failures = append(c.failures, fmt.Sprintf("delivery %d: group %s SequenceNumber %s after %s", d.at, g, seq, prev))
			}
			lastSeq[g] = seq
			for _, earlier := range byGroup[g] {
				if !seqLess(c.sent[earlier].seq, seq) {
					break
				}
				if inThis[earlier] {
					continue
				}
				if at, ok := c.deleteAt[earlier]; ok && at < d.at {
					continue
				}
				if c.receivedBefore(earlier, d.at) >= c.maxReceive {
					continue
				}
				c.failures = append(c.failures, fmt.Sprintf("delivery %d: %s (group %s, seq %s) delivered while the earlier %s (seq %s) was neither deleted nor moved",
					d.at, m.Body, g, seq, c.sent[earlier].body, c.sent[earlier].seq))
			}
			inThis[m.MessageId] = true
		}
	}
}

func (c *checker) receivedBefore(id string, at int) int {
	n := 0
	for _, x := range c.deliveredAt[id] {
		if x < at {
			n++
		}
	}
	return n
}

// checkDelivered judges what every delivery carried against what was sent.
func (c *checker) checkDelivered() {
	for _, d := range c.deliveries {
		for _, m := range d.msgs {
			s, ok := c.sent[m.MessageId]
			switch {
			case !ok:
				c.failures = append(c.failures, fmt.Sprintf("delivered %s (%q), which no acknowledged send returned", m.MessageId, m.Body))
			case s.body != m.Body || m.MD5OfBody != md5OfBody(m.Body):
				c.failures = append(c.failures, fmt.Sprintf("%s delivered with body %q (MD5 %s), sent %q", m.MessageId, m.Body, m.MD5OfBody, s.body))
			case c.fifo && (m.Attributes["SequenceNumber"] != s.seq || m.Attributes["MessageGroupId"] != s.group):
				c.failures = append(c.failures, fmt.Sprintf("%s delivered as group %s seq %s, sent as group %s seq %s",
					s.body, m.Attributes["MessageGroupId"], m.Attributes["SequenceNumber"], s.group, s.seq))
			}
		}
	}
}
