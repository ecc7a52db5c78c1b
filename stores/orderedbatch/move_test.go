package orderedbatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// A move stops short of the backend's bound in writes per transaction and
// leaves the rest to the next call: on a backend that takes 40 writes, 50
// messages move in several calls, none of them over the bound.
func TestMoveStaysWithinTheWriteBound(t *testing.T) {
	limits := memdocs.DefaultLimits
	limits.MaxTxWrites = 40
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			ctx := context.Background()
			st := orderedbatch.New(memdocs.New(memdocs.WithLimits(limits)), orderedbatch.Options{Name: "memdocs"})
			t.Cleanup(func() { _ = st.Close() })
			mk := func(name string) *stores.Queue {
				if fifo {
					name += ".fifo"
				}
				res, err := st.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{
					Name: name, ID: name + "-1", FIFO: fifo, Attributes: map[string]string{}, Retention: time.Hour}})
				if err != nil {
					t.Fatal(err)
				}
				return res.Queue
			}
			src, dst := mk("src"), mk("dst")
			const n = 50
			for i := 0; i < n; i += 10 {
				var ms []stores.NewMessage
				for j := i; j < i+10; j++ {
					m := stores.NewMessage{ID: fmt.Sprintf("m%02d", j), Body: "b", MD5OfBody: "x"}
					if fifo {
						m.GroupID, m.DedupID = fmt.Sprintf("g%d", j%5), m.ID
					}
					ms = append(ms, m)
				}
				if _, err := st.MessageSend(ctx, &stores.MessageSendParams{QueueName: src.Name, QueueID: src.ID, Messages: ms}); err != nil {
					t.Fatal(err)
				}
			}
			moved, calls := 0, 0
			for moved < n && calls < n {
				calls++
				res, err := st.MessageMove(ctx, &stores.MessageMoveParams{NewID: uuid.NewString, FromName: src.Name, FromID: src.ID, ToName: dst.Name, Max: n})
				if err != nil {
					t.Fatalf("move %d (after %d moved): %v", calls, moved, err)
				}
				if res.Moved == 0 {
					t.Fatalf("move %d moved nothing with %d left", calls, n-moved)
				}
				moved += res.Moved
			}
			if moved != n || calls < 2 {
				t.Errorf("%d calls moved %d messages, want %d in more than one call", calls, moved, n)
			}
		})
	}
}
