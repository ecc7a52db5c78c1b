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
