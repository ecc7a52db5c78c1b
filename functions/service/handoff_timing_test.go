package service_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
)

// A pause holds a store call at a point until the test lets it go.
type pause struct{ reached, release chan struct{} }

func newPause() *pause { return &pause{reached: make(chan struct{}), release: make(chan struct{})} }

func (p *pause) hold() {
	close(p.reached)
	<-p.release
}

// pausingStore is the in-memory store with, once each when set, a pause
// before a send that carries a hand-off reaches the store, one after such
// a send committed, and one after a claim answered.
type pausingStore struct {
	stores.Store
	beforeHandOff, afterHandOff, afterClaim atomic.Pointer[pause]
}

func (s *pausingStore) MessageSend(ctx context.Context, p *stores.MessageSendParams) (*stores.MessageSendResult, error) {
	if p.HandOff != nil {
		if ps := s.beforeHandOff.Swap(nil); ps != nil {
			ps.hold()
		}
	}
	res, err := s.Store.MessageSend(ctx, p)
	if p.HandOff != nil {
		if ps := s.afterHandOff.Swap(nil); ps != nil {
			ps.hold()
		}
	}
	return res, err
}

func (s *pausingStore) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	res, err := s.Store.MessageClaim(ctx, p)
	if ps := s.afterClaim.Swap(nil); ps != nil {
		ps.hold()
	}
	return res, err
}

func startPoll(svc *service.Service, ctx context.Context, url string, wait int64) <-chan []contract.Message {
	ch := make(chan []contract.Message, 1)
	go func() {
		out, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: &wait})
		if err != nil {
			ch <- nil
			return
		}
		ch <- out.Messages
	}()
	return ch
}

func sendOne(t *testing.T, svc *service.Service, url, body string) {
	if _, err := svc.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
		t.Error(err)
	}
}

// A poll that a send took may also get a wake-up meant for another
// message, from a send that found no poll parked. When the hand-off
// brings it its own message, it passes that wake-up on: else the other
// poll would sleep beside the other message until its repair check (an
// hour here) or the end of its wait (20 s). Only a wake-up returns it
// within 10 s.
func TestTakenPollPassesOnAWakeUpItDidNotUse(t *testing.T) {
	for round := range 4 {
		mem := memstore.New()
		st := &pausingStore{Store: mem}
		svc := service.New(service.Config{Store: st, BaseURL: "http://h", IdleMemo: -1, RepairInterval: time.Hour})
		url := create(t, svc, "q")

		first := startPoll(svc, context.Background(), url, 20)
		waitForWaiting(t, svc, 1)
		claimed := newPause()
		st.afterClaim.Store(claimed)
		second := startPoll(svc, context.Background(), url, 20)
		<-claimed.reached // its first claim found nothing; it does not wait yet

		committed := newPause()
		st.afterHandOff.Store(committed)
		go sendOne(t, svc, url, "m1") // takes the first poll
		<-committed.reached
		sendOne(t, svc, url, "m2") // no poll parked: a wake-up, to the first poll or the second
		time.Sleep(50 * time.Millisecond)
		close(committed.release)
		if got := <-first; len(got) != 1 {
			t.Fatalf("round %d: the first poll got %d messages, want 1", round, len(got))
		}
		close(claimed.release)
		select {
		case got := <-second:
			if len(got) != 1 {
				t.Errorf("round %d: the second poll got %d messages, want the other one", round, len(got))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the second poll was not woken for the other message (its wake-up went to the taken poll and was lost)", round)
		}
		svc.Shutdown()
		mem.Close()
	}
}

// A poll whose request ends after a send took it, before the store ran its
// claim: the message is made visible again, and a poll still waiting gets
// it, instead of it sitting in flight for its visibility timeout.
func TestHandOffToAPollThatLeftIsReleased(t *testing.T) {
	mem := memstore.New()
	defer mem.Close()
	st := &pausingStore{Store: mem}
	svc := service.New(service.Config{Store: st, BaseURL: "http://h", RepairInterval: time.Hour})
	defer svc.Shutdown()
	url := create(t, svc, "q")

	ctx, leave := context.WithCancel(context.Background())
	first := startPoll(svc, ctx, url, 20)
	waitForWaiting(t, svc, 1)
	second := startPoll(svc, context.Background(), url, 5)
	waitForWaiting(t, svc, 2)

	before := newPause()
	st.beforeHandOff.Store(before)
	sent := make(chan struct{})
	go func() { sendOne(t, svc, url, "m"); close(sent) }()
	<-before.reached // the send took the first poll
	leave()
	if got := <-first; got != nil {
		t.Errorf("the poll that left got %d messages", len(got))
	}
	close(before.release)
	<-sent
	if got := <-second; len(got) != 1 {
		t.Errorf("the poll still waiting got %d messages, want the one claimed for the poll that left", len(got))
	}
}

// heldClaims is the pausing store whose next n claims each stop after they
// ran, until release is closed.
type heldClaims struct {
	*pausingStore
	mu      sync.Mutex
	n       int
	reached chan struct{}
	release chan struct{}
}

func (s *heldClaims) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	res, err := s.pausingStore.MessageClaim(ctx, p)
	s.mu.Lock()
	hold := s.n > 0
	if hold {
		s.n--
	}
	s.mu.Unlock()
	if hold {
		s.reached <- struct{}{}
		<-s.release
	}
	return res, err
}

// A taken poll that took a wake-up off its channel (another message's,
// from a send that found no poll parked) and whose request then ends while
// the send holds its claim passes that wake-up on too, and its own message
// is released: each of the two polls still waiting gets one of the two
// messages on a wake-up, long before its repair check (an hour) or the
// end of its wait (20 s).
func TestTakenPollThatLeavesPassesOnItsWakeUp(t *testing.T) {
	for round := range 6 {
		mem := memstore.New()
		st := &heldClaims{pausingStore: &pausingStore{Store: mem}, reached: make(chan struct{}), release: make(chan struct{})}
		svc := service.New(service.Config{Store: st, BaseURL: "http://h", IdleMemo: -1, RepairInterval: time.Hour})
		url := create(t, svc, "q")

		ctx, leave := context.WithCancel(context.Background())
		first := startPoll(svc, ctx, url, 20)
		waitForWaiting(t, svc, 1)
		st.mu.Lock()
		st.n = 2
		st.mu.Unlock()
		second := startPoll(svc, context.Background(), url, 20)
		third := startPoll(svc, context.Background(), url, 20)
		<-st.reached
		<-st.reached // both claimed, found nothing, and do not wait yet

		committed := newPause()
		st.afterHandOff.Store(committed)
		go sendOne(t, svc, url, "m1") // takes the first poll
		<-committed.reached
		sendOne(t, svc, url, "m2") // no poll parked: a wake-up, to any of the three
		time.Sleep(50 * time.Millisecond)
		leave()
		if got := <-first; got != nil {
			t.Fatalf("round %d: the poll that left got %d messages", round, len(got))
		}
		close(committed.release)
		time.Sleep(50 * time.Millisecond)
		close(st.release)
		for i, ch := range []<-chan []contract.Message{second, third} {
			select {
			case got := <-ch:
				if len(got) != 1 {
					t.Errorf("round %d: poll %d got %d messages, want 1", round, i+2, len(got))
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: poll %d slept beside a receivable message (a wake-up was lost)", round, i+2)
			}
		}
		svc.Shutdown()
		mem.Close()
	}
}
