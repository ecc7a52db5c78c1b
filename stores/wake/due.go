package wake

import "time"

// A long poll whose claim got nothing learns when the queue changes next (a
// delayed message's delay ends, a visibility timeout runs out: the claim's
// NextChange) and sleeps until then. That is the only place the time is
// known: the wake-up of a delayed send went to one poll, whose claim
// learned it, and the other polls claimed before the send. When that poll
// leaves first (its wait ends, or another message's wake-up finds it
// waiting), WakeAfter keeps the time here: a waiter of the queue is woken
// then, as for a send, instead of at its own check of the store.

// dueLimit bounds the queues with a wake-up due; past it WakeAfter keeps
// nothing new, which costs latency only (waiting polls check the store
// every repair interval).
const dueLimit = 4096

// due is one queue's wake-up to come.
type due struct {
	at    time.Time
	timer *time.Timer
}

// WakeAfter wakes one waiter of the queue after d, unless an earlier
// wake-up of the queue is already due: the poll that one wakes claims, and
// learns the next change itself.
func (h *Hub) WakeAfter(queue string, d time.Duration) {
	at := time.Now().Add(d)
	h.dueMu.Lock()
	defer h.dueMu.Unlock()
	if h.dueStopped {
		return
	}
	if w, ok := h.due[queue]; ok {
		if !at.Before(w.at) {
			return
		}
		w.timer.Stop() // if it fired meanwhile, fireDue finds another in its place
	} else if len(h.due) >= dueLimit {
		return
	}
	w := &due{at: at}
	w.timer = time.AfterFunc(max(d, 0), func() { h.fireDue(queue, w) })
	h.due[queue] = w
}

// fireDue delivers w's wake-up, if it is still the queue's.
func (h *Hub) fireDue(queue string, w *due) {
	h.dueMu.Lock()
	if h.due[queue] != w {
		h.dueMu.Unlock()
		return
	}
	delete(h.due, queue)
	h.dueMu.Unlock()
	h.stats.dueWakes.Add(1)
	h.deliver([]Event{{Queue: queue, Count: 1}})
}

// stopDue stops every wake-up to come; WakeAfter keeps none after it.
func (h *Hub) stopDue() {
	h.dueMu.Lock()
	defer h.dueMu.Unlock()
	h.dueStopped = true
	for q, w := range h.due {
		w.timer.Stop()
		delete(h.due, q)
	}
}
