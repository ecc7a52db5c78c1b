package pgstore

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// A claim that only moved over-received messages to the dead-letter queue
// reports them (the service wakes the dead-letter queue and keeps the
// source from being remembered as idle), and the claims that follow reach
// the good message behind them.
func TestClaimsGoOnPastRedrivenMessages(t *testing.T) {
	dsn, schema := newSchema(t)
	s := openSchema(t, dsn, schema)
	ctx := context.Background()
	q := createQueue(t, s, "poisoned", false)
	dlq := createQueue(t, s, "poisoned-dlq", false)
	var msgs []stores.NewMessage
	for range 9 {
		msgs = append(msgs, newMsg("m", "", ""))
	}
	for _, m := range msgs { // one by one: in sequence order
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{m}}); err != nil {
			t.Fatal(err)
		}
	}
	// The first eight were received too often already.
	for _, m := range msgs[:8] {
		if _, err := s.pool.Exec(ctx, "UPDATE messages SET receive_count = 5 WHERE message_id = $1", m.ID); err != nil {
			t.Fatal(err)
		}
	}
	redriven := 0
	claim := func() []stores.ClaimedMessage {
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
			VisibilityTimeout: time.Hour, Token: randomName("t"),
			Redrive: &stores.Redrive{MaxReceiveCount: 5, QueueName: dlq.Name}})
		if err != nil {
			t.Fatal(err)
		}
		redriven += res.Redriven
		return res.Messages
	}
	var got []stores.ClaimedMessage
	for range 3 { // a claim runs at most 8 rounds of moves
		if got = claim(); len(got) > 0 {
			break
		}
	}
	if redriven != 8 {
		t.Errorf("claims reported %d messages redriven, want 8", redriven)
	}
	if len(got) != 1 || got[0].ID != msgs[8].ID {
		t.Fatalf("claims after the moves got %+v, want the good message", got)
	}
}

func claimOne(t *testing.T, s *Store, q *stores.Queue) []stores.ClaimedMessage {
	t.Helper()
	res, err := s.MessageClaim(context.Background(), &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID,
		Max: 1, VisibilityTimeout: time.Hour, Token: randomName("t")})
	if err != nil {
		t.Fatal(err)
	}
	return res.Messages
}

// A FIFO claim that redrives lets go of its round's locks before it moves
// the over-received messages (a savepoint); a claim without a redrive
// policy may hand one of them out meanwhile, and then it must stay where it
// is: handed out, not also moved to the dead-letter queue.
func TestRedriveDoesNotMoveWhatAnotherClaimTook(t *testing.T) {
	dsn, schema := newSchema(t)
	s := openSchema(t, dsn, schema)
	other := openSchema(t, dsn, schema)
	ctx := context.Background()
	dlq := createQueue(t, s, "race-dlq.fifo", true)
	for i := range 150 {
		q := createQueue(t, s, "race"+strconv.Itoa(i)+".fifo", true)
		poison := newMsg("p", "a", "p")
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{poison, newMsg("b1", "b", "b1")}, DedupWindow: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, "UPDATE messages SET receive_count = 1 WHERE message_id = $1", poison.ID); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var took *stores.MessageClaimResult
		wg.Go(func() {
			_, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
				VisibilityTimeout: time.Hour, Token: "with-redrive", Redrive: &stores.Redrive{MaxReceiveCount: 1, QueueName: dlq.Name}})
			if err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			res, err := other.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
				VisibilityTimeout: time.Hour, Token: "without"})
			if err != nil {
				t.Error(err)
			}
			took = res
		})
		wg.Wait()
		for _, m := range took.Messages {
			if m.ID != poison.ID {
				continue
			}
			var n int
			if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE message_id = $1 AND queue_id = $2 AND token = 'without'",
				poison.ID, q.ID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("try %d: a claim without a redrive policy handed out %s, and the redriving claim moved it anyway", i, poison.ID)
			}
		}
	}
}
