package pgstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// A FIFO claim skips a message past retention at its group's head; the
// group's recorded head must stay at that message, or the walks that start
// at the head (group upkeep, sweeps) would never see it again and it would
// stay in the table for good.
func TestExpiredHeadSkippedByAClaimIsStillSwept(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	res, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{
		Name: "ret.fifo", ID: randomName("id-"), FIFO: true, Attributes: map[string]string{}, Retention: time.Minute,
	}})
	if err != nil {
		t.Fatal(err)
	}
	q := res.Queue
	old, fresh := newMsg("old", "g", "d1"), newMsg("fresh", "g", "d2")
	var dbNow time.Time
	if err := s.pool.QueryRow(ctx, "SELECT now()").Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	for _, send := range []struct {
		m   stores.NewMessage
		now time.Time
	}{{old, dbNow.Add(-2 * time.Minute)}, {fresh, time.Time{}}} {
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{send.m}, DedupWindow: 5 * time.Minute, Now: send.now}); err != nil {
			t.Fatal(err)
		}
	}
	// As if this instance had just swept: the claim must not sweep first.
	v, _ := s.lastSweep.LoadOrStore(q.Name+"\x00"+q.ID, new(atomic.Int64))
	v.(*atomic.Int64).Store(time.Now().UnixNano())
	got := claimOne(t, s, q)
	if len(got) != 1 || got[0].ID != fresh.ID {
		t.Fatalf("claimed %+v, want the fresh message only", got)
	}
	outs, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
		Receipts: []stores.Receipt{{MessageID: got[0].ID, Token: got[0].Token}}, KeepExpired: true})
	if err != nil || outs.Outcomes[0] != stores.ReceiptCurrent {
		t.Fatalf("delete: %v, %v", outs, err)
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE message_id = $1", old.ID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Error("the message past retention is still stored after Maintain")
	}
}

// A single-message FIFO claim takes the first group by avail_at in one
// statement; when that group yields nothing (its row's avail_at is earlier
// than its head's visibility, which a row may be), the same statement goes
// on as sluice_fifo_claim does: the row is put right and the next group's
// head is claimed.
func TestOneMessageClaimGoesOnPastAGroupWithAnEarlyRow(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, randomName("early")+".fifo", true)
	send := func(m stores.NewMessage) {
		t.Helper()
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{m}, DedupWindow: 5 * time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	// As if this instance had just swept: the claims take the one statement.
	v, _ := s.lastSweep.LoadOrStore(q.Name+"\x00"+q.ID, new(atomic.Int64))
	v.(*atomic.Int64).Store(time.Now().UnixNano())
	a, b := newMsg("a", "ga", randomName("d")), newMsg("b", "gb", randomName("d"))
	send(a)
	if got := claimOne(t, s, q); len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("first claim: %+v, want a", got)
	}
	inflightRows(t, s, q, 1) // the claim put ga in flight
	send(b)
	// ga's head is in flight for an hour; its row says it is receivable,
	// and before gb's.
	if _, err := s.pool.Exec(ctx, `UPDATE fifo_groups SET avail_at = '-infinity' WHERE queue_id = $1 AND group_id = 'ga'`,
		q.ID); err != nil {
		t.Fatal(err)
	}
	got := claimOne(t, s, q)
	if len(got) != 1 || got[0].ID != b.ID {
		t.Fatalf("claim past the early row: %+v, want b", got)
	}
	// Both rows now say when their heads come back: ga's put right by the
	// function, gb's put in flight by its claim.
	inflightRows(t, s, q, 2)
	if got := claimOne(t, s, q); len(got) != 0 {
		t.Errorf("claim with both heads in flight: %+v, want none", got)
	}
}

// inflightRows checks that want of q's group rows have avail_at at their
// in-flight head's visibility.
func inflightRows(t *testing.T, s *Store, q *stores.Queue, want int) {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM fifo_groups f
		JOIN messages m ON m.queue_id = f.queue_id AND m.seq = f.head_seq
		WHERE f.queue_id = $1 AND f.avail_at = m.visible_at AND m.visible_at > now()`, q.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("%d group rows have their in-flight head's visibility as avail_at, want %d", n, want)
	}
}
