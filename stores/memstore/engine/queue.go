package engine

import (
	"time"

	"github.com/sluicehq/sluice/stores/rules"
)

// msg is a message in memory with its index positions.
//
// Every message of a queue is in exactly one of two partitions relative to
// queue.now: V (VisibleAt <= now; heaps vSeq and vLate) or P (VisibleAt >
// now; heap pend). The partition depends on time, so each operation first
// moves messages across (tx.advance). While a message is placed in a
// partition its record is never modified: mutations unplace, change, place.
type msg struct {
	rec    MessageRecord
	placed bool
	inV    bool
	iSeq   int // in queue.vSeq
	iLate  int // in queue.vLate
	iPend  int // in queue.pend
	iRet   int // in queue.ret
	g      *group
	prev   *msg // group list, by Seq
	next   *msg
}

// group is a FIFO message group: its messages in sequence order.
type group struct {
	id         string
	head, tail *msg
	iReady     int // in queue.ready
	busy       bool
}

type dedupEntry struct {
	key string
	rec *DedupRecord
	i   int
}

type attemptEntry struct {
	rec *AttemptRecord
	i   int
}

type queue struct {
	name string
	fifo bool
	rec  *QueueRecord // immutable; replaced on change
	next uint64       // next sequence number

	msgs     map[string]*msg
	vSeq     iheap[*msg] // visible, oldest (lowest Seq) first
	vLate    iheap[*msg] // visible, latest VisibleAt first (to find what time going back hides)
	pend     iheap[*msg] // not visible, earliest VisibleAt first
	ret      iheap[*msg] // all, earliest SentAt first (retention)
	pendRecv int64       // in P with ReceiveCount > 0: in flight
	pendNew  int64       // in P never received: delayed

	groups map[string]*group // FIFO only
	ready  iheap[*group]     // groups whose head is visible, by lessGroup

	dedup    map[string]*dedupEntry
	dedupExp iheap[*dedupEntry]
	attempts map[string]*attemptEntry
	attExp   iheap[*attemptEntry]

	now time.Time // the instant the V/P partition reflects
}

func newQueue(rec *QueueRecord) *queue {
	return &queue{
		name:     rec.Queue.Name,
		fifo:     rec.Queue.FIFO,
		rec:      rec,
		next:     rules.FirstSequence,
		msgs:     map[string]*msg{},
		vSeq:     iheap[*msg]{less: lessSeq, pos: func(m *msg) *int { return &m.iSeq }},
		vLate:    iheap[*msg]{less: lessLate, pos: func(m *msg) *int { return &m.iLate }},
		pend:     iheap[*msg]{less: lessVisible, pos: func(m *msg) *int { return &m.iPend }},
		ret:      iheap[*msg]{less: lessSent, pos: func(m *msg) *int { return &m.iRet }},
		groups:   map[string]*group{},
		ready:    iheap[*group]{less: lessGroup, pos: func(g *group) *int { return &g.iReady }},
		dedup:    map[string]*dedupEntry{},
		dedupExp: iheap[*dedupEntry]{less: lessDedup, pos: func(d *dedupEntry) *int { return &d.i }},
		attempts: map[string]*attemptEntry{},
		attExp:   iheap[*attemptEntry]{less: lessAttempt, pos: func(a *attemptEntry) *int { return &a.i }},
	}
}

func lessSeq(a, b *msg) bool { return a.rec.Seq < b.rec.Seq }

func lessLate(a, b *msg) bool { return a.rec.VisibleAt.After(b.rec.VisibleAt) }

func lessVisible(a, b *msg) bool {
	if !a.rec.VisibleAt.Equal(b.rec.VisibleAt) {
		return a.rec.VisibleAt.Before(b.rec.VisibleAt)
	}
	return a.rec.Seq < b.rec.Seq
}

func lessSent(a, b *msg) bool {
	if !a.rec.Message.SentAt.Equal(b.rec.Message.SentAt) {
		return a.rec.Message.SentAt.Before(b.rec.Message.SentAt)
	}
	return a.rec.Seq < b.rec.Seq
}

// lessGroup orders claimable groups as SQS serves them: by when their head
// became receivable (its VisibleAt: the send or the delay's end, or the end
// of its last visibility), then by the head's Seq. So a group whose message
// came back goes after the groups that were waiting. A ready group's head is
// placed, so its record, and the key, does not change while it is in the
// heap (a new head refreshes the group).
func lessGroup(a, b *group) bool { return lessVisible(a.head, b.head) }

func lessDedup(a, b *dedupEntry) bool { return a.rec.ExpiresAt.Before(b.rec.ExpiresAt) }

func lessAttempt(a, b *attemptEntry) bool { return a.rec.ExpiresAt.Before(b.rec.ExpiresAt) }

func newMsg(rec MessageRecord) *msg {
	return &msg{rec: rec, iSeq: -1, iLate: -1, iPend: -1, iRet: -1}
}

// place puts an unplaced message into V or P according to q.now.
func (q *queue) place(m *msg) {
	if m.placed {
		return
	}
	m.placed = true
	if !m.rec.VisibleAt.After(q.now) {
		m.inV = true
		q.vSeq.Push(m)
		q.vLate.Push(m)
	} else {
		m.inV = false
		q.pend.Push(m)
		if m.rec.Message.ReceiveCount > 0 {
			q.pendRecv++
		} else {
			q.pendNew++
		}
	}
	if m.g != nil {
		q.refresh(m.g)
	}
}

// unplace takes a message out of its partition.
func (q *queue) unplace(m *msg) {
	if !m.placed {
		return
	}
	if m.inV {
		q.vSeq.Remove(m)
		q.vLate.Remove(m)
	} else {
		q.pend.Remove(m)
		if m.rec.Message.ReceiveCount > 0 {
			q.pendRecv--
		} else {
			q.pendNew--
		}
	}
	m.placed, m.inV = false, false
	if m.g != nil {
		q.refresh(m.g)
	}
}

// ready reports whether a group can be claimed from now: its head is
// visible. A group whose head is in flight (or delayed) gives nothing; a
// group gives the run of visible messages from its head, so a message in
// flight further down stops the run but does not hold back the messages
// before it (they can be visible again after a visibility change).
func (g *group) ready() bool {
	return !g.busy && g.head != nil && g.head.inV
}

// refresh brings the group's membership of q.ready up to date.
func (q *queue) refresh(g *group) {
	in := g.iReady >= 0
	switch r := g.ready(); {
	case r && !in:
		q.ready.Push(g)
	case r && in:
		q.ready.Fix(g)
	case !r && in:
		q.ready.Remove(g)
	}
}

// index adds a new message to every index (not to the change list).
func (q *queue) index(m *msg) {
	q.msgs[m.rec.Message.ID] = m
	q.ret.Push(m)
	if q.fifo {
		q.attach(m)
	}
	q.place(m)
}

// unindex removes a message from every index.
func (q *queue) unindex(m *msg) {
	q.unplace(m)
	q.ret.Remove(m)
	if m.g != nil {
		q.detach(m)
	}
	delete(q.msgs, m.rec.Message.ID)
}

// attach links a message into its group in sequence order.
func (q *queue) attach(m *msg) {
	id := m.rec.Message.GroupID
	g := q.groups[id]
	if g == nil {
		g = &group{id: id, iReady: -1}
		q.groups[id] = g
	}
	m.g = g
	p := g.tail
	for p != nil && p.rec.Seq > m.rec.Seq {
		p = p.prev
	}
	m.prev = p
	if p == nil {
		m.next = g.head
		g.head = m
	} else {
		m.next = p.next
		p.next = m
	}
	if m.next == nil {
		g.tail = m
	} else {
		m.next.prev = m
	}
	q.refresh(g)
}

func (q *queue) detach(m *msg) {
	g := m.g
	if m.prev == nil {
		g.head = m.next
	} else {
		m.prev.next = m.next
	}
	if m.next == nil {
		g.tail = m.prev
	} else {
		m.next.prev = m.prev
	}
	m.prev, m.next, m.g = nil, nil, nil
	q.refresh(g)
	if g.head == nil && q.groups[g.id] == g {
		delete(q.groups, g.id)
	}
}

// nextChange is the earliest VisibleAt among messages not visible now.
func (q *queue) nextChange() time.Time {
	if q.pend.Len() == 0 {
		return time.Time{}
	}
	return q.pend.Top().rec.VisibleAt
}
