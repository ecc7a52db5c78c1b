package service_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
)

// claimRecorder records the Verify flag of every claim on a real store.
type claimRecorder struct {
	stores.Store
	mu      sync.Mutex
	verify  []bool
	claimed chan struct{}
}

func (c *claimRecorder) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	c.mu.Lock()
	c.verify = append(c.verify, p.Verify)
	c.mu.Unlock()
	select {
	case c.claimed <- struct{}{}:
	default:
	}
	return c.Store.MessageClaim(ctx, p)
}

func (c *claimRecorder) flags() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.verify...)
}

// A long poll's claims after a wake-up may be answered from what the store
// remembers; the one after a timer (no wake-up came, perhaps lost) asks
// the store to look (Verify).
func TestLongPollVerifiesOnlyWhenNoWakeUpCame(t *testing.T) {
	ctx := context.Background()
	st := &claimRecorder{Store: memstore.New(), claimed: make(chan struct{}, 1)}
	defer st.Close()
	svc := service.New(service.Config{Store: st, BaseURL: "http://h"})
	out, err := svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "q"})
	if err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	// Nothing comes: the claim after the wait verifies.
	if _, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: out.QueueUrl, WaitTimeSeconds: &one}); err != nil {
		t.Fatal(err)
	}
	if got := st.flags(); len(got) != 2 || got[0] || !got[1] {
		t.Errorf("claims' Verify = %v, want [false true]", got)
	}

	// A send wakes the poll: that claim need not verify.
	st.mu.Lock()
	st.verify = nil
	st.mu.Unlock()
	select { // drop a stale signal, if any
	case <-st.claimed:
	default:
	}
	five := int64(5)
	done := make(chan *contract.ReceiveMessageOutput, 1)
	go func() {
		r, err := svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: out.QueueUrl, WaitTimeSeconds: &five})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-st.claimed
	body := "m"
	if _, err := svc.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r == nil || len(r.Messages) != 1 {
			t.Fatalf("the long poll returned %+v, want the message", r)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("the long poll did not wake on the send")
	}
	// Two claims: the first found nothing, the woken one the message (one,
	// when the send beat the first claim's read).
	got := st.flags()
	if len(got) == 0 || len(got) > 2 || slices.Contains(got, true) {
		t.Errorf("claims' Verify = %v, want [false false] (or [false])", got)
	}
}
