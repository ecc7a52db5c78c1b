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
		MessageID: back.ID, Token: back.Token, Timeout: 0, MaxSinceReceive: 12 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := claim(1); len(got) != 1 || got[0].ID != back.ID {
		t.Errorf("claim after a visibility change got %v, want %s", ids(got), back.ID)
	}

	// A message behind the hint that becomes visible otherwise (its
	// timeout ended; here the row is changed directly): received once the
	// hint has run out.
	a.exec(t, ctx, "UPDATE messages SET visible_at = now() WHERE queue_id = $1 AND message_id = 'f-7'", q.ID)
	time.Sleep(hintFor(inFlight))
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

// Beside thousands of messages in flight and none visible, a Standard claim
// that gets nothing walks them once; the next ones read only what came after
// (every plan node reads at most 500 rows) and still say when the first of
// the front becomes visible. A message sent after the front is received. On
// the one-statement path and on the general one.
func TestEmptyStandardClaimsReadAfterTheFront(t *testing.T) {
	a := openAudited(t, 4)
	s := a.s
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, general := range []bool{false, true} {
		q := createQueue(t, s, randomName("front"), false)
		t0 := time.Now().Truncate(time.Microsecond)
		start := time.Now()
		clock := func() time.Time { return t0.Add(time.Since(start)).Truncate(time.Microsecond) }
		first := t0.Add(10 * time.Minute) // f-9's visibility timeout ends first
		a.exec(t, ctx, `INSERT INTO messages (queue_id, message_id, seq, body, sent_at, visible_at, receive_count)
			SELECT $1, $1 || 'f-' || i, nextval('message_seq'), 'in flight', $3::timestamptz,
				CASE WHEN i = 9 THEN $4::timestamptz ELSE $3::timestamptz + interval '1 hour' END, 1
			FROM generate_series(1, $2::int) i`, q.ID, 3*frontHintFrom, t0, first)
		a.exec(t, ctx, "ANALYZE messages")
		params := func() *stores.MessageClaimParams {
			p := &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
				VisibilityTimeout: time.Hour, Token: randomName("t"), Now: clock()}
			if general {
				p.QueueID = "" // the general path
			}
			return p
		}
		claimNothing := func(what string) {
			t.Helper()
			res, err := s.MessageClaim(ctx, params())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) > 0 || res.NextChange.Sub(first).Abs() > time.Second {
				t.Fatalf("general path %v, %s: got %v, NextChange %v; want nothing, NextChange %v",
					general, what, ids(res.Messages), res.NextChange, first)
			}
		}
		claimNothing("the first claim")
		a.recording.Store(true)
		for range 5 {
			claimNothing("a claim after the first")
		}
		a.recording.Store(false)
		a.check(t, nil)

		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Now: clock(),
			Messages: []stores.NewMessage{{ID: q.ID + "sent", Body: "after the front"}}}); err != nil {
			t.Fatal(err)
		}
		res, err := s.MessageClaim(ctx, params())
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(res.Messages); !slices.Equal(got, []string{q.ID + "sent"}) {
			t.Errorf("general path %v: a claim after a send got %v, want the message sent", general, got)
		}
	}
}

// A front hint ends when the first message it covers that was in flight
// becomes visible, not later: the next claim walks from the front and takes
// it. On the one-statement path and on the general one.
func TestTheFrontHintEndsWhenAMessageItCoversBecomesVisible(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for _, general := range []bool{false, true} {
		q := createQueue(t, s, randomName("front"), false)
		t0 := time.Now().Truncate(time.Microsecond)
		soon := 300 * time.Millisecond // f-5's visibility timeout ends then
		if _, err := s.pool.Exec(ctx, `INSERT INTO messages (queue_id, message_id, seq, body, sent_at, visible_at, receive_count)
			SELECT $1, $1 || 'f-' || i, nextval('message_seq'), 'in flight', $3::timestamptz,
				CASE WHEN i = 5 THEN $4::timestamptz ELSE $3::timestamptz + interval '1 hour' END, 1
			FROM generate_series(1, $2::int) i`, q.ID, 3*frontHintFrom, t0, t0.Add(soon)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO messages (queue_id, message_id, seq, body, sent_at, visible_at)
			SELECT $1, $1 || 'v-' || i, nextval('message_seq'), 'visible', $2, $2 FROM generate_series(1, 30) i`, q.ID, t0); err != nil {
			t.Fatal(err)
		}
		id := func(name string) []string { return []string{q.ID + name} }
		claim := func(now time.Time) []string {
			t.Helper()
			p := &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
				VisibilityTimeout: time.Hour, Token: randomName("t"), Now: now}
			if general {
				p.QueueID = ""
			}
			res, err := s.MessageClaim(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			return ids(res.Messages)
		}
		if got := claim(t0); !slices.Equal(got, id("v-1")) {
			t.Fatalf("general path %v: first claim got %v, want v-1", general, got)
		}
		if got := claim(t0); !slices.Equal(got, id("v-2")) {
			t.Fatalf("general path %v: second claim got %v, want v-2", general, got)
		}
		time.Sleep(soon + 100*time.Millisecond)
		if got := claim(t0.Add(soon + 100*time.Millisecond)); !slices.Equal(got, id("f-5")) {
			t.Errorf("general path %v: claim after f-5 became visible got %v, want f-5", general, got)
		}
	}
}

// When a hint ends, one claim walks from the front to renew it; the others
// start after the ended hint meanwhile, and what they find changes nothing
// (what the ended hint covered may have become visible). A renewal that
// never reports gives way to another after renewalFor; a walk from the front
// that passed few messages forgets the hint.
func TestAnEndedFrontHintIsRenewedByOneClaim(t *testing.T) {
	var h frontHints
	now := time.Unix(1000, 0)
	h.found("q", now, walk{passed: 5000, first: 5001, next: now.Add(time.Hour)})
	if got := h.from("q", now); got != 5000 {
		t.Fatalf("from a new hint: %d, want 5000", got)
	}
	if got := h.nextChange("q", now, 5000, time.Time{}); !got.Equal(now.Add(time.Hour)) {
		t.Errorf("NextChange of a claim after the hint: %v, want the hint's next, %v", got, now.Add(time.Hour))
	}
	end := now.Add(hintFor(5000))
	if got := h.from("q", end.Add(-1)); got != 5000 {
		t.Errorf("from just before the end: %d, want 5000", got)
	}
	if got := h.from("q", end); got != 0 {
		t.Errorf("from the first claim after the end: %d, want 0 (it renews the hint)", got)
	}
	if got := h.from("q", end); got != 5000 {
		t.Errorf("from a claim during the renewal: %d, want 5000", got)
	}
	h.found("q", end, walk{from: 5000, passed: 2000, first: 7001})
	if got := h.nextChange("q", end, 5000, end.Add(time.Minute)); !got.Equal(end) {
		t.Errorf("NextChange of a claim after the ended hint: %v, want now (%v)", got, end)
	}
	h.found("q", end, walk{passed: 6000, first: 6001, next: end.Add(time.Minute)})
	if got := h.from("q", end); got != 6000 {
		t.Errorf("from after the renewal: %d, want 6000 (not moved by the claim after the ended hint)", got)
	}

	end = end.Add(hintFor(6000))
	if got := h.from("q", end); got != 0 {
		t.Errorf("from the first claim after the second end: %d, want 0", got)
	}
	if got := h.from("q", end.Add(renewalFor-1)); got != 6000 {
		t.Errorf("from a claim during the renewal: %d, want 6000", got)
	}
	if got := h.from("q", end.Add(renewalFor)); got != 0 {
		t.Errorf("from a claim after a renewal that never reported: %d, want 0", got)
	}
	h.found("q", end.Add(renewalFor), walk{passed: 10, first: 11})
	if _, ok := h.byQueue["q"]; ok {
		t.Error("a walk from the front past 10 messages kept the ended hint")
	}

	// A hint ends when the first message it covers becomes visible.
	h.found("q", now, walk{passed: 5000, first: 5001, next: now.Add(100 * time.Millisecond)})
	if got := h.from("q", now.Add(100*time.Millisecond)); got != 0 {
		t.Errorf("from when a covered message becomes visible: %d, want 0", got)
	}
}
