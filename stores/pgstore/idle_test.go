package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

func TestIdleMemoRules(t *testing.T) {
	t0 := time.Now()
	m := newIdleMemo(time.Second)

	from := m.begin()
	m.remember("q", "id1", from, t0, time.Time{})
	if _, ok := m.answer("q", "id1", t0.Add(500*time.Millisecond)); !ok {
		t.Error("no answer within maxAge")
	}
	if _, ok := m.answer("q", "id1", t0.Add(time.Second)); ok {
		t.Error("an answer after maxAge")
	}
	if _, ok := m.answer("q", "id2", t0); ok {
		t.Error("an answer for another incarnation")
	}
	if _, ok := m.answer("other", "id1", t0); ok {
		t.Error("an answer for another queue")
	}
	m.woke("q")
	if _, ok := m.answer("q", "id1", t0); ok {
		t.Error("an answer after a wake-up")
	}

	// A wake-up while the claim ran: its empty answer may predate the change.
	from = m.begin()
	m.woke("q")
	m.remember("q", "id1", from, t0, time.Time{})
	if _, ok := m.answer("q", "id1", t0); ok {
		t.Error("remembered a claim that a wake-up overtook")
	}
	// A wake-up of another queue does not matter.
	from = m.begin()
	m.woke("other")
	m.remember("q", "id1", from, t0, time.Time{})
	if _, ok := m.answer("q", "id1", t0); !ok {
		t.Error("another queue's wake-up spoiled the memo")
	}
	// Every queue woken (the listener reconnected) while the claim ran.
	from = m.begin()
	m.wokeAll()
	m.remember("q", "id1", from, t0, time.Time{})
	if _, ok := m.answer("q", "id1", t0); ok {
		t.Error("remembered a claim across a wake-up of all queues")
	}

	// The next visibility change ends the memo sooner, and is reported.
	next := t0.Add(200 * time.Millisecond)
	m.remember("q", "id1", m.begin(), t0, next)
	if got, ok := m.answer("q", "id1", t0.Add(100*time.Millisecond)); !ok || !got.Equal(next) {
		t.Errorf("answer = %v, %v; want %v, true", got, ok, next)
	}
	if _, ok := m.answer("q", "id1", next); ok {
		t.Error("an answer at the next visibility change")
	}

	// Off.
	off := newIdleMemo(-1)
	off.remember("q", "id1", off.begin(), t0, time.Time{})
	if _, ok := off.answer("q", "id1", t0); ok {
		t.Error("a disabled memo answered")
	}
}

func TestIdleMemoPruneForgetsSafely(t *testing.T) {
	t0 := time.Now()
	m := newIdleMemo(time.Minute)
	from := m.begin() // a claim of "q" starts
	for i := range idleStateLimit + 1 {
		m.woke("q" + string(rune('a'+i%26)) + time.Duration(i).String())
	}
	// The map was pruned meanwhile, "q"'s wake-up count with it: the
	// claim must not remember.
	m.woke("q")
	for i := range idleStateLimit {
		m.woke("r" + time.Duration(i).String())
	}
	m.remember("q", "id", from, t0, time.Time{})
	if _, ok := m.answer("q", "id", t0); ok {
		t.Error("remembered across a prune that dropped the queue's wake-up")
	}
	if len(m.state) > idleStateLimit {
		t.Errorf("%d states, limit %d", len(m.state), idleStateLimit)
	}
}

// openWithMemo opens a second Store on the same schema, as another
// instance would be.
func openWithMemo(t *testing.T, dsn, schema string, memo time.Duration) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Open(ctx, dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 4, IdleMemo: memo})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func claimOne(t *testing.T, s *Store, q *stores.Queue, verify bool) []stores.ClaimedMessage {
	t.Helper()
	res, err := s.MessageClaim(context.Background(), &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID,
		Max: 1, VisibilityTimeout: time.Hour, Token: randomName("t"), Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	return res.Messages
}

// claimWithin claims until a message comes or the limit passes.
func claimWithin(t *testing.T, s *Store, q *stores.Queue, limit time.Duration) []stores.ClaimedMessage {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got := claimOne(t, s, q, false); len(got) > 0 {
			return got
		}
	}
	return nil
}

// A receive that found nothing answers for the next ones, until a change
// that the store hears of; one that changes nothing it hears of (a row
// written behind its back) shows after Verify or IdleMemo.
func TestIdleMemoAnswersUntilItHearsOfAChange(t *testing.T) {
	dsn, schema := newSchema(t)
	a := openWithMemo(t, dsn, schema, 300*time.Millisecond)
	ctx := context.Background()
	for _, fifo := range []bool{false, true} {
		name := "idle"
		if fifo {
			name += ".fifo"
		}
		q := createQueue(t, a, name, fifo)
		if got := claimOne(t, a, q, false); len(got) != 0 {
			t.Fatalf("%s: claimed %d from an empty queue", name, len(got))
		}
		// Behind the store's back: no wake-up.
		group := ""
		if fifo {
			group = "g"
		}
		if _, err := a.pool.Exec(ctx, `INSERT INTO messages (queue_id, message_id, seq, group_id, body, sent_at, visible_at)
			VALUES ($1, $2, nextval('message_seq'), $3, 'b', now(), now())`, q.ID, randomName("m-"), group); err != nil {
			t.Fatal(err)
		}
		if fifo {
			if _, err := a.pool.Exec(ctx, `INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
				SELECT queue_id, group_id, seq, visible_at FROM messages WHERE queue_id = $1`, q.ID); err != nil {
				t.Fatal(err)
			}
		}
		if got := claimOne(t, a, q, false); len(got) != 0 {
			t.Errorf("%s: the memo did not answer (claimed %d)", name, len(got))
		}
		if got := claimOne(t, a, q, true); len(got) != 1 {
			t.Errorf("%s: a verifying claim got %d messages, want 1", name, len(got))
		}
		// Again, with the message in flight for an hour, and this time let
		// IdleMemo run out.
		if got := claimOne(t, a, q, false); len(got) != 0 {
			t.Fatalf("%s: claimed a message in flight", name)
		}
		if _, err := a.pool.Exec(ctx, `UPDATE messages SET visible_at = now() WHERE queue_id = $1`, q.ID); err != nil {
			t.Fatal(err)
		}
		if fifo {
			if _, err := a.pool.Exec(ctx, `UPDATE fifo_groups SET avail_at = now() WHERE queue_id = $1`, q.ID); err != nil {
				t.Fatal(err)
			}
		}
		if got := claimOne(t, a, q, false); len(got) != 0 {
			t.Errorf("%s: the memo did not answer the second time (claimed %d)", name, len(got))
		}
		if got := claimWithin(t, a, q, 10*time.Second); len(got) != 1 {
			t.Errorf("%s: after IdleMemo ran out: %d messages, want 1", name, len(got))
		}
	}
}

// Another instance's send, and its shortening of a visibility timeout,
// reach this instance's memo through LISTEN/NOTIFY; with an hour-long
// IdleMemo nothing else could end it.
func TestIdleMemoHearsOtherInstances(t *testing.T) {
	dsn, schema := newSchema(t)
	a := openWithMemo(t, dsn, schema, time.Hour)
	b := openWithMemo(t, dsn, schema, time.Hour)
	ctx := context.Background()
	for _, fifo := range []bool{false, true} {
		name := "heard"
		if fifo {
			name += ".fifo"
		}
		q := createQueue(t, a, name, fifo)
		if got := claimOne(t, a, q, false); len(got) != 0 {
			t.Fatalf("%s: claimed %d from an empty queue", name, len(got))
		}
		m := newMsg("x", "", "")
		if fifo {
			m = newMsg("x", "g", "d")
		}
		if _, err := b.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{m}, DedupWindow: 5 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		got := claimWithin(t, a, q, 10*time.Second)
		if len(got) != 1 {
			t.Fatalf("%s: another instance's send never showed: %d messages", name, len(got))
		}
		// In flight for an hour; a has nothing to receive and remembers so.
		if more := claimOne(t, a, q, false); len(more) != 0 {
			t.Fatalf("%s: claimed a message in flight", name)
		}
		// b makes it visible in a moment (not at once: no release).
		res, err := b.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: q.Name, QueueID: q.ID,
			MessageID: got[0].ID, Token: got[0].Token, Timeout: 200 * time.Millisecond})
		if err != nil || res.Outcome != stores.ReceiptCurrent {
			t.Fatalf("%s: change visibility: %+v, %v", name, res, err)
		}
		if again := claimWithin(t, a, q, 10*time.Second); len(again) != 1 {
			t.Errorf("%s: a shortened visibility timeout never showed: %d messages", name, len(again))
		}
	}
}

// A claim that only moved over-received messages to the dead-letter queue
// found no message for its caller, but the queue is not idle: the next
// receive must look again, not answer from the memo.
func TestIdleMemoIgnoresAClaimThatOnlyRedrove(t *testing.T) {
	dsn, schema := newSchema(t)
	s := openWithMemo(t, dsn, schema, time.Hour)
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
	claim := func() []stores.ClaimedMessage {
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
			VisibilityTimeout: time.Hour, Token: randomName("t"),
			Redrive: &stores.Redrive{MaxReceiveCount: 5, QueueName: dlq.Name}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Messages
	}
	var got []stores.ClaimedMessage
	for range 3 { // a claim runs at most 8 rounds of moves
		if got = claim(); len(got) > 0 {
			break
		}
	}
	if len(got) != 1 || got[0].ID != msgs[8].ID {
		t.Fatalf("claims after the moves got %+v, want the good message", got)
	}
}
