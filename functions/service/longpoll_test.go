package service_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
	"github.com/sluicehq/sluice/stores/wake"
)

// frozen is a service clock that stands still: the idle memo never runs out
// by itself, so what ends it is what a test is about.
type frozen struct{ now time.Time }

func (f *frozen) Now() time.Time { return f.now }

// behindTheBack stores a message without the service, so no wake-up is
// published: only a store read can find it.
func behindTheBack(t *testing.T, st stores.Store, name string, now time.Time) {
	t.Helper()
	q, err := st.QueueGet(context.Background(), &stores.QueueGetParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.MessageSend(context.Background(), &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{{ID: uuid.NewString(), Body: "b", MD5OfBody: contract.MD5OfBody("b")}}, Now: now}); err != nil {
		t.Fatal(err)
	}
}

func receive(t *testing.T, svc *service.Service, url string, wait int64) []contract.Message {
	t.Helper()
	ten := int64(10)
	out, err := svc.ReceiveMessage(context.Background(), &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: &wait,
		MaxNumberOfMessages: &ten})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

func create(t *testing.T, svc *service.Service, name string) string {
	t.Helper()
	out, err := svc.CreateQueue(context.Background(), &contract.CreateQueueInput{QueueName: name})
	if err != nil {
		t.Fatal(err)
	}
	return out.QueueUrl
}

// A receive that found nothing answers the next ones from the idle memo,
// until a wake-up or the memo's age ends it; a long poll's repair check
// always reads the store.
func TestIdleMemoAnswersUntilWokenOrAged(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	clock := &frozen{now: time.Now().UTC().Truncate(time.Second)}
	svc := service.New(service.Config{Store: st, BaseURL: "http://h", Clock: clock.Now,
		IdleMemo: time.Minute, RepairInterval: 100 * time.Millisecond})
	defer svc.Shutdown()
	url := create(t, svc, "q")

	if got := receive(t, svc, url, 0); len(got) != 0 {
		t.Fatalf("empty queue gave %d messages", len(got))
	}
	behindTheBack(t, st, "q", clock.now)
	if got := receive(t, svc, url, 0); len(got) != 0 {
		t.Fatalf("the memo did not answer: %d messages", len(got))
	}
	// A long poll's repair check looks at the store, whatever the memo says.
	if got := receive(t, svc, url, 5); len(got) != 1 {
		t.Fatalf("the long poll's repair check found %d messages, want 1", len(got))
	}

	// In flight now (30 s): empty again, remembered until the message's
	// visibility ends (its NextChange) or the memo's minute.
	if got := receive(t, svc, url, 0); len(got) != 0 {
		t.Fatalf("claimed a message in flight")
	}
	behindTheBack(t, st, "q", clock.now)
	if got := receive(t, svc, url, 0); len(got) != 0 {
		t.Fatalf("the memo did not answer the second time")
	}
	clock.now = clock.now.Add(31 * time.Second) // past the NextChange
	if got := receive(t, svc, url, 0); len(got) != 2 {
		t.Fatalf("after the NextChange: %d messages, want 2", len(got))
	}

	// A send through the service wakes the memo at once.
	if got := receive(t, svc, url, 0); len(got) != 0 {
		t.Fatalf("claimed messages in flight")
	}
	body := "m"
	if _, err := svc.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, svc, url, 0); len(got) != 1 {
		t.Fatalf("after a send: %d messages, want 1", len(got))
	}
}

// Another instance's send and its shortening of a visibility timeout reach
// this instance's memo through the transport; with a frozen clock nothing
// else could end it.
func TestIdleMemoHearsOtherInstances(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	clock := &frozen{now: time.Now().UTC().Truncate(time.Second)}
	lb := wake.NewLoopback()
	newSvc := func() *service.Service {
		hub := wake.NewHub(wake.HubOptions{Transport: lb.Join()})
		t.Cleanup(func() { _ = hub.Close() })
		svc := service.New(service.Config{Store: st, BaseURL: "http://h", Clock: clock.Now, Wakeups: hub,
			IdleMemo: time.Hour, QueueCacheTTL: -1})
		t.Cleanup(svc.Shutdown)
		return svc
	}
	a, b := newSvc(), newSvc()
	url := create(t, a, "q")
	if got := receive(t, a, url, 0); len(got) != 0 {
		t.Fatal("empty queue gave messages")
	}
	body := "m"
	if _, err := b.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	got := receive(t, a, url, 0)
	if len(got) != 1 {
		t.Fatalf("another instance's send: %d messages, want 1", len(got))
	}
	if again := receive(t, a, url, 0); len(again) != 0 {
		t.Fatal("claimed a message in flight")
	}
	zero := int64(0)
	if _, err := b.ChangeMessageVisibility(context.Background(), &contract.ChangeMessageVisibilityInput{QueueUrl: url,
		ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: &zero}); err != nil {
		t.Fatal(err)
	}
	if again := receive(t, a, url, 0); len(again) != 1 {
		t.Fatalf("another instance's release: %d messages, want 1", len(again))
	}
}

// A long poll on one instance returns on a send through another well before
// its repair check would have found the message.
func TestLongPollWokenAcrossInstances(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	lb := wake.NewLoopback()
	newSvc := func() *service.Service {
		hub := wake.NewHub(wake.HubOptions{Transport: lb.Join()})
		t.Cleanup(func() { _ = hub.Close() })
		svc := service.New(service.Config{Store: st, BaseURL: "http://h", Wakeups: hub, RepairInterval: time.Minute})
		t.Cleanup(svc.Shutdown)
		return svc
	}
	a, b := newSvc(), newSvc()
	url := create(t, a, "q")
	done := make(chan []contract.Message, 1)
	go func() { done <- receive(t, a, url, 20) }()
	time.Sleep(100 * time.Millisecond) // let the poll reach its wait
	body := "m"
	if _, err := b.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if len(got) != 1 {
			t.Fatalf("the long poll returned %d messages, want 1", len(got))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the long poll was not woken by the other instance's send")
	}
}

// MaxWait caps a long poll: one asking for 20 s on an empty queue returns,
// empty, once the cap has passed (a front end with a shorter timeout would
// otherwise cut it off with an error).
func TestMaxWaitCapsLongPolls(t *testing.T) {
	st := memstore.New()
	defer st.Close()
	svc := service.New(service.Config{Store: st, BaseURL: "http://h", MaxWait: 200 * time.Millisecond})
	defer svc.Shutdown()
	url := create(t, svc, "q")
	start := time.Now()
	if got := receive(t, svc, url, 20); len(got) != 0 {
		t.Fatalf("an empty queue gave %d messages", len(got))
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 10*time.Second {
		t.Errorf("a 20 s poll capped at 200 ms returned after %s", took)
	}
}

// claimCountingStore counts the claims that reach the store, and fails the next
// one when told to.
type claimCountingStore struct {
	stores.Store
	claims atomic.Int64
	fail   atomic.Bool
}

// Traits: no hand-offs, so that a send wakes the waiting poll, whose own
// claim the tests follow.
func (c *claimCountingStore) Traits() stores.Traits {
	t := c.Store.Traits()
	t.HandOffs = false
	return t
}

func (c *claimCountingStore) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	c.claims.Add(1)
	if c.fail.CompareAndSwap(true, false) {
		return nil, errors.New("the claim failed")
	}
	return c.Store.MessageClaim(ctx, p)
}

// waitForWaiting waits until n long polls of svc wait.
func waitForWaiting(t *testing.T, svc *service.Service, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); svc.LongPollsWaiting() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d long polls wait, want %d", svc.LongPollsWaiting(), n)
		}
	}
}

// With TrustWokenPolls, a send that wakes a waiting long poll leaves the
// idle memo standing: the woken poll claims the message, and a receive that
// comes meanwhile or after is answered from the memo, without a store call,
// until the message taken comes back. Without it, that receive reads the
// store. When the woken poll's claim fails, nobody speaks for the message
// any more, and the next receive reads the store and finds it.
func TestWokenLongPollsSpeakForTheirMessages(t *testing.T) {
	for _, trust := range []bool{true, false} {
		mem := memstore.New()
		defer mem.Close()
		st := &claimCountingStore{Store: mem}
		clock := &frozen{now: time.Now().UTC().Truncate(time.Second)}
		svc := service.New(service.Config{Store: st, BaseURL: "http://h", Clock: clock.Now,
			IdleMemo: time.Hour, RepairInterval: time.Hour, TrustWokenPolls: trust})
		defer svc.Shutdown()
		url := create(t, svc, "q")
		send := func() {
			t.Helper()
			body := "m"
			if _, err := svc.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
				t.Fatal(err)
			}
		}
		if got := receive(t, svc, url, 0); len(got) != 0 {
			t.Fatal("empty queue gave messages")
		}
		polled := make(chan []contract.Message, 1)
		go func() { polled <- receive(t, svc, url, 20) }()
		waitForWaiting(t, svc, 1)
		send()
		if got := <-polled; len(got) != 1 {
			t.Fatalf("trust %v: the woken long poll got %d messages, want 1", trust, len(got))
		}
		before := st.claims.Load()
		if got := receive(t, svc, url, 0); len(got) != 0 {
			t.Fatal("claimed a message in flight")
		}
		want := int64(1)
		if trust {
			want = 0 // the memo answers
		}
		if n := st.claims.Load() - before; n != want {
			t.Errorf("trust %v: a receive after a wake-up that a long poll spoke for made %d store claims, want %d", trust, n, want)
		}
		if trust {
			// The message it took comes back when its visibility ends
			// (30 s): the memo ends then too.
			clock.now = clock.now.Add(31 * time.Second)
			if got := receive(t, svc, url, 0); len(got) != 1 {
				t.Errorf("once the woken poll's message was visible again: %d messages, want 1", len(got))
			}
		}

		// The woken poll's claim fails: the next receive reads the store.
		errs := make(chan error, 1)
		go func() {
			wait := int64(20)
			_, err := svc.ReceiveMessage(context.Background(), &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: &wait})
			errs <- err
		}()
		waitForWaiting(t, svc, 1)
		st.fail.Store(true)
		send()
		if err := <-errs; err == nil {
			t.Fatal("the long poll whose claim failed succeeded")
		}
		if got := receive(t, svc, url, 0); len(got) != 1 {
			t.Errorf("trust %v: after a woken poll's claim failed: %d messages, want 1", trust, len(got))
		}
	}
}

// polled is what a long poll got, and when it returned.
type polled struct {
	n    int
	when time.Time
}

// slowRepairService is a service on a memstore whose long polls look at the
// store on their own only once a minute: a wake-up that does not come
// shows as a poll that is seconds late.
func slowRepairService(t *testing.T) *service.Service {
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	svc := service.New(service.Config{Store: st, BaseURL: "http://h", RepairInterval: time.Minute})
	t.Cleanup(svc.Shutdown)
	return svc
}

// A delayed send wakes one waiting long poll, whose claim learns when the
// message becomes visible. When that poll leaves first (here its wait of
// 1 s ends before the delay of 2 s), the other poll, which claimed before
// the send, still gets the message when it becomes visible, not at its own
// next look at the store (a minute away here, or its wait's end). Which
// poll the send wakes is the hub's pick, so eight queues run at once: in
// about half of them it picks the one that leaves.
func TestDelayedMessageReachesAPollWhenTheWokenOneLeaves(t *testing.T) {
	svc := slowRepairService(t)
	const queues = 8
	urls := make([]string, queues)
	stays := make([]chan polled, queues)
	for i := range urls {
		urls[i] = create(t, svc, "q"+string(rune('a'+i)))
		stays[i] = make(chan polled, 1)
		go func() { stays[i] <- polled{len(receive(t, svc, urls[i], 8)), time.Now()} }()
		go func() { receive(t, svc, urls[i], 1) }()
	}
	waitForWaiting(t, svc, 2*queues)
	body, delay := "d", int64(2)
	sent := time.Now()
	for _, url := range urls {
		if _, err := svc.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body, DelaySeconds: &delay}); err != nil {
			t.Fatal(err)
		}
	}
	for i, ch := range stays {
		g := <-ch
		if took := g.when.Sub(sent); g.n != 1 || took > 3500*time.Millisecond {
			t.Errorf("queue %d: the poll that stayed got %d messages %s after a send delayed by %d s", i, g.n, took.Round(time.Millisecond), delay)
		}
	}
}

// Two messages delayed by 2 and 3 s, two polls waiting: the poll that took
// the first leaves, and the other still gets the second when its delay
// ends, although its wake-up (and so its time) may have gone to the first.
func TestSecondDelayedMessageReachesTheOtherPoll(t *testing.T) {
	svc := slowRepairService(t)
	const queues = 8
	urls := make([]string, queues)
	results := make([]chan polled, queues)
	for i := range urls {
		urls[i] = create(t, svc, "q"+string(rune('a'+i)))
		results[i] = make(chan polled, 2)
		for range 2 {
			go func() { results[i] <- polled{len(receive(t, svc, urls[i], 10)), time.Now()} }()
		}
	}
	waitForWaiting(t, svc, 2*queues)
	send := func(url string, delay int64) {
		body := "d"
		if _, err := svc.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body, DelaySeconds: &delay}); err != nil {
			t.Error(err)
		}
	}
	sent := time.Now()
	for _, url := range urls {
		send(url, 2)
	}
	time.Sleep(200 * time.Millisecond) // the woken poll has claimed and waits again
	for _, url := range urls {
		send(url, 3)
	}
	for i, ch := range results {
		for range 2 {
			if g := <-ch; g.n != 1 || g.when.Sub(sent) > 4500*time.Millisecond {
				t.Errorf("queue %d: a poll got %d messages %s after the sends (delays 2 and 3 s)", i, g.n, g.when.Sub(sent).Round(time.Millisecond))
			}
		}
	}
}

// A long poll sleeps until a known visibility change, but at least 20 ms
// (the store's clock may lag), and never past the end of its wait.
func TestLongPollSleepsUntilTheNextChange(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct{ sleep, d, want time.Duration }{
		{sleep: 1000 * ms, d: 300 * ms, want: 300 * ms},   // the change comes first
		{sleep: 1000 * ms, d: 2000 * ms, want: 1000 * ms}, // the wait ends first
		{sleep: 1000 * ms, d: 1 * ms, want: 20 * ms},      // the floor
		{sleep: 1000 * ms, d: -50 * ms, want: 20 * ms},    // already due on the store's clock
		{sleep: 5 * ms, d: 1 * ms, want: 5 * ms},          // the floor never passes the deadline
		{sleep: 5 * ms, d: -1 * ms, want: 5 * ms},
	} {
		if got := service.UntilNextChange(c.sleep, c.d); got != c.want {
			t.Errorf("sleep %s, next change in %s: slept %s, want %s", c.sleep, c.d, got, c.want)
		}
	}
}
