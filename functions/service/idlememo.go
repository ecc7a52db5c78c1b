package service

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores/wake"
)

// idleMemo remembers, per queue, that a receive found nothing, so that the
// receives that follow answer "nothing" without a store call until
// something may have changed: a wake-up of the queue (from this instance
// or, through the transport, another; with trustWoken, only one that no
// waiting long poll here speaks for: wake.Hub.UnspokenSince), the next
// visibility change the claim reported (NextChange) or the end of the
// visibility of what a woken poll took since (receivedUntil), or maxAge,
// whichever comes first. It is off while the transport is degraded.
//
// Consumers polling an idle or drained queue are SQS's common case, and
// each empty receive costs a store round trip (on Firestore, a billed read).
// SQS itself lets a short poll miss messages ("samples a subset of
// servers"); here a miss lasts at most as long as a wake-up takes to
// arrive, or maxAge when a change sends none (a lost event, or a claim that
// found nothing because another transaction held the rows for a moment).
type idleMemo struct {
	maxAge     time.Duration
	hub        *wake.Hub
	trustWoken bool // see Config.TrustWokenPolls

	mu    sync.Mutex
	state map[string]idleState // by queue name
}

type idleState struct {
	id    string    // the queue incarnation it is about
	mark  uint64    // the hub's wake-up count when the claim began
	until time.Time // valid before this (service clock)
	next  time.Time // the claim's NextChange
}

// idleStateLimit bounds the map; past it expired states are dropped, and if
// that is not enough, all of them.
const idleStateLimit = 4096

func newIdleMemo(maxAge time.Duration, hub *wake.Hub, trustWoken bool) *idleMemo {
	return &idleMemo{maxAge: maxAge, hub: hub, trustWoken: trustWoken, state: map[string]idleState{}}
}

// wokeSince reports whether a wake-up since mark ends what the memo knows
// of the queue.
func (m *idleMemo) wokeSince(name string, mark uint64) bool {
	if m.trustWoken {
		return m.hub.UnspokenSince(name, mark)
	}
	return m.hub.WokeSince(name, mark)
}

func (m *idleMemo) on() bool { return m.maxAge > 0 && !m.hub.Degraded() }

// begin returns the mark a claim starts from; pass it to remember.
func (m *idleMemo) begin() uint64 { return m.hub.Mark() }

// answer reports whether the queue incarnation is known to have nothing to
// receive at now, and the NextChange to report with it.
func (m *idleMemo) answer(name, id string, now time.Time) (next time.Time, ok bool) {
	if !m.on() {
		return time.Time{}, false
	}
	m.mu.Lock()
	st, found := m.state[name]
	m.mu.Unlock()
	if !found || st.id != id || !now.Before(st.until) || m.wokeSince(name, st.mark) {
		return time.Time{}, false
	}
	return st.next, true
}

// forget drops what is known of the queue: a claim found messages there.
func (m *idleMemo) forget(name string) {
	m.mu.Lock()
	delete(m.state, name)
	m.mu.Unlock()
}

// receivedUntil notes that a claim took messages that come back at until,
// unless deleted: the memo ends then at the latest.
func (m *idleMemo) receivedUntil(name string, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.state[name]
	if !ok {
		return
	}
	if until.Before(st.until) {
		st.until = until
	}
	if st.next.IsZero() || until.Before(st.next) {
		st.next = until
	}
	m.state[name] = st
}

// remember records that a claim which began at mark, at start, found
// nothing, unless the queue was woken since: the claim may have read from
// before that change.
func (m *idleMemo) remember(name, id string, mark uint64, start, next time.Time) {
	if !m.on() || m.wokeSince(name, mark) {
		return
	}
	until := start.Add(m.maxAge)
	if !next.IsZero() && next.Before(until) {
		until = next
	}
	if !until.After(start) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.state) >= idleStateLimit {
		for k, st := range m.state {
			if !start.Before(st.until) {
				delete(m.state, k)
			}
		}
		if len(m.state) >= idleStateLimit {
			clear(m.state)
		}
	}
	m.state[name] = idleState{id: id, mark: mark, until: until, next: next}
}
