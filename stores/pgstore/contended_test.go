package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// A claim that gets nothing because another transaction holds the
// candidates says so (Contended): the holder may let go, or may have taken
// a wake-up meant for a message this claim's snapshot did not see, and a
// long poll that slept on the empty answer would sleep beside a receivable
// message. A claim that gets nothing because nothing is receivable does not.
func TestClaimPassedOverLockedCandidatesIsContended(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	claim := func(t *testing.T, q *stores.Queue, queueID string) *stores.MessageClaimResult {
		t.Helper()
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: queueID,
			Max: 1, VisibilityTimeout: time.Hour, Token: randomName("t")})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, c := range []struct {
		name string
		fifo bool
		lock string // what a claim in progress holds
	}{
		{"standard", false, `SELECT 1 FROM messages WHERE queue_id = $1 FOR UPDATE`},
		{"fifo", true, `SELECT 1 FROM fifo_groups WHERE queue_id = $1 FOR NO KEY UPDATE`},
	} {
		for _, path := range []string{"one statement", "general"} {
			t.Run(c.name+", "+path, func(t *testing.T) {
				q := createQueue(t, s, randomName("q"), c.fifo)
				id := q.ID
				if path == "general" {
					id = "" // by name only: the general path
				}
				if res := claim(t, q, id); len(res.Messages) != 0 || res.Contended {
					t.Fatalf("claim on an empty queue: %d messages, Contended %v; want none, false", len(res.Messages), res.Contended)
				}
				if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
					Messages: []stores.NewMessage{newMsg("b", groupOf(c.fifo), dedupOf(c.fifo))}}); err != nil {
					t.Fatal(err)
				}
				holder, err := s.pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := holder.Exec(ctx, c.lock, q.ID); err != nil {
					t.Fatal(err)
				}
				res := claim(t, q, id)
				if len(res.Messages) != 0 || !res.Contended {
					t.Errorf("claim while another holds the message: %d messages, Contended %v; want none, true", len(res.Messages), res.Contended)
				}
				if err := holder.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				if res := claim(t, q, id); len(res.Messages) != 1 {
					t.Fatalf("claim after the holder let go got %d messages, want 1", len(res.Messages))
				}
				res = claim(t, q, id)
				if len(res.Messages) != 0 || res.Contended || res.NextChange.IsZero() {
					t.Errorf("claim with the message in flight: %d messages, Contended %v, NextChange %v; want none, false, set",
						len(res.Messages), res.Contended, res.NextChange)
				}
			})
		}
	}
}

func groupOf(fifo bool) string {
	if fifo {
		return "g"
	}
	return ""
}

func dedupOf(fifo bool) string {
	if fifo {
		return randomName("d")
	}
	return ""
}
