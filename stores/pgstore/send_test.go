package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// One FIFO send of many messages over a few groups is one statement
// (sendFIFOSQL): its new messages are numbered in the send's order, across
// groups too; a message whose dedup key an earlier message of the same send
// has echoes that one; one whose key a stored message has echoes the
// stored one; and without a dedup window every message is stored.
func TestFIFOSendNumbersInOrder(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "order.fifo", true)
	old := newMsg("old", "g1", "stored")
	first, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{old}, DedupWindow: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []stores.NewMessage
	for i := range 40 {
		msgs = append(msgs, newMsg(fmt.Sprint("m", i), fmt.Sprint("g", i%3), fmt.Sprint("d", i)))
	}
	msgs[7].DedupID = "stored" // a stored message's key
	msgs[20].DedupID = "d3"    // an earlier message's key in this send
	msgs[33].DedupID = "d3"
	res, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: msgs, DedupWindow: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	last := first.Results[0].SequenceNumber
	for i, r := range res.Results {
		switch i {
		case 7:
			if !r.Duplicate || r.MessageID != old.ID || r.SequenceNumber != first.Results[0].SequenceNumber {
				t.Errorf("message 7 = %+v, want the stored %+v echoed", r, first.Results[0])
			}
		case 20, 33:
			if !r.Duplicate || r.MessageID != msgs[3].ID || r.SequenceNumber != res.Results[3].SequenceNumber {
				t.Errorf("message %d = %+v, want message 3's %s %s echoed", i, r, msgs[3].ID, res.Results[3].SequenceNumber)
			}
		default:
			if r.Duplicate || r.MessageID != msgs[i].ID {
				t.Errorf("message %d = %+v, want stored as %s", i, r, msgs[i].ID)
			}
			// Equal-length decimal strings compare as their numbers.
			if r.SequenceNumber <= last {
				t.Errorf("message %d numbered %s after %s: not in the send's order", i, r.SequenceNumber, last)
			}
			last = r.SequenceNumber
		}
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM messages WHERE queue_id = $1", q.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1+40-3 {
		t.Errorf("%d messages stored, want %d", n, 1+40-3)
	}

	// Without a window nothing is a duplicate.
	q0 := createQueue(t, s, "nowindow.fifo", true)
	same := []stores.NewMessage{newMsg("a", "g", "k"), newMsg("b", "g", "k")}
	res, err = s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q0.Name, QueueID: q0.ID, Messages: same})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Results {
		if r.Duplicate || r.MessageID != same[i].ID {
			t.Errorf("no window, message %d = %+v, want stored", i, r)
		}
	}
}

// A FIFO send inserts a group's first row plainly (no ON CONFLICT). Group
// upkeep can write that row without the group's send lock; a send that
// meets it mid-insert fails on the key and is run again, and then finds
// the row: the send succeeds and its message is stored once.
func TestFIFOSendRetriesWhenUpkeepWroteTheGroupRow(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "upkeep.fifo", true)
	upkeep, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer upkeep.Rollback(ctx)
	if _, err := upkeep.Exec(ctx, `INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
		VALUES ($1, 'g', 1, now())`, q.ID); err != nil {
		t.Fatal(err)
	}
	var upkeepPID int
	if err := upkeep.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&upkeepPID); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		_, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{newMsg("m", "g", "d")}, DedupWindow: 5 * time.Minute})
		sent <- err
	}()
	// The send waits on the uncommitted key; then upkeep commits.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE $1 = ANY(pg_blocking_pids(pid)))`, upkeepPID).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the send never waited for the group row's key")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := upkeep.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("send after upkeep wrote the group's row: %v", err)
	}
	var msgs, rows int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM messages WHERE queue_id = $1),
		(SELECT count(*) FROM fifo_groups WHERE queue_id = $1)`, q.ID).Scan(&msgs, &rows); err != nil {
		t.Fatal(err)
	}
	if msgs != 1 || rows != 1 {
		t.Errorf("%d messages and %d group rows, want 1 and 1", msgs, rows)
	}
}
