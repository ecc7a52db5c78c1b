package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

func TestTagLimitHoldsUnderConcurrentTagging(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	defer st.Close()
	a := service.New(service.Config{Store: st, BaseURL: "http://h"})
	b := service.New(service.Config{Store: st, BaseURL: "http://h"})
	out, err := a.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "q"})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		if _, err := a.UntagQueue(ctx, &contract.UntagQueueInput{QueueUrl: out.QueueUrl, TagKeys: keys(round-1, 60)}); err != nil && round > 0 {
			t.Fatal(err)
		}
		tags := func(from int) map[string]string {
			m := map[string]string{}
			for i := from; i < from+30; i++ {
				m[fmt.Sprintf("r%d-k%d", round, i)] = "v"
			}
			return m
		}
		errs := make(chan error, 2)
		go func() {
			_, err := a.TagQueue(ctx, &contract.TagQueueInput{QueueUrl: out.QueueUrl, Tags: tags(0)})
			errs <- err
		}()
		go func() {
			_, err := b.TagQueue(ctx, &contract.TagQueueInput{QueueUrl: out.QueueUrl, Tags: tags(30)})
			errs <- err
		}()
		<-errs
		<-errs
		got, err := a.ListQueueTags(ctx, &contract.ListQueueTagsInput{QueueUrl: out.QueueUrl})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Tags) > contract.MaxTagsPerQueue {
			t.Fatalf("round %d: %d tags, more than the limit of %d", round, len(got.Tags), contract.MaxTagsPerQueue)
		}
	}
}

// keys names the tags of a round of TestTagLimitHoldsUnderConcurrentTagging.
func keys(round, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("r%d-k%d", round, i)
	}
	return out
}

// An attribute change made through one instance reaches another one's
// sends within a second (the README's propagation), though the other
// instance had the queue's record cached from before the change.
func TestAttributeChangeReachesOtherInstancesWithinASecond(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	defer st.Close()
	a := service.New(service.Config{Store: st, BaseURL: "http://h"})
	b := service.New(service.Config{Store: st, BaseURL: "http://h"})
	std := create(t, a, "std")
	fifo, err := a.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "q.fifo",
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	body, group := "m", "g"
	for _, url := range []string{std, fifo.QueueUrl} { // b reads both records
		if _, err := b.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: url, MessageBody: &body, MessageGroupId: groupFor(url, group)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := receive(t, a, std, 0); len(got) != 1 {
		t.Fatalf("std: %d messages, want 1", len(got))
	}
	if _, err := a.SetQueueAttributes(ctx, &contract.SetQueueAttributesInput{QueueUrl: std, Attributes: map[string]string{"DelaySeconds": "60"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetQueueAttributes(ctx, &contract.SetQueueAttributesInput{QueueUrl: fifo.QueueUrl, Attributes: map[string]string{"ContentBasedDeduplication": "false"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second + 100*time.Millisecond)

	if _, err := b.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: std, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, a, std, 0); len(got) != 0 {
		t.Error("a send through the other instance a second after DelaySeconds=60 was set was receivable at once")
	}
	_, err = b.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: fifo.QueueUrl, MessageBody: &body, MessageGroupId: &group})
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Code != "InvalidParameterValue" {
		t.Errorf("a FIFO send without a deduplication ID a second after ContentBasedDeduplication=false: %v, want InvalidParameterValue", err)
	}
}

func groupFor(url, group string) *string {
	if strings.HasSuffix(url, ".fifo") {
		return &group
	}
	return nil
}

// Without the 60-second rule a queue deleted and re-created through one
// instance is at once the queue another instance serves under that name.
func TestRecreatedQueueWithoutCooldownsReachesOtherInstances(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	defer st.Close()
	a := service.New(service.Config{Store: st, BaseURL: "http://h", NoCooldowns: true})
	b := service.New(service.Config{Store: st, BaseURL: "http://h", NoCooldowns: true})
	url := create(t, a, "q")
	body := "m"
	if _, err := b.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteQueue(ctx, &contract.DeleteQueueInput{QueueUrl: url}); err != nil {
		t.Fatal(err)
	}
	create(t, a, "q")
	if _, err := b.SendMessage(ctx, &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
		t.Fatalf("a send through the other instance to the re-created queue: %v", err)
	}
}
