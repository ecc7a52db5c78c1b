package wake

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPublishTimeout bounds how long a request waits for its events to
// reach the transport. Past it the request answers anyway: the events may
// still go out, or be lost, which costs latency only.
const DefaultPublishTimeout = 2 * time.Second

// HubOptions configure a Hub.
type HubOptions struct {
	// Transport carries events to and from other instances; nil means this
	// process is the only instance (the in-memory and embedded stores).
	Transport Transport
	// PublishTimeout: see DefaultPublishTimeout (the default).
	PublishTimeout time.Duration
	Logger         *slog.Logger
}

// Hub fans events out to the long polls waiting in this process and
// exchanges them with other instances through its Transport. One Hub per
// process; it is safe for concurrent use.
type Hub struct {
	transport      Transport
	publishTimeout time.Duration
	log            *slog.Logger
	degraded       atomic.Bool

	subMu sync.Mutex
	subs  map[string]map[*subscription]struct{}

	// Wake-up counts, for callers that remember a queue was empty (the
	// service's idle memo): seq counts deliveries, woke[q] is the seq of
	// q's last one, unspoken[q] of q's last one that left a message
	// unspoken for (see deliver), all the seq of the last that concerned
	// every queue.
	seq      uint64
	all      uint64
	woke     map[string]uint64
	unspoken map[string]uint64

	pubMu   sync.Mutex
	pending *batch // events waiting for the next Publish of the transport
	sending bool   // a Publish of the transport runs

	lastWarn atomic.Int64 // UnixNano of the last publish failure logged

	dueMu      sync.Mutex
	due        map[string]*due // wake-ups to come, by queue (due.go)
	dueStopped bool

	stats hubCounters

	stopListen context.CancelFunc
	listenDone chan struct{}
	ready      chan struct{} // closed at the transport's first report
	readyOnce  sync.Once
	closeOnce  sync.Once
}

type subscription struct {
	ch      chan struct{}
	waiting bool // the poll waits (Listener.Waiting); otherwise it is claiming. Guarded by subMu.
}

// wokeLimit bounds the woke map; past it every remembered count is reset
// (as after a reconnect), which only makes memos look again.
const wokeLimit = 4096

// startWait bounds how long NewHub waits for the transport's first report.
const startWait = 10 * time.Second

// NewHub returns a Hub and starts listening on its transport, if any. It
// waits (a few seconds at most) until the transport listens or reports that
// it cannot yet, so that events published right after are heard.
func NewHub(opts HubOptions) *Hub {
	if opts.PublishTimeout <= 0 {
		opts.PublishTimeout = DefaultPublishTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Hub{
		transport:      opts.Transport,
		publishTimeout: opts.PublishTimeout,
		log:            opts.Logger,
		subs:           map[string]map[*subscription]struct{}{},
		woke:           map[string]uint64{},
		unspoken:       map[string]uint64{},
		due:            map[string]*due{},
		listenDone:     make(chan struct{}),
		ready:          make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stopListen = cancel
	if h.transport == nil {
		close(h.listenDone)
		return h
	}
	// Deaf until the transport says it listens: long polls check the store
	// more often meanwhile.
	h.degraded.Store(true)
	go func() {
		defer close(h.listenDone)
		err := h.transport.Listen(ctx, receiver{h})
		if err != nil && ctx.Err() == nil {
			h.log.Error("wake: transport stopped listening", "err", err)
			h.degraded.Store(true)
		}
		h.readyOnce.Do(func() { close(h.ready) })
	}()
	select {
	case <-h.ready:
	case <-time.After(startWait):
		h.log.Warn("wake: transport has not reported within " + startWait.String() + "; going on")
	}
	return h
}

// Close stops listening and closes the transport.
func (h *Hub) Close() error {
	var err error
	h.closeOnce.Do(func() {
		h.stopDue()
		h.stopListen()
		<-h.listenDone
		if h.transport != nil {
			err = h.transport.Close()
		}
	})
	return err
}

// Subscribe returns a channel that receives, without blocking the sender
// and possibly coalesced, when the queue may have become receivable. Call
// cancel when done. It is Listen for a caller that never says it waits.
func (h *Hub) Subscribe(queue string) (hint <-chan struct{}, cancel func()) {
	l := h.Listen(queue)
	return l.C, l.Cancel
}

// A Listener is a long poll's subscription to a queue's wake-ups. A poll
// subscribes before it claims, so that a send during the claim still wakes
// it, and says when it starts waiting: a wake-up goes to waiting polls
// first, which act on it at once, and only those speak for its messages
// (see deliver).
type Listener struct {
	C <-chan struct{} // receives a hint when the queue may have become receivable

	h     *Hub
	queue string
	sub   *subscription
	once  sync.Once
}

// Listen subscribes to the queue's wake-ups. Call Cancel when done.
func (h *Hub) Listen(queue string) *Listener {
	sub := &subscription{ch: make(chan struct{}, 1)}
	h.subMu.Lock()
	set := h.subs[queue]
	if set == nil {
		set = map[*subscription]struct{}{}
		h.subs[queue] = set
	}
	set[sub] = struct{}{}
	h.subMu.Unlock()
	return &Listener{C: sub.ch, h: h, queue: queue, sub: sub}
}

// Waiting says that the poll has claimed and now waits for a hint.
func (l *Listener) Waiting() {
	l.h.subMu.Lock()
	l.sub.waiting = true
	l.h.subMu.Unlock()
}

// Claiming says that the poll claims again (or another claims for it): an
// event goes to waiting polls before it.
func (l *Listener) Claiming() {
	l.h.subMu.Lock()
	l.sub.waiting = false
	l.h.subMu.Unlock()
}

// Cancel ends the subscription. A hint it holds, which its poll will not
// act on (it is done, say with messages its claim found first), goes to
// another poll: an event wakes as few polls as it has messages, so a poll
// would otherwise sleep beside a receivable message.
func (l *Listener) Cancel() {
	l.once.Do(func() {
		h := l.h
		h.subMu.Lock()
		defer h.subMu.Unlock()
		set := h.subs[l.queue]
		if set == nil {
			return
		}
		delete(set, l.sub)
		if len(set) == 0 {
			delete(h.subs, l.queue)
		}
		select {
		case <-l.sub.ch:
			h.passOn(l.queue, set)
		default:
		}
	})
}

// wake puts a hint in the channel of one subscription of the set that has
// none pending, a waiting one if it can, and says whether it did and to a
// waiting one. Call with subMu held.
func (h *Hub) wake(set map[*subscription]struct{}) (woke, waiting bool) {
	for _, want := range []bool{true, false} {
		for sub := range set {
			if sub.waiting != want {
				continue
			}
			select {
			case sub.ch <- struct{}{}:
				h.stats.woken.Add(1)
				return true, want
			default:
			}
		}
	}
	return false, false
}

// passOn hands a wake-up of the queue that its poll will not act on to
// another poll of the set, or, when no waiting poll takes it, counts the
// queue as woken: nobody waiting speaks for its message any more. Call with
// subMu held.
func (h *Hub) passOn(queue string, set map[*subscription]struct{}) {
	if _, waiting := h.wake(set); !waiting {
		h.markWoken(queue, false)
	}
}

// markWoken counts a delivery that concerns the queue, spoken for or not.
// Call with subMu held.
func (h *Hub) markWoken(queue string, spoken bool) {
	h.seq++
	if len(h.woke) >= wokeLimit || len(h.unspoken) >= wokeLimit {
		clear(h.woke)
		clear(h.unspoken)
		h.all = h.seq
	}
	h.woke[queue] = h.seq
	if !spoken {
		h.unspoken[queue] = h.seq
	}
}

// Unclaimed hands on a wake-up that a waiter of the queue received but will
// not act on after all (its claim failed): to another waiter, or else the
// queue counts as woken.
func (h *Hub) Unclaimed(queue string) {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	h.passOn(queue, h.subs[queue])
}

// Degraded reports whether the transport knows it may be missing other
// instances' events; long polls then check the store more often.
func (h *Hub) Degraded() bool { return h.degraded.Load() }

// Mark returns the current wake-up count, to pass to WokeSince later.
func (h *Hub) Mark() uint64 {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	return h.seq
}

// WokeSince reports whether the queue may have become receivable since
// Mark returned mark.
func (h *Hub) WokeSince(queue string, mark uint64) bool {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	return h.all > mark || h.woke[queue] > mark
}

// UnspokenSince is WokeSince without the deliveries whose every message a
// waiting poll here speaks for (see deliver): whether the queue may hold a
// message that no poll here is about to claim.
func (h *Hub) UnspokenSince(queue string, mark uint64) bool {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	return h.all > mark || h.unspoken[queue] > mark
}

// Publish wakes the waiters here at once, then hands the events to the
// transport and waits until it accepted them, or until the publish timeout.
// Concurrent calls share transport publishes: while one runs, the events of
// the others gather into the next. Call it after the commit that made the
// messages receivable and before answering the request, so that nothing
// depends on work after the response (a frozen or throttled instance).
func (h *Hub) Publish(ctx context.Context, events ...Event) {
	if len(events) == 0 {
		return
	}
	h.stats.published.Add(uint64(len(events)))
	h.deliver(events)
	if h.transport == nil {
		return
	}
	if q, ok := h.transport.(Quieter); ok && q.Quiet() {
		return
	}
	h.pubMu.Lock()
	if h.pending == nil {
		h.pending = newBatch()
	}
	b := h.pending
	b.add(events)
	h.pubMu.Unlock()

	timer := time.NewTimer(h.publishTimeout)
	defer timer.Stop()
	lead := b.lead
	for {
		h.pubMu.Lock()
		if !h.sending && h.pending == b {
			h.sending, h.pending = true, nil
			h.pubMu.Unlock()
			h.send(ctx, b)
			h.pubMu.Lock()
			h.sending = false
			if next := h.pending; next != nil {
				next.wakeLeader() // one of its callers sends it
			}
			h.pubMu.Unlock()
			return
		}
		h.pubMu.Unlock()
		select {
		case <-b.done:
			return
		case <-lead:
			lead = nil // once: another caller may have taken the lead
		case <-timer.C:
			return
		}
	}
}

func (h *Hub) send(ctx context.Context, b *batch) {
	defer close(b.done)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.publishTimeout)
	defer cancel()
	if err := h.transport.Publish(ctx, b.events()); err != nil {
		h.stats.publishFailures.Add(1)
		now := time.Now().UnixNano()
		if last := h.lastWarn.Load(); now-last > int64(10*time.Second) && h.lastWarn.CompareAndSwap(last, now) {
			h.log.Warn("wake: publish failed; other instances' long polls find out at their next check", "err", err)
		}
	}
}

// deliver wakes Count polls of each event's queue (all for Count 0),
// waiting ones first (those claiming act on a hint once their claim is
// done). Polls are tried in map order, so who is woken varies. One whose
// channel already holds a hint does not count: that hint is for an earlier
// event, and two messages need two receivers. When Count waiting polls were
// woken, each of the event's messages has a poll here that claims at once
// (or passes the wake-up on: Unclaimed, and Cancel), so the event counts
// for WokeSince but not for UnspokenSince.
func (h *Hub) deliver(events []Event) {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	for _, ev := range events {
		set := h.subs[ev.Queue]
		if ev.Count == 0 {
			h.stats.woken.Add(uint64(wakeEvery(set)))
			h.markWoken(ev.Queue, false)
			continue
		}
		spoken := true
		for range ev.Count {
			woke, waiting := h.wake(set)
			if !woke {
				spoken = false
				break
			}
			spoken = spoken && waiting
		}
		h.markWoken(ev.Queue, spoken)
	}
}

// wakeAll wakes every waiter of every queue: events may have been lost.
func (h *Hub) wakeAll() {
	h.stats.wakeAlls.Add(1)
	h.subMu.Lock()
	defer h.subMu.Unlock()
	h.seq++
	h.all = h.seq
	clear(h.woke)
	clear(h.unspoken)
	for _, set := range h.subs {
		wakeEvery(set)
	}
}

// wakeEvery puts a hint in the channel of every subscription of the set
// that has none pending, and says how many. Call with subMu held.
func wakeEvery(set map[*subscription]struct{}) int {
	n := 0
	for sub := range set {
		select {
		case sub.ch <- struct{}{}:
			n++
		default:
		}
	}
	return n
}

// receiver is the Hub as its transport sees it.
type receiver struct{ h *Hub }

func (r receiver) Deliver(events []Event) {
	r.h.stats.received.Add(uint64(len(events)))
	r.h.deliver(events)
}

func (r receiver) Degraded(degraded bool) {
	first := false
	r.h.readyOnce.Do(func() { close(r.h.ready); first = true })
	was := r.h.degraded.Swap(degraded)
	switch {
	case degraded && (!was || first):
		r.h.log.Warn("wake: transport degraded; long polls check the store more often")
		// Events may have been lost already, and the polls asleep now
		// would keep their long sleep: each looks once and sleeps again
		// at the degraded pace.
		r.h.wakeAll()
	case !degraded && was:
		if !first {
			r.h.log.Info("wake: transport recovered")
		}
		r.h.wakeAll()
	}
}

// batch is the events of one transport publish, merged by queue.
type batch struct {
	counts map[string]int // 0: every waiter
	order  []string
	done   chan struct{} // closed when published (or failed)
	lead   chan struct{} // closed when one of its callers should send it
	led    bool
}

func newBatch() *batch {
	return &batch{counts: map[string]int{}, done: make(chan struct{}), lead: make(chan struct{})}
}

func (b *batch) add(events []Event) {
	for _, ev := range events {
		prev, ok := b.counts[ev.Queue]
		switch {
		case !ok:
			b.order = append(b.order, ev.Queue)
			b.counts[ev.Queue] = ev.Count
		case prev == 0 || ev.Count == 0:
			b.counts[ev.Queue] = 0
		default:
			b.counts[ev.Queue] = prev + ev.Count
		}
	}
}

func (b *batch) events() []Event {
	out := make([]Event, len(b.order))
	for i, q := range b.order {
		out[i] = Event{Queue: q, Count: b.counts[q]}
	}
	return out
}

func (b *batch) wakeLeader() {
	if !b.led {
		b.led = true
		close(b.lead)
	}
}
