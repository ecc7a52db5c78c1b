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
