package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// A claim changes only unindexed columns of a message, so each claimed
// version should stay on its row's page (a HOT update: no copy of the body
// on another page, no new index entries). One claim of ten 1 KiB messages
// updates them all in one transaction, so no old version can be pruned to
// make room meanwhile: every page must have room for a new version of each
// of its rows. Pages filled to 70 % (four such rows, room for two more)
// fail this.
func TestClaimsOfKiBMessagesStayOnTheirPages(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "hot", false)
	var sent []stores.NewMessage
	for range 10 {
		m := newMsg(strings.Repeat("b", 1024), "", "")
		m.MD5OfBody, m.MD5OfMessageAttributes, m.MD5OfSystemAttributes = strings.Repeat("0", 32), strings.Repeat("1", 32), strings.Repeat("2", 32)
		m.SenderID = "AIDAEXAMPLEEXAMPLE00"
		sent = append(sent, m)
	}
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: sent}); err != nil {
		t.Fatal(err)
	}
	pages := func() map[string]string {
		rows, err := s.pool.Query(ctx, "SELECT message_id, ((ctid::text::point)[0])::bigint::text FROM messages WHERE queue_id = $1", q.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var id, page string
			if err := rows.Scan(&id, &page); err != nil {
				t.Fatal(err)
			}
			out[id] = page
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := pages()
	res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID,
		Max: 10, VisibilityTimeout: time.Hour, Token: randomName("t")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 10 {
		t.Fatalf("claimed %d messages, want 10", len(res.Messages))
	}
	after := pages()
	moved := 0
	for id, page := range before {
		if after[id] != page {
			moved++
		}
	}
	if moved > 0 {
		t.Errorf("%d of 10 claimed messages moved to another page (pages before %v, after %v)", moved, before, after)
	}
}
