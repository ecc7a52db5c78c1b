package orderedbatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
)

// slowQueries makes every query take a while, as a backend's do.
type slowQueries struct{ docstore.Store }

func (s slowQueries) Query(ctx context.Context, q docstore.Query) ([]*docstore.Doc, error) {
	time.Sleep(20 * time.Millisecond)
	return s.Store.Query(ctx, q)
}

// A deleted queue with more trash than one step removes in its budget
// leaves the rest for later passes; the steps after it still run in the
// same pass: an expired dedup marker of another queue is removed.
func TestLargeTrashDoesNotStarveTheOtherSteps(t *testing.T) {
	defer func(old time.Duration) { stepBudget = old }(stepBudget)
	stepBudget = 100 * time.Millisecond
	ctx := context.Background()
	docs := memdocs.New()
	s := New(slowQueries{docs}, Options{Name: "memdocs"})
	t0 := time.Now()
	create := func(name, id string, fifo bool) *stores.Queue {
		res, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Now: t0,
			Queue: &stores.Queue{Name: name, ID: id, FIFO: fifo, Attributes: map[string]string{}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Queue
	}
	big := create("big", "big0000000000000", false)
	for i := 0; i < 4000; i += 10 {
		var ms []stores.NewMessage
		for j := i; j < i+10; j++ {
			ms = append(ms, stores.NewMessage{ID: fmt.Sprintf("00000000-0000-0000-0000-%012d", j), Body: "b"})
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: big.Name, QueueID: big.ID, Now: t0, Messages: ms}); err != nil {
			t.Fatal(err)
		}
	}
	f := create("f.fifo", "fifo000000000000", true)
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: f.Name, QueueID: f.ID, DedupWindow: 5 * time.Minute, Now: t0,
		Messages: []stores.NewMessage{{ID: "10000000-0000-0000-0000-000000000000", Body: "b", GroupID: "g", DedupID: "d"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: big.Name, ID: big.ID, Now: t0}); err != nil {
		t.Fatal(err)
	}
	count := func(col string) int {
		all, err := docs.Query(ctx, docstore.Query{Collection: col})
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if m := count(colMessages); m == 0 || m == 4001 {
		t.Fatalf("%d messages left: the trash step should have removed some and left some for its budget", m)
	}
	if d := count(colDedup); d != 0 {
		t.Errorf("%d expired dedup markers left: the trash step starved the markers' step", d)
	}
}
