package wake

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func drain(chans []<-chan struct{}) int {
	n := 0
	for _, ch := range chans {
		select {
		case <-ch:
			n++
		default:
		}
	}
	return n
}

// An event of Count n reaches n of the queue's waiters (one already holding
// a hint counts), Count 0 reaches all, and other queues' waiters none.
func TestPublishWakesCountedWaiters(t *testing.T) {
	h := NewHub(HubOptions{})
	defer h.Close()
	var chans []<-chan struct{}
	for range 4 {
		ch, cancel := h.Subscribe("q")
		defer cancel()
		chans = append(chans, ch)
	}
	other, cancel := h.Subscribe("other")
	defer cancel()
	ctx := context.Background()
	h.Publish(ctx, Event{Queue: "q", Count: 1})
	if got := drain(chans); got != 1 {
		t.Errorf("count 1: %d waiters woken", got)
	}
	h.Publish(ctx, Event{Queue: "q", Count: 2})
	h.Publish(ctx, Event{Queue: "q", Count: 2}) // two messages more: two more receivers
	if got := drain(chans); got != 4 {
		t.Errorf("count 2 twice: %d waiters woken, want 4 (a waiter holding a hint does not count)", got)
	}
	h.Publish(ctx, Event{Queue: "q"})
	if got := drain(chans); got != 4 {
		t.Errorf("count 0: %d of 4 waiters woken", got)
	}
	for range 50 { // waiters are tried in map order: try many orders
		h.Publish(ctx, Event{Queue: "q", Count: 1})
		h.Publish(ctx, Event{Queue: "q", Count: 1}) // the first one's waiter has not run yet
		if got := drain(chans); got != 2 {
			t.Fatalf("two events of 1: %d waiters woken, want 2", got)
		}
	}
	h.Publish(ctx, Event{Queue: "q", Count: 10})
	if got := drain(chans); got != 4 {
		t.Errorf("count 10 of 4: %d woken", got)
	}
	select {
	case <-other:
		t.Error("an event of q reached a waiter of another queue")
	default:
	}
}

// A waiter that stops with a wake-up it did not act on passes it to
// another waiter of the queue: an event of Count 1 woke only it, and the
// message would otherwise wait beside a sleeping poll. One that acted on
// its wake-up passes nothing on.
func TestCancelPassesAnUnusedWakeUpOn(t *testing.T) {
	h := NewHub(HubOptions{})
	defer h.Close()
	ctx := context.Background()
	// woken subscribes two waiters, publishes an event of 1 and returns
	// the woken one first.
	woken := func() (hinted, other <-chan struct{}, cancelHinted, cancelOther func()) {
		a, cancelA := h.Subscribe("q")
		b, cancelB := h.Subscribe("q")
		h.Publish(ctx, Event{Queue: "q", Count: 1})
		if len(a) == 1 {
			return a, b, cancelA, cancelB
		}
		if len(b) != 1 {
			t.Fatal("an event of 1 woke nobody")
		}
		return b, a, cancelB, cancelA
	}
	for range 50 { // waiters are tried in map order: try many orders
		_, other, cancelHinted, cancelOther := woken()
		cancelHinted() // stops without reading its wake-up
		if len(other) != 1 {
			t.Fatal("a wake-up left unread at cancel was not passed on")
		}
		cancelOther()

		hinted, other, cancelHinted, cancelOther := woken()
		<-hinted // acts on it
		cancelHinted()
		if len(other) != 0 {
			t.Fatal("a wake-up that was acted on was passed on")
		}
		cancelOther()
	}
}

func TestMarkAndWokeSince(t *testing.T) {
	h := NewHub(HubOptions{})
	defer h.Close()
	m := h.Mark()
	if h.WokeSince("q", m) {
		t.Fatal("woken before any event")
	}
	h.Publish(context.Background(), Event{Queue: "other", Count: 1})
	if h.WokeSince("q", m) {
		t.Fatal("an event of another queue counted")
	}
	h.Publish(context.Background(), Event{Queue: "q", Count: 1})
	if !h.WokeSince("q", m) || h.WokeSince("q", h.Mark()) {
		t.Fatal("WokeSince does not follow the event")
	}
	m = h.Mark()
	receiver{h}.Degraded(true)
	receiver{h}.Degraded(false) // recovered: events may have been lost
	if !h.WokeSince("q", m) || !h.WokeSince("never-seen", m) {
		t.Fatal("a recovery does not count as a wake-up of every queue")
	}
}

// A wake-up that reached as many waiting polls as its event has messages
// does not count for UnspokenSince (each message has a poll that claims it
// at once), though it does for WokeSince; one that reached fewer does, so does one that reached a poll still
// claiming, and so does one whose poll will not act on it and has no
// waiting poll to pass it to. Waiting polls are woken first.
func TestSpokenForWakeUpsDoNotCount(t *testing.T) {
	h := NewHub(HubOptions{})
	defer h.Close()
	ctx := context.Background()
	w := h.Listen("q")
	defer w.Cancel()
	w.Waiting()

	m := h.Mark()
	h.Publish(ctx, Event{Queue: "q", Count: 1})
	if h.UnspokenSince("q", m) {
		t.Error("a message its woken waiting poll speaks for counted")
	}
	if !h.WokeSince("q", m) {
		t.Error("WokeSince left out a message a woken waiting poll speaks for")
	}
	h.Publish(ctx, Event{Queue: "q", Count: 1}) // the poll's hint is still pending
	if !h.UnspokenSince("q", m) {
		t.Error("a message no poll speaks for did not count")
	}
	<-w.C

	m = h.Mark()
	h.Publish(ctx, Event{Queue: "q", Count: 2})
	if !h.UnspokenSince("q", m) {
		t.Error("an event of two messages that woke one poll did not count")
	}
	<-w.C

	m = h.Mark()
	h.Publish(ctx, Event{Queue: "q"})
	if !h.UnspokenSince("q", m) {
		t.Error("an event for every poll did not count")
	}
	<-w.C

	// A poll still claiming is woken only when no waiting poll is free, and
	// does not speak for the message.
	claiming := h.Listen("q")
	m = h.Mark()
	h.Publish(ctx, Event{Queue: "q", Count: 1})
	if len(w.C) != 1 || len(claiming.C) != 0 || h.UnspokenSince("q", m) {
		t.Errorf("waiting poll woken %v, claiming poll woken %v, counted %v; want true, false, false",
			len(w.C) == 1, len(claiming.C) == 1, h.UnspokenSince("q", m))
	}
	h.Publish(ctx, Event{Queue: "q", Count: 1})
	if len(claiming.C) != 1 || !h.UnspokenSince("q", m) {
		t.Errorf("with the waiting poll's hint pending: claiming poll woken %v, counted %v; want true, true",
			len(claiming.C) == 1, h.UnspokenSince("q", m))
	}
	<-w.C
	<-claiming.C
	claiming.Cancel()

	// The woken poll, done waiting, claims and fails: another waiting poll
	// takes the wake-up; that one cancels without acting on it, and with
	// nobody left the queue counts as woken.
	w.Cancel()
	a, b := h.Listen("q"), h.Listen("q")
	a.Waiting()
	b.Waiting()
	m = h.Mark()
	h.Publish(ctx, Event{Queue: "q", Count: 1})
	woken, other := a, b
	select {
	case <-a.C:
	case <-b.C:
		woken, other = b, a
	}
	woken.Cancel()
	h.Unclaimed("q")
	if len(other.C) != 1 {
		t.Error("an unclaimed wake-up was not passed to the other poll")
	}
	if h.UnspokenSince("q", m) {
		t.Error("an unclaimed wake-up passed to another waiting poll counted")
	}
	other.Cancel()
	if !h.UnspokenSince("q", m) {
		t.Error("a wake-up whose poll cancelled with nobody to pass it to did not count")
	}
	m = h.Mark()
	h.Unclaimed("q")
	if !h.UnspokenSince("q", m) {
		t.Error("an unclaimed wake-up with no poll did not count")
	}
}

// slowTransport records its publishes; each takes a while, so that others
// arrive meanwhile.
type slowTransport struct {
	mu      sync.Mutex
	batches [][]Event
	running atomic.Int32
	overlap atomic.Bool
	fail    bool
}

func (s *slowTransport) Publish(ctx context.Context, evs []Event) error {
	if s.running.Add(1) > 1 {
		s.overlap.Store(true)
	}
	defer s.running.Add(-1)
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	s.batches = append(s.batches, evs)
	s.mu.Unlock()
	if s.fail {
		return errors.New("broker down")
	}
	return nil
}

func (s *slowTransport) Listen(ctx context.Context, r Receiver) error {
	r.Degraded(false)
	<-ctx.Done()
	return nil
}

func (s *slowTransport) Close() error { return nil }

// Concurrent publishes share transport publishes, one at a time, and every
// event reaches the transport with its counts added up by queue.
func TestPublishesCoalesce(t *testing.T) {
	tr := &slowTransport{}
	h := NewHub(HubOptions{Transport: tr})
	defer h.Close()
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { h.Publish(context.Background(), Event{Queue: "q", Count: 1}) })
	}
	wg.Wait()
	if tr.overlap.Load() {
		t.Error("the transport was called concurrently")
	}
	total := 0
	for _, b := range tr.batches {
		for _, ev := range b {
			if ev.Queue != "q" {
				t.Errorf("event of queue %q", ev.Queue)
			}
			total += ev.Count
		}
	}
	if total != 50 {
		t.Errorf("the transport carried a count of %d, want 50", total)
	}
	if len(tr.batches) >= 50 || len(tr.batches) < 1 {
		t.Errorf("%d transport publishes for 50 concurrent events: none coalesced", len(tr.batches))
	}
}

// A transport that fails costs the caller nothing but the wait.
func TestPublishFailureDoesNotFailTheCaller(t *testing.T) {
	tr := &slowTransport{fail: true}
	h := NewHub(HubOptions{Transport: tr, PublishTimeout: time.Second})
	defer h.Close()
	publishWakesLocalWaiter(t, h)
}

// publishWakesLocalWaiter publishes an event of a queue with a waiter here
// and requires that the waiter was woken by the time Publish returned.
func publishWakesLocalWaiter(t *testing.T, h *Hub) {
	t.Helper()
	ch, cancel := h.Subscribe("q")
	defer cancel()
	h.Publish(context.Background(), Event{Queue: "q", Count: 1})
	select {
	case <-ch:
	default:
		t.Fatal("the local waiter was not woken")
	}
}

func TestBatchAddsCounts(t *testing.T) {
	b := newBatch()
	b.add([]Event{{"a", 1}, {"b", 2}, {"a", 3}})
	b.add([]Event{{"b", 0}, {"b", 5}})
	got := b.events()
	want := []Event{{"a", 4}, {"b", 0}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("batch = %v, want %v", got, want)
	}
}

// A Loopback delivers what one member publishes to every other member,
// not back to the publisher.
func TestLoopback(t *testing.T) {
	lb := NewLoopback()
	a := NewHub(HubOptions{Transport: lb.Join()})
	defer a.Close()
	b := NewHub(HubOptions{Transport: lb.Join()})
	defer b.Close()
	chB, cancelB := b.Subscribe("q")
	defer cancelB()
	m := a.Mark()
	a.Publish(context.Background(), Event{Queue: "q", Count: 1})
	select {
	case <-chB:
	default:
		t.Fatal("b did not hear a's event")
	}
	if !a.WokeSince("q", m) {
		t.Fatal("a's own event did not count locally")
	}
}

// quietTransport is a slowTransport that says whether anyone would hear.
type quietTransport struct {
	slowTransport
	quiet atomic.Bool
}

func (q *quietTransport) Quiet() bool { return q.quiet.Load() }

// While the transport is quiet, a publish wakes the local waiters and
// hands the transport nothing; once it is not, the transport gets events
// again.
func TestQuietTransportIsSkipped(t *testing.T) {
	tr := &quietTransport{}
	tr.quiet.Store(true)
	h := NewHub(HubOptions{Transport: tr})
	defer h.Close()
	publishWakesLocalWaiter(t, h)
	if n := len(tr.batches); n != 0 {
		t.Fatalf("a quiet transport got %d publishes", n)
	}
	tr.quiet.Store(false)
	h.Publish(context.Background(), Event{Queue: "q", Count: 1})
	if n := len(tr.batches); n != 1 {
		t.Fatalf("the transport got %d publishes once no longer quiet, want 1", n)
	}
}

// Polls asleep when the transport goes degraded are woken, so that they
// look at once and sleep again at the degraded pace (and find what a lost
// event was about).
func TestDegradedWakesTheSleepingPolls(t *testing.T) {
	h := NewHub(HubOptions{})
	defer h.Close()
	receiver{h}.Degraded(false)
	w := h.Listen("q")
	defer w.Cancel()
	w.Waiting()
	receiver{h}.Degraded(true)
	select {
	case <-w.C:
	default:
		t.Fatal("a poll asleep when the transport went degraded was not woken")
	}
}
