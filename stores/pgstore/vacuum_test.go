package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// After enough changes the vacuumer VACUUMs fifo_groups of its schema
// (PostgreSQL records it as a manual vacuum).
func TestVacuumerVacuumsGroups(t *testing.T) {
	dsn, schema := newSchema(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 4, VacuumInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := createQueue(t, s, "v.fifo", true)
	for i := range vacuumChanges/100 + 1 {
		var msgs []stores.NewMessage
		for j := range 100 {
			msgs = append(msgs, newMsg("m", fmt.Sprintf("g%d", j%8), fmt.Sprintf("d%d-%d", i, j)))
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_user_tables
			WHERE schemaname = $1 AND relname = 'fifo_groups' AND vacuum_count > 0`, schema).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 && s.vacuums.Load() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d changes: %d passes, fifo_groups vacuumed: %v", s.changes.Load(), s.vacuums.Load(), n == 1)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	for range vacuumChanges + 1 {
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
