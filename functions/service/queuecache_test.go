package service_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
)

// countingStore counts queue reads on a real store.
type countingStore struct {
	stores.Store
	gets atomic.Int64
}

func (c *countingStore) QueueGet(ctx context.Context, p *stores.QueueGetParams) (*stores.Queue, error) {
	c.gets.Add(1)
	return c.Store.QueueGet(ctx, p)
}

func TestQueueCacheSavesReadsButNotCorrectness(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: memstore.New()}
	defer st.Close()
	a := service.New(service.Config{Store: st, BaseURL: "http://h"})
	b := service.New(service.Config{Store: st, BaseURL: "http://h"})
	out, err := a.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "q"})
	if err != nil {
		t.Fatal(err)
	}
	body := "m"
	before := st.gets.Load()
	for i := 0; i < 10; i++ {
		if _, err := b.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.gets.Load() - before; n != 1 {
		t.Errorf("10 sends read the queue %d times, want 1", n)
	}
	// Deleted through another instance: the cached record must not let a
	// send through.
	if _, err := a.DeleteQueue(ctx, &contract.DeleteQueueInput{QueueUrl: out.QueueUrl}); err != nil {
		t.Fatal(err)
	}
	_, err = b.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: &body})
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Type != "QueueDoesNotExist" {
		t.Fatalf("send to a queue deleted elsewhere: %v, want QueueDoesNotExist", err)
	}
}
