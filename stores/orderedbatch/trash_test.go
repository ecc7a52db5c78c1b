package orderedbatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// afterQuery runs after once, right after the first query of coll that
// finds something.
type afterQuery struct {
	docstore.Store
	coll  string
	once  sync.Once
	after func()
}

func (h *afterQuery) Query(ctx context.Context, q docstore.Query) ([]*docstore.Doc, error) {
	d, err := h.Store.Query(ctx, q)
	if q.Collection == h.coll && len(d) > 0 && h.after != nil {
		h.once.Do(h.after)
	}
	return d, err
}

// The trash pass after a purge removes the documents of the generations
// before it, and checks each again when it removes it: a send after the
// purge may have written a key anew since the pass's query (here the
// dedup marker of the same deduplication id), and that marker is the new
// generation's. Removed, a retry of that send within the window would be
// stored a second time.
func TestTrashKeepsWhatWasWrittenAnewAfterThePurge(t *testing.T) {
	ctx := context.Background()
	h := &afterQuery{Store: memdocs.New(), coll: "dedup"}
	st := orderedbatch.New(h, orderedbatch.Options{Name: "memdocs"})
	q := &stores.Queue{Name: "q.fifo", ID: "inc1", FIFO: true, Attributes: map[string]string{}}
	if _, err := st.QueueCreate(ctx, &stores.QueueCreateParams{Queue: q, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	send := func(id string) stores.SendResult {
		t.Helper()
		res, err := st.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, DedupWindow: 5 * time.Minute, Now: time.Now(),
			Messages: []stores.NewMessage{{ID: id, Body: "same body", GroupID: "g", DedupID: "D"}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Results[0]
	}
	send("00000000-0000-0000-0000-000000000001")
	if err := st.QueuePurge(ctx, &stores.QueuePurgeParams{Name: q.Name, ID: q.ID, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var afterPurge stores.SendResult
	h.after = func() { afterPurge = send("00000000-0000-0000-0000-000000000002") }
	if err := st.Maintain(ctx, &stores.MaintainParams{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if afterPurge.MessageID == "" || afterPurge.Duplicate {
		t.Fatalf("the send after the purge: %+v, want a new message", afterPurge)
	}
	retry := send("00000000-0000-0000-0000-000000000003")
	if !retry.Duplicate || retry.MessageID != afterPurge.MessageID {
		t.Errorf("a retry of the send after the purge, within the window: %+v, want a duplicate of %s", retry, afterPurge.MessageID)
	}
}
