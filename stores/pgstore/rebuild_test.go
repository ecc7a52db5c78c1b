package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// emptyGroupRows empties fifo_groups and fifo_groups_built as PostgreSQL's
// crash recovery empties unlogged tables.
func emptyGroupRows(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), "TRUNCATE fifo_groups, fifo_groups_built"); err != nil {
		t.Fatal(err)
	}
}

// groupRows is every row of fifo_groups of queue q, in group order.
func groupRows(t *testing.T, s *Store, q *stores.Queue) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT group_id, head_seq, avail_at FROM fifo_groups
		WHERE queue_id = $1 ORDER BY group_id`, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var g string
		var head int64
		var avail time.Time
		if err := rows.Scan(&g, &head, &avail); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s head %d avail %s", g, head, avail.UTC().Format(time.RFC3339Nano)))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fifo_groups is unlogged: crash recovery empties it. Whatever runs first
// afterwards (a send into a group that has messages, a receive, a delete
// of a message received before) must find the rows rebuilt from the
// messages, exactly as they were, and FIFO order kept; a group's row made
// from a send alone would put the send's message at the group's head.
func TestEmptiedGroupRowsAreRebuiltFromMessages(t *testing.T) {
	ctx := context.Background()
	for _, first := range []string{"send", "receive", "delete"} {
		t.Run(first, func(t *testing.T) {
			s := newTestStore(t)
			q := createQueue(t, s, randomName("reset")+".fifo", true)
			send := func(m stores.NewMessage) {
				t.Helper()
				if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
					Messages: []stores.NewMessage{m}, DedupWindow: 5 * time.Minute}); err != nil {
					t.Fatal(err)
				}
			}
			a1, a2, b1 := newMsg("a1", "ga", randomName("d")), newMsg("a2", "ga", randomName("d")), newMsg("b1", "gb", randomName("d"))
			send(a1)
			send(a2)
			send(b1)
			got := claimOne(t, s, q) // a1, in flight for an hour
			if len(got) != 1 || got[0].ID != a1.ID {
				t.Fatalf("first claim: %+v, want a1", got)
			}
			before := groupRows(t, s, q)
			emptyGroupRows(t, s)

			var order []string // bodies received after the reset
			switch first {
			case "send":
				a3 := newMsg("a3", "ga", randomName("d"))
				send(a3)
				if rows := groupRows(t, s, q); !slices.Equal(rows, before) {
					t.Errorf("group rows after a send into a group that has messages:\n%q\nwant them as before the reset:\n%q", rows, before)
				}
			case "receive":
				got := claimOne(t, s, q)
				if len(got) != 1 || got[0].ID != b1.ID {
					t.Fatalf("first receive after the reset: %+v, want b1 (ga's head is in flight)", got)
				}
				order = append(order, got[0].Body)
			case "delete":
				res, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
					Receipts: []stores.Receipt{{MessageID: a1.ID, Token: got[0].Token}}})
				if err != nil || res.Outcomes[0] != stores.ReceiptCurrent {
					t.Fatalf("delete of a1 after the reset: %v, %v", res, err)
				}
			}
			// Then the rest: ga waits while a1 is in flight, and a3 (sent
			// after the reset) never comes before a2.
			for {
				got := claimOne(t, s, q)
				if len(got) == 0 {
					break
				}
				order = append(order, got[0].Body)
			}
			slices.Sort(order) // across groups, either order is right
			want := map[string][]string{"send": {"b1"}, "receive": {"b1"}, "delete": {"a2", "b1"}}[first]
			if !slices.Equal(order, want) {
				t.Errorf("received after the reset: %q, want %q", order, want)
			}
			var built int
			if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM fifo_groups_built").Scan(&built); err != nil || built != 1 {
				t.Errorf("fifo_groups_built holds %d rows (%v), want 1", built, err)
			}
		})
	}
}

// PostgreSQL cannot publish an unlogged table: where a publication names
// fifo_groups, migration 19 leaves it logged, and its marker with it,
// instead of failing the store's start.
func TestPublishedGroupRowsStayLogged(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	body := ms[18].sql
	i, j := strings.Index(body, "DO $do$"), strings.LastIndex(body, "$do$;")
	if ms[18].version != 19 || i < 0 || j < i {
		t.Fatal("migration 0019 has no DO block")
	}
	persistence := func() string {
		t.Helper()
		var got string
		if err := s.pool.QueryRow(ctx, `SELECT string_agg(relname || ' ' || relpersistence::text, ', ' ORDER BY relname)
			FROM pg_class WHERE relname IN ('fifo_groups', 'fifo_groups_built')
			  AND relnamespace = current_schema()::regnamespace`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := persistence(), "fifo_groups u, fifo_groups_built u"; got != want {
		t.Fatalf("after the migrations: %s, want %s", got, want)
	}
	pub := randomName("sluice_test_pub_")
	for _, sql := range []string{
		"ALTER TABLE fifo_groups SET LOGGED",
		"ALTER TABLE fifo_groups_built SET UNLOGGED",
		"CREATE PUBLICATION " + pub + " FOR TABLE fifo_groups",
	} {
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() { _, _ = s.pool.Exec(context.Background(), "DROP PUBLICATION IF EXISTS "+pub) })
	if _, err := s.pool.Exec(ctx, body[i:j+len("$do$;")]); err != nil {
		t.Fatalf("migration 0019 with a publication of fifo_groups: %v", err)
	}
	if got, want := persistence(), "fifo_groups p, fifo_groups_built p"; got != want {
		t.Errorf("with a publication: %s, want %s", got, want)
	}
}
