package orderedbatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// A claim whose first try runs out its bound behind a record another
// transaction holds (a client gone mid-claim) takes another message on its
// second try, and gives it its whole visibility timeout from when it
// returns it: counted from when the call began, the timeout would end
// about five seconds early, and a second receiver could get the message
// while the first still holds it.
func TestClaimAfterItsBoundKeepsTheWholeTimeout(t *testing.T) {
	ctx := context.Background()
	docs := memdocs.New(memdocs.WithMode(memdocs.Pessimistic), memdocs.WithLockTimeout(time.Second))
	st := orderedbatch.New(docs, orderedbatch.Options{Name: "memdocs"})
	q := &stores.Queue{Name: "std", ID: "inc1", Attributes: map[string]string{}}
	if _, err := st.QueueCreate(ctx, &stores.QueueCreateParams{Queue: q, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m0", "m1"} {
		if _, err := st.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Now: time.Now(),
			Messages: []stores.NewMessage{{ID: id, Body: "b"}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // m0 is the older
	}
	// A transaction that never ends holds the oldest message's record.
	holding, done := make(chan struct{}), make(chan struct{})
	go func() {
		_ = docs.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
			if _, err := tx.Get(ctx, docstore.Key{Collection: "messages", ID: "inc1.s.m0"}); err != nil {
				return err
			}
			select {
			case <-holding:
			default:
				close(holding)
			}
			<-done
			return nil
		})
	}()
	<-holding
	defer close(done)

	const vt = 10 * time.Second
	start := time.Now()
	res, err := st.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
		VisibilityTimeout: vt, Token: "first", Now: start})
	if err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	if len(res.Messages) != 1 || returned.Sub(start) < 5*time.Second {
		t.Fatalf("the first claim got %d messages after %s; want m1 after its first try ran out its bound", len(res.Messages), returned.Sub(start))
	}
	// Within the first receiver's timeout, counted from when it got the
	// message.
	at := returned.Add(vt - 3*time.Second)
	again, err := st.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
		VisibilityTimeout: vt, Token: "second", Now: at})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range again.Messages {
		if m.ID == res.Messages[0].ID {
			t.Errorf("%s went to a second receiver %s after the first got it with a visibility timeout of %s",
				m.ID, at.Sub(returned).Round(time.Millisecond), vt)
		}
	}
}
