package service

import (
	"sync"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
)

// handOffs are the long polls of this instance that wait on each queue, for
// a send to claim for in its own store call (stores.MessageSendParams.HandOff)
// on a store that runs such claims (stores.HandOffRunner). The waiting
// receive then answers with the send's commit: no wake-up, no claim and no
// commit of its own.
type handOffs struct {
	mu      sync.Mutex
	waiting map[string][]*parkedPoll // by queue name, longest waiting first
}

// A parkedPoll is a long poll waiting on a queue, with its claim.
type parkedPoll struct {
	queue string
	claim stores.MessageClaimParams
	// listener is the poll's subscription to the hub: a send that takes
	// the poll marks it claiming, so that the send's wake-ups, for what the
	// poll does not take, go to the polls still waiting.
	listener *wake.Listener
	taken    bool // by a send (guarded by handOffs.mu); it answers on got
	// got carries, once taken, what the send's hand-off claimed: nil when
	// the store did not run it or the send failed.
	got chan *stores.MessageClaimResult
}

// park records a poll waiting on p's queue with p's claim and its
// subscription l.
func (h *handOffs) park(p *stores.MessageClaimParams, l *wake.Listener) *parkedPoll {
	pp := &parkedPoll{queue: p.QueueName, claim: *p, listener: l, got: make(chan *stores.MessageClaimResult, 1)}
	h.mu.Lock()
	if h.waiting == nil {
		h.waiting = map[string][]*parkedPoll{}
	}
	h.waiting[pp.queue] = append(h.waiting[pp.queue], pp)
	h.mu.Unlock()
	return pp
}

// unpark ends pp's wait; false when a send took it first, whose answer then
// comes on pp.got.
func (h *handOffs) unpark(pp *parkedPoll) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pp.taken {
		return false
	}
	h.remove(pp)
	return true
}

// take gives the longest waiting poll of queue to a send, or nil.
func (h *handOffs) take(queue string) *parkedPoll {
	h.mu.Lock()
	defer h.mu.Unlock()
	polls := h.waiting[queue]
	if len(polls) == 0 {
		return nil
	}
	pp := polls[0]
	pp.taken = true
	h.remove(pp)
	pp.listener.Claiming()
	return pp
}

func (h *handOffs) remove(pp *parkedPoll) {
	polls := h.waiting[pp.queue]
	for i, q := range polls {
		if q == pp {
			polls = append(polls[:i:i], polls[i+1:]...)
			break
		}
	}
	if len(polls) == 0 {
		delete(h.waiting, pp.queue)
	} else {
		h.waiting[pp.queue] = polls
	}
}
