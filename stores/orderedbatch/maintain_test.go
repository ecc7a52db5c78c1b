package orderedbatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// One pass removes what a minute of steady FIFO work and queue churn left
// to remove: 600 expired dedup markers, 600 idle groups (a group per
// message) and twelve deleted queues' trash. Passes of one page each would
// fall behind any load above a few messages a second, and the documents
// (and their storage) would pile up for good.
func TestOnePassKeepsUpWithAMinuteOfWork(t *testing.T) {
	ctx := context.Background()
	docs := memdocs.New()
	s := orderedbatch.New(docs, orderedbatch.Options{Name: "memdocs"})
	t0 := time.Now()
	res, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Now: t0,
		Queue: &stores.Queue{Name: "q.fifo", ID: "0123456789abcdef", FIFO: true, Attributes: map[string]string{}}})
	if err != nil {
		t.Fatal(err)
	}
	q := res.Queue
	const n = 600 // a minute at 10 FIFO messages a second, a group each
	for i := 0; i < n; i += 10 {
		var ms []stores.NewMessage
		for j := i; j < i+10; j++ {
			id := fmt.Sprintf("00000000-0000-0000-0000-%012d", j)
			ms = append(ms, stores.NewMessage{ID: id, Body: "b", GroupID: fmt.Sprintf("order-%d", j), DedupID: id})
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, DedupWindow: 5 * time.Minute, Now: t0, Messages: ms}); err != nil {
			t.Fatal(err)
		}
	}
	for got := 0; got < n; {
		c, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10, VisibilityTimeout: time.Minute, Token: fmt.Sprintf("t%d", got), Now: t0})
		if err != nil || len(c.Messages) == 0 {
			t.Fatalf("claim after %d: %v", got, err)
		}
		var rs []stores.Receipt
		for _, m := range c.Messages {
			rs = append(rs, stores.Receipt{MessageID: m.ID, Token: m.Token, Locator: m.Locator})
		}
		if _, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID, Receipts: rs, Now: t0}); err != nil {
			t.Fatal(err)
		}
		got += len(c.Messages)
	}
	for i := range 12 { // a queue deleted every 5 s
		r, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Now: t0, Queue: &stores.Queue{Name: fmt.Sprintf("tmp-%d", i), ID: fmt.Sprintf("tmp%013d", i), Attributes: map[string]string{}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: r.Queue.Name, ID: r.Queue.ID, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(col string) int {
		all, err := docs.Query(ctx, docstore.Query{Collection: col})
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	if d, g, tr := count("dedup"), count("groups"), count("trash"); d < n || g < n || tr < 12 {
		t.Fatalf("before the pass: %d dedup markers, %d groups, %d trash records; want at least %d, %d, 12", d, g, tr, n, n)
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if d, g, tr := count("dedup"), count("groups"), count("trash"); d > 0 || g > 0 || tr > 0 {
		t.Errorf("one pass left %d expired dedup markers, %d idle groups and %d trash records of one minute's work", d, g, tr)
	}
}
