package pgstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// Concurrent fast claims on one queue that share a transaction each get
// what a claim of their own would: their own messages under their own
// token (in the database too), no message twice, no FIFO group split
// between two callers, and, with enough to go round, all they asked for.
func TestCombinedClaimsKeepEachCallersDelivery(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()

	// The first batch waits, so that the callers behind it queue up and
	// go together in the next ones.
	var batches, combined atomic.Int64
	run := s.queueOps.run
	s.queueOps.run = func(ctx context.Context, key batchKey, reqs []queueOp) ([]queueRes, error) {
		if batches.Add(1) == 1 {
			time.Sleep(300 * time.Millisecond)
		}
		if len(reqs) > 1 {
			combined.Add(1)
		}
		return run(ctx, key, reqs)
	}

	for _, c := range []struct {
		name     string
		fifo     bool
		callers  int
		max      int
		groups   int // FIFO: each holds perGroup messages
		perGroup int
	}{
		{"standard", false, 30, 2, 0, 0},
		{"fifo", true, 30, 1, 30, 2},
		{"fifo, runs of three", true, 10, 3, 10, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			batches.Store(0)
			combined.Store(0)
			q := createQueue(t, s, randomName("q"), c.fifo)
			var msgs []stores.NewMessage
			if c.fifo {
				for i := range c.perGroup {
					for g := range c.groups {
						msgs = append(msgs, newMsg(fmt.Sprintf("%d/%d", g, i), fmt.Sprintf("g%02d", g), randomName("d")))
					}
				}
			} else {
				for i := range c.callers*c.max + 5 {
					msgs = append(msgs, newMsg(fmt.Sprint(i), "", ""))
				}
			}
			for len(msgs) > 0 {
				n := min(len(msgs), 10)
				if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs[:n]}); err != nil {
					t.Fatal(err)
				}
				msgs = msgs[n:]
			}
			s.sweepDue(q.Name+"\x00"+q.ID, time.Time{}) // no sweep in this test's claims

			results := make([]*stores.MessageClaimResult, c.callers)
			tokens := make([]string, c.callers)
			var wg sync.WaitGroup
			for i := range c.callers {
				tokens[i] = randomName("t")
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID,
						Max: c.max, VisibilityTimeout: time.Hour, Token: tokens[i]})
					if err != nil {
						t.Errorf("caller %d: %v", i, err)
						return
					}
					results[i] = res
				}()
			}
			wg.Wait()
			if combined.Load() == 0 {
				t.Fatalf("%d claims in %d batches: none shared a transaction", c.callers, batches.Load())
			}

			seen := map[string]int{}    // message → caller
			groupOf := map[string]int{} // group → caller
			for i, res := range results {
				if res == nil {
					continue
				}
				if len(res.Messages) != c.max {
					t.Errorf("caller %d got %d messages, want %d", i, len(res.Messages), c.max)
				}
				for _, m := range res.Messages {
					if m.Token != tokens[i] {
						t.Errorf("caller %d: message %s under token %q, want its own %q", i, m.ID, m.Token, tokens[i])
					}
					if j, dup := seen[m.ID]; dup {
						t.Errorf("message %s went to callers %d and %d", m.ID, j, i)
					}
					seen[m.ID] = i
					if c.fifo {
						if j, ok := groupOf[m.GroupID]; ok && j != i {
							t.Errorf("group %s went to callers %d and %d", m.GroupID, j, i)
						}
						groupOf[m.GroupID] = i
					}
					var token string
					if err := s.pool.QueryRow(ctx, `SELECT token FROM messages WHERE message_id = $1`, m.ID).Scan(&token); err != nil {
						t.Fatal(err)
					}
					if token != tokens[i] {
						t.Errorf("message %s holds token %q in the database, want caller %d's %q", m.ID, token, i, tokens[i])
					}
				}
			}
			t.Logf("%d claims in %d batches, %d of them combined", c.callers, batches.Load(), combined.Load())
		})
	}
}
