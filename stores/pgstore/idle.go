package pgstore

import (
	"sync"
	"time"
)

// idleMemo remembers, per queue, that a claim found nothing to receive,
// so that the receives that follow it answer "nothing" without a round
// trip until something may have changed: a wake-up of the queue (a send, a
// release, a delete that frees a FIFO group, a move; from this instance at
// its commit, from others through LISTEN), the next visibility change the
// claim reported, or maxAge, whichever comes first.
//
// Consumers that poll an idle or drained queue are SQS's common case, and
// on PostgreSQL each empty receive cost two statements. SQS itself lets a
// short poll miss messages ("samples a subset of servers"); here a miss
// lasts at most as long as a notification takes, or maxAge when a change
// sends none (a lost notification, or a claim that found nothing because
// another transaction held the rows for a moment: a sweep, a move).
//
// Only claims on the database clock (Now zero) use it: a caller with its
// own clock (the conformance suite) moves time at will.
type idleMemo struct {
	maxAge time.Duration

	mu    sync.Mutex
	seq   uint64                // counts wake-ups
	all   uint64                // seq of the last wake-up of every queue
	state map[string]*idleState // by queue name
}

type idleState struct {
	woke uint64 // seq of the queue's last wake-up

	// The memo, when id is not empty: nothing to receive in incarnation id
	// until until (local clock); next is the claim's NextChange.
	id    string
	until time.Time
	next  time.Time
}

// idleStateLimit bounds the map: beyond it, the states with no live memo
// are dropped (see prune).
const idleStateLimit = 4096

func newIdleMemo(maxAge time.Duration) *idleMemo {
	return &idleMemo{maxAge: maxAge, state: map[string]*idleState{}}
}

// begin returns the wake-up count a claim starts from; pass it to remember.
func (m *idleMemo) begin() uint64 {
	if m.off() {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq
}

// answer reports whether the queue is known to have nothing to receive,
// and the NextChange to report with it.
func (m *idleMemo) answer(name, id string, now time.Time) (next time.Time, ok bool) {
	if m.off() {
		return time.Time{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.state[name]
	if st == nil || st.id != id || !now.Before(st.until) {
		return time.Time{}, false
	}
	return st.next, true
}

// remember records that a claim which began at wake-up count from found
// nothing, unless the queue (or every queue) was woken since: the claim
// may have read from before that change.
func (m *idleMemo) remember(name, id string, from uint64, start time.Time, next time.Time) {
	if m.off() {
		return
	}
	until := start.Add(m.maxAge)
	if !next.IsZero() {
		// next is on the database's clock; the local one stands in for it
		// (maxAge bounds what a skew can do).
		if d := next.Sub(start); d < m.maxAge {
			until = start.Add(max(d, 0))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.state[name]
	if st != nil && st.woke > from || m.all > from {
		return
	}
	if st == nil {
		m.prune(start)
		st = &idleState{}
		m.state[name] = st
	}
	st.id, st.until, st.next = id, until, next
}

// woke forgets what is known of the queue: it may have become receivable.
func (m *idleMemo) woke(name string) {
	if m.off() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	st := m.state[name]
	if st == nil {
		m.prune(time.Now())
		st = &idleState{}
		m.state[name] = st
	}
	st.woke, st.id = m.seq, ""
}

// wokeAll forgets everything (the listener reconnected: notifications may
// have been lost).
func (m *idleMemo) wokeAll() {
	if m.off() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	m.all = m.seq
	clear(m.state)
}

// prune drops, when the map is full, the states with no live memo. Their
// wake-up counts go with them, so no claim running now may remember its
// answer (as after wokeAll). Called with mu held.
func (m *idleMemo) prune(now time.Time) {
	if len(m.state) < idleStateLimit {
		return
	}
	m.all = m.seq
	for name, st := range m.state {
		if st.id == "" || !now.Before(st.until) {
			delete(m.state, name)
		}
	}
	if len(m.state) >= idleStateLimit {
		clear(m.state)
	}
}

// off: no memo (IdleMemo negative, or a Store built without one).
func (m *idleMemo) off() bool { return m == nil || m.maxAge <= 0 }
