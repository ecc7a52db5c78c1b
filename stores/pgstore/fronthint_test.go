package pgstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// Beside thousands of messages in flight at a Standard queue's front, a
// claim walks past them once; this instance's next claims start after them
// (every plan node reads at most 500 rows), a visibility change through it
// makes them start at the front again, and a message behind the hint that
// became visible otherwise is received once the hint runs out.
func TestStandardClaimsStartAfterAnInFlightFront(t *testing.T) {
	a := openAudited(t, 4)
	s, q := a.s, a.std
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const inFlight = 3 * frontHintFrom
	a.exec(t, ctx, `INSERT INTO messages (queue_id, message_id, seq, body, sent_at, visible_at, receive_count)
		SELECT $1, 'f-' || i, nextval('message_seq'), 'in flight', now(), now() + interval '1 hour', 1
		FROM generate_series(1, $2::int) i`, q.ID, inFlight)
	a.exec(t, ctx, `INSERT INTO messages (queue_id, message_id, seq, body, sent_at, visible_at)
		SELECT $1, 'v-' || i, nextval('message_seq'), 'visible', now(), now() FROM generate_series(1, 30) i`, q.ID)
	a.exec(t, ctx, "ANALYZE messages")
	claim := func(max int) []stores.ClaimedMessage {
		t.Helper()
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: max,
			VisibilityTimeout: time.Hour, Token: randomName("t")})
		if err != nil {
			t.Fatal(err)
		}
		return res.Messages
	}
	if got := claim(1); len(got) != 1 || got[0].ID != "v-1" {
		t.Fatalf("first claim got %v, want v-1", got)
	}
	a.recording.Store(true)
	var taken []stores.ClaimedMessage
	for range 10 {
		taken = append(taken, claim(1)...)
	}
	a.recording.Store(false)
	a.check(t, nil)
	if len(taken) != 10 || taken[0].ID != "v-2" || taken[9].ID != "v-11" {
		t.Fatalf("claims after the first got %d messages, from %s to %s; want v-2 to v-11", len(taken), taken[0].ID, taken[len(taken)-1].ID)
	}

	// A visibility change through this instance: the message, behind the
	// hint now, is receivable at once.
	back := taken[0]
	if _, err := s.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: q.Name, QueueID: q.ID,
		MessageID: back.ID, Token: back.Token, Timeout: 0, MaxSinceFirstReceive: 12 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := claim(1); len(got) != 1 || got[0].ID != back.ID {
		t.Errorf("claim after a visibility change got %v, want %s", ids(got), back.ID)
	}

	// A message behind the hint that becomes visible otherwise (its
	// timeout ended; here the row is changed directly): received once the
	// hint has run out.
	a.exec(t, ctx, "UPDATE messages SET visible_at = now() WHERE queue_id = $1 AND message_id = 'f-7'", q.ID)
	time.Sleep(frontHintFor)
	if got := ids(claim(10)); !slices.Contains(got, "f-7") {
		t.Errorf("claim after the hint ran out got %v, want f-7 among them", got)
	}
}

func ids(ms []stores.ClaimedMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}
