package service

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
	"github.com/sluicehq/sluice/stores/wake"
)

// handOffs are the long polls of this instance that wait on each queue
// incarnation, for a send to claim for in its own store call
// (stores.MessageSendParams.HandOff) on a store that runs such claims
// (stores.Traits.HandOffs). The waiting receive then answers with the
// send's commit: no wake-up, no claim and no commit of its own.
type handOffs struct {
	mu      sync.Mutex
	waiting map[handOffKey][]*parkedPoll // longest waiting first
}

type handOffKey struct{ name, id string }

// A parkedPoll is a long poll waiting on a queue, with its claim.
type parkedPoll struct {
	key   handOffKey
	claim stores.MessageClaimParams
	// listener is the poll's subscription to the hub: a send that takes
	// the poll marks it claiming, so that the send's wake-ups, for what the
	// poll does not take, go to the polls still waiting.
	listener *wake.Listener
	state    pollState // guarded by handOffs.mu
	// got carries, once answered, what the send's hand-off claimed: nil
	// when the store did not run it or the send failed.
	got chan *stores.MessageClaimResult
}

type pollState int

const (
	parked   pollState = iota // waiting, for any send to take
	taken                     // a send holds its claim
	answered                  // the send put its answer on got
	gone                      // its request ended while a send held it
)

// park records a poll waiting on p's queue with p's claim and its
// subscription l.
func (h *handOffs) park(p *stores.MessageClaimParams, l *wake.Listener) *parkedPoll {
	pp := &parkedPoll{key: handOffKey{p.QueueName, p.QueueID}, claim: *p, listener: l, got: make(chan *stores.MessageClaimResult, 1)}
	h.mu.Lock()
	if h.waiting == nil {
		h.waiting = map[handOffKey][]*parkedPoll{}
	}
	h.waiting[pp.key] = append(h.waiting[pp.key], pp)
	h.mu.Unlock()
	return pp
}

// unpark ends pp's wait; false when a send took it first, whose answer then
// comes on pp.got (await).
func (h *handOffs) unpark(pp *parkedPoll) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pp.state != parked {
		return false
	}
	h.remove(pp)
	return true
}

// take gives the longest waiting poll of the queue incarnation to a send,
// or nil.
func (h *handOffs) take(name, id string) *parkedPoll {
	h.mu.Lock()
	defer h.mu.Unlock()
	polls := h.waiting[handOffKey{name, id}]
	if len(polls) == 0 {
		return nil
	}
	pp := polls[0]
	pp.state = taken
	h.remove(pp)
	pp.listener.Claiming()
	return pp
}

// answer gives pp the send's answer; false when its request ended before,
// and nobody will read it.
func (h *handOffs) answer(pp *parkedPoll, res *stores.MessageClaimResult) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pp.state == gone {
		return false
	}
	pp.state = answered
	pp.got <- res
	return true
}

// await is the answer of the send that took pp, or, when ctx ends first,
// nil and ctx's error: pp is then gone, and the send releases what it took
// for it.
func (h *handOffs) await(ctx context.Context, pp *parkedPoll) (*stores.MessageClaimResult, error) {
	select {
	case res := <-pp.got:
		return res, nil
	case <-ctx.Done():
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if pp.state == answered {
		return <-pp.got, nil
	}
	pp.state = gone
	return nil, ctx.Err()
}

func (h *handOffs) remove(pp *parkedPoll) {
	polls := h.waiting[pp.key]
	for i, q := range polls {
		if q == pp {
			polls = append(polls[:i:i], polls[i+1:]...)
			break
		}
	}
	if len(polls) == 0 {
		delete(h.waiting, pp.key)
	} else {
		h.waiting[pp.key] = polls
	}
}

// offersHandOffs says whether a long poll with claim p waits for the sends
// of this instance to claim for it: on a store that runs such claims, for
// a claim without an attempt id (whose replay is the store's general path)
// or a redrive (which moves messages to another queue).
func (s *Service) offersHandOffs(p *stores.MessageClaimParams) bool {
	return s.traits.HandOffs && p.AttemptID == "" && rules.RedriveTarget(p.Redrive, p.QueueName) == ""
}

// handOffFor takes the poll waiting longest on q for a send whose messages
// are msgs and gives its claim to params, for the send to run, or returns
// nil when no poll waits or every message is delayed. The caller answers
// the poll (answerHandOff), whatever happens.
func (s *Service) handOffFor(q *stores.Queue, msgs []stores.NewMessage, params *stores.MessageSendParams) *parkedPoll {
	if !s.traits.HandOffs || !slices.ContainsFunc(msgs, func(m stores.NewMessage) bool { return m.Delay <= 0 }) {
		return nil
	}
	pp := s.handOffs.take(q.Name, q.ID)
	if pp == nil {
		return nil
	}
	c := pp.claim
	c.Now = params.Now
	c.Token = newToken(c.Now)
	params.HandOff = &c
	return pp
}

// handOffSendTimeout bounds a send that carries a hand-off: it runs to its
// end even when its own client leaves, since the claim in it is a poll's.
const handOffSendTimeout = 30 * time.Second

// answerHandOff gives pp, taken for params' send, what the send's claim
// took (nothing when the send failed), and says how many of the send's
// own messages went to the poll: they need no wake-up. When the poll's
// request ended meanwhile, what the claim took is made visible again.
func (s *Service) answerHandOff(ctx context.Context, q *stores.Queue, pp *parkedPoll, params *stores.MessageSendParams, res *stores.MessageSendResult, err error) int {
	var handed *stores.MessageClaimResult
	if err == nil {
		handed = res.HandedOff
	}
	if handed == nil {
		s.handOffs.answer(pp, nil)
		return 0
	}
	sent := map[string]bool{}
	for _, r := range res.Results {
		if !r.Duplicate {
			sent[r.MessageID] = true
		}
	}
	if !s.handOffs.answer(pp, handed) {
		s.releaseHandedOff(params.HandOff, handed.Messages, sent)
		return 0
	}
	s.wakeAfterClaim(ctx, params.HandOff, handed)
	n := 0
	for _, m := range handed.Messages {
		if sent[m.ID] {
			n++
		}
	}
	switch {
	case len(handed.Messages) == 0:
	case n == len(handed.Messages) && !handed.Contended && handed.Redriven == 0:
		// It took only what the send made receivable, which no receive
		// could have found before: what the idle memo knows of the queue
		// still holds, until those messages come back.
		s.idle.receivedUntil(q.Name, s.wallNow().Add(max(params.HandOff.VisibilityTimeout, 0)))
	default:
		s.idle.forget(q.Name)
	}
	return n
}

// releaseHandedOff makes msgs, claimed by claim for a poll whose request
// ended before it got them, visible again, as if nobody had claimed them
// (but for their receive count), and wakes polls for those that were not
// in sent (the send that claimed them wakes polls for its own).
func (s *Service) releaseHandedOff(claim *stores.MessageClaimParams, msgs []stores.ClaimedMessage, sent map[string]bool) {
	if len(msgs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handOffSendTimeout)
	defer cancel()
	others := 0
	for _, m := range msgs {
		_, err := s.store.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{
			QueueName: claim.QueueName, QueueID: claim.QueueID, MessageID: m.ID, Token: m.Token, Locator: m.Locator,
			Timeout: 0, MaxSinceReceive: contract.MaxVisibilityFromReceive, Now: s.now(),
		})
		if err != nil {
			s.log.Warn("releasing a message claimed for a receive that had ended", "queue", claim.QueueName, "message", m.ID, "error", err)
			continue
		}
		if !sent[m.ID] {
			others++
		}
	}
	if others > 0 {
		s.publish(ctx, wake.Event{Queue: claim.QueueName, Count: others})
	}
}
