package pgstore

import (
	"context"
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
