package firestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	fs "cloud.google.com/go/firestore"

	"github.com/sluicehq/sluice/stores"
)

// A server killed inside a claim's transaction leaves that transaction
// open: its locks on the oldest Standard messages stay until Firestore
// expires it. The other servers' receives must still return the other
// messages, instead of all queueing behind the dead client's locks.
func TestClaimPassesOverMessagesADeadClientLocked(t *testing.T) {
	project := newProject(t)
	ctx := context.Background()
	st, err := Open(ctx, DocsConfig{ProjectID: project})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	q := &stores.Queue{Name: "dead-client", ID: "inc-dead-client", Attributes: map[string]string{}}
	if _, err := st.QueueCreate(ctx, &stores.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	const sent, locked = 16, 4
	for i := 0; i < sent; i++ {
		_, err := st.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{{ID: fmt.Sprintf("m-%02d", i), Body: "b", MD5OfBody: "x"}}})
		if err != nil {
			t.Fatal(err)
		}
	}

	// The dead client: a transaction on a client of its own that reads
	// (and so, on the emulator, locks) the oldest messages and never ends.
	dead, err := fs.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	lockedN := make(chan int, 1)
	hold, release := context.WithCancel(ctx)
	defer release()
	oldest, err := dead.Collection("messages").OrderBy("vis", fs.Asc).Limit(locked).Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var refs []*fs.DocumentRef
	for _, d := range oldest {
		refs = append(refs, d.Ref)
	}
	go func() {
		// Read by key, as a claim reads its candidates.
		_ = dead.RunTransaction(hold, func(ctx context.Context, tx *fs.Transaction) error {
			docs, err := tx.GetAll(refs)
			if err != nil {
				lockedN <- -1
				return err
			}
			lockedN <- len(docs)
			<-ctx.Done()
			return ctx.Err()
		}, fs.MaxAttempts(1))
	}()
	if n := <-lockedN; n != locked {
		t.Fatalf("the dead client locked %d messages, want %d", n, locked)
	}

	// Receives on the live store, one message each, bounded as a client
	// would bound them. A claim that meets the dead locks gives up after
	// at most two tries, each past orderedbatch's 5 s attempt bound plus
	// the attempt that was waiting on a lock (several seconds on the
	// emulator of a loaded machine: up to 15 s a claim was seen); without
	// the bound it waits for as long as the dead transaction lives.
	got := map[string]bool{}
	deadline := time.Now().Add(90 * time.Second)
	for len(got) < sent-locked && time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		start := time.Now()
		res, err := st.MessageClaim(cctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
			VisibilityTimeout: time.Minute, Token: fmt.Sprintf("t%d", len(got))})
		cancel()
		if err != nil {
			t.Fatalf("claim after %v: %v (received %d of the %d unlocked messages)", time.Since(start).Round(time.Millisecond), err, len(got), sent-locked)
		}
		if took := time.Since(start); took > time.Second {
			t.Logf("claim %d took %v, got %d", len(got), took.Round(time.Millisecond), len(res.Messages))
		}
		for _, m := range res.Messages {
			got[m.ID] = true
		}
	}
	if len(got) < sent-locked {
		t.Fatalf("received %d of the %d messages the dead client did not lock", len(got), sent-locked)
	}
}
