package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// manualVacuums is how many times VACUUM (not autovacuum) ran on table of
// schema.
func manualVacuums(t *testing.T, s *Store, schema, table string) int64 {
	t.Helper()
	var n int64
	err := s.pool.QueryRow(context.Background(), `SELECT coalesce(sum(vacuum_count), 0) FROM pg_stat_user_tables
		WHERE schemaname = $1 AND relname = $2`, schema, table).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitVacuumed waits until VACUUM has run on table, or fails.
func waitVacuumed(t *testing.T, s *Store, schema, table string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for manualVacuums(t, s, schema, table) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d changes and %d deletions: %d passes, %s not vacuumed",
				s.changes.Load(), s.deletions.Load(), s.vacuums.Load(), table)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// vacuumDue is the number of changes that calls for a pass over table.
func vacuumDue(table string) int64 {
	for _, v := range vacuumTables {
		if v.name == table {
			return v.due
		}
	}
	panic("no vacuum threshold for " + table)
}

// openVacuuming opens a Store on a schema of its own whose vacuumer looks
// every 20 ms, closed when the test ends.
func openVacuuming(t *testing.T) (*Store, string) {
	t.Helper()
	dsn, schema := newSchema(t)
	s, err := Open(context.Background(), dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 4, VacuumInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, schema
}

// After enough changes the vacuumer VACUUMs fifo_groups of its schema
// (PostgreSQL records it as a manual vacuum); messages waits for
// deletions, which sends alone are not.
func TestVacuumerVacuumsGroups(t *testing.T) {
	s, schema := openVacuuming(t)
	ctx := context.Background()
	q := createQueue(t, s, "v.fifo", true)
	for i := range vacuumDue("fifo_groups")/100 + 1 {
		var msgs []stores.NewMessage
		for j := range 100 {
			msgs = append(msgs, newMsg("m", fmt.Sprintf("g%d", j%8), fmt.Sprintf("d%d-%d", i, j)))
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	waitVacuumed(t, s, schema, "fifo_groups")
	if n := manualVacuums(t, s, schema, "messages"); n != 0 {
		t.Errorf("messages vacuumed %d times after sends alone", n)
	}
}

// After enough messages are deleted the vacuumer VACUUMs messages too:
// until then every deleted message's row, and its entry at the front of
// the queue's sequence index, stays for every receive to walk past.
func TestVacuumerVacuumsMessages(t *testing.T) {
	s, schema := openVacuuming(t)
	ctx := context.Background()
	q := createQueue(t, s, "v", false)
	const page = 500
	for deleted := int64(0); deleted < vacuumDue("messages"); deleted += page {
		if n := manualVacuums(t, s, schema, "messages"); n != 0 {
			t.Fatalf("messages vacuumed after %d of %d deletions", deleted, vacuumDue("messages"))
		}
		msgs := make([]stores.NewMessage, page)
		for i := range msgs {
			msgs[i] = newMsg("m", "", "")
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: page,
			VisibilityTimeout: time.Minute, Token: fmt.Sprint("t", deleted)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != page {
			t.Fatalf("claimed %d of %d", len(res.Messages), page)
		}
		receipts := make([]stores.Receipt, len(res.Messages))
		for i, m := range res.Messages {
			receipts[i] = stores.Receipt{MessageID: m.ID, Token: m.Token}
		}
		if _, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID, Receipts: receipts}); err != nil {
			t.Fatal(err)
		}
	}
	waitVacuumed(t, s, schema, "messages")
}

// A Store with a negative VacuumInterval leaves vacuuming to autovacuum
// (and does not hand the negative interval to a ticker, which panics).
func TestVacuumerOff(t *testing.T) {
	dsn, schema := newSchema(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 4, VacuumInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	q := createQueue(t, s, "v", false)
	var msgs []stores.NewMessage
	for range vacuumDue("fifo_groups") + 1 {
		msgs = append(msgs, newMsg("m", "", ""))
	}
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	s.Close()
	if n := s.vacuums.Load(); n != 0 {
		t.Errorf("%d vacuum passes with the vacuumer off", n)
	}
}
