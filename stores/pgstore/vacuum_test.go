package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/stores"
)

// tableStat is a counter of pg_stat_user_tables (column) for table of
// schema.
func tableStat(t *testing.T, s *Store, schema, table, column string) int64 {
	t.Helper()
	var n int64
	err := s.pool.QueryRow(context.Background(), `SELECT coalesce(sum(`+column+`), 0) FROM pg_stat_user_tables
		WHERE schemaname = $1 AND relname = $2`, schema, table).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// manualVacuums is how many times VACUUM (not autovacuum) ran on table of
// schema.
func manualVacuums(t *testing.T, s *Store, schema, table string) int64 {
	t.Helper()
	return tableStat(t, s, schema, table, "vacuum_count")
}

// deadRows is how many dead rows PostgreSQL's statistics show in table
// of schema.
func deadRows(t *testing.T, s *Store, schema, table string) int64 {
	t.Helper()
	return tableStat(t, s, schema, table, "n_dead_tup")
}

// statsLag bounds how long a session may hold its counts back from the
// statistics (10 s once idle), with room.
const statsLag = 20 * time.Second

// waitStats waits until cond holds, the statistics given time to catch up,
// or fails with what.
func waitStats(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !statsShow(cond) {
		t.Fatal(what)
	}
}

// statsShow reports whether cond holds, waiting for it as long as the
// statistics may lag.
func statsShow(cond func() bool) bool {
	deadline := time.Now().Add(statsLag)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// waitVacuumed waits until VACUUM has run on table, or fails.
func waitVacuumed(t *testing.T, s *Store, schema, table string) {
	t.Helper()
	if !statsShow(func() bool { return manualVacuums(t, s, schema, table) > 0 }) {
		t.Fatalf("%s not vacuumed: %d dead rows, %d autovacuums", table,
			deadRows(t, s, schema, table), tableStat(t, s, schema, table, "autovacuum_count"))
	}
}

// vacuumDue is the number of dead rows that calls for a pass over table.
func vacuumDue(table string) int64 {
	for _, v := range vacuumTables {
		if v.name == table {
			return v.due
		}
	}
	panic("no vacuum threshold for " + table)
}

// openVacuuming opens a Store on schema (a new one if empty) whose
// vacuumer looks every 20 ms, closed when the test ends.
func openVacuuming(t *testing.T, schema string) (*Store, string) {
	t.Helper()
	dsn := databaseURL(t)
	fresh := schema == ""
	if fresh {
		dsn, schema = newSchema(t)
	}
	s, err := Open(context.Background(), dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 4, VacuumInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if fresh {
		withoutAutovacuum(t, s)
	}
	return s, schema
}

// withoutAutovacuum turns autovacuum off for the tables the vacuumer looks
// after in s's schema. An autovacuum between a test's deletes and the
// vacuumer's look would take the dead rows the test counts on (at the
// default naptime, one visit a minute reaches every test schema).
func withoutAutovacuum(t *testing.T, s *Store) {
	t.Helper()
	for _, v := range vacuumTables {
		if _, err := s.pool.Exec(context.Background(), "ALTER TABLE "+v.name+" SET (autovacuum_enabled = false)"); err != nil {
			t.Fatal(err)
		}
	}
}

// lifecycles sends, receives and deletes n messages on q, a page at a
// time; on a FIFO queue the messages go in 8 groups and are received 10
// at a time.
func lifecycles(t *testing.T, s *Store, q *stores.Queue, n int) {
	t.Helper()
	ctx := context.Background()
	const page = 500
	for done := 0; done < n; done += page {
		msgs := make([]stores.NewMessage, min(page, n-done))
		for i := range msgs {
			msgs[i] = newMsg("m", "", "")
			if q.FIFO {
				msgs[i] = newMsg("m", fmt.Sprint("g", i%8), randomName("d"))
			}
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		most := len(msgs)
		if q.FIFO {
			most = 10
		}
		for claimed := 0; claimed < len(msgs); {
			res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: most,
				VisibilityTimeout: time.Minute, Token: randomName("t")})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) == 0 {
				t.Fatalf("claimed %d of %d", claimed, len(msgs))
			}
			claimed += len(res.Messages)
			receipts := make([]stores.Receipt, len(res.Messages))
			for i, m := range res.Messages {
				receipts[i] = stores.Receipt{MessageID: m.ID, Token: m.Token}
			}
			if _, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID, Receipts: receipts}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The vacuumer VACUUMs fifo_groups of its schema (PostgreSQL records it
// as a manual vacuum) once it holds enough dead rows, and not before.
func TestVacuumerVacuumsGroups(t *testing.T) {
	s, schema := openVacuuming(t, "")
	q := createQueue(t, s, "v.fifo", true)
	// Every receive and delete updates the rows of its groups.
	lifecycles(t, s, q, 100)
	waitStats(t, "group updates not counted", func() bool {
		return deadRows(t, s, schema, "fifo_groups") > 0 || manualVacuums(t, s, schema, "fifo_groups") > 0
	})
	time.Sleep(10 * 20 * time.Millisecond) // ten looks
	if dead := deadRows(t, s, schema, "fifo_groups"); dead >= vacuumDue("fifo_groups") {
		t.Fatalf("%d dead rows: too many to see that the vacuumer waits", dead)
	}
	if n := manualVacuums(t, s, schema, "fifo_groups"); n != 0 {
		t.Fatalf("fifo_groups vacuumed before it held %d dead rows", vacuumDue("fifo_groups"))
	}
	for manualVacuums(t, s, schema, "fifo_groups") == 0 && deadRows(t, s, schema, "fifo_groups") < vacuumDue("fifo_groups") {
		lifecycles(t, s, q, 500)
	}
	waitVacuumed(t, s, schema, "fifo_groups")
}

// The vacuumer VACUUMs messages once it holds enough dead rows, and not
// before: until then every deleted message's row, and its entry at the
// front of the queue's sequence index, stays for every receive to walk
// past.
func TestVacuumerVacuumsMessages(t *testing.T) {
	s, schema := openVacuuming(t, "")
	q := createQueue(t, s, "v", false)
	quarter := int(vacuumDue("messages") / 4) // at most two dead rows each: the claim's version, the delete
	lifecycles(t, s, q, quarter)
	waitStats(t, "deletions not counted", func() bool {
		return deadRows(t, s, schema, "messages") >= int64(quarter) || manualVacuums(t, s, schema, "messages") > 0
	})
	time.Sleep(10 * 20 * time.Millisecond) // ten looks
	if n := manualVacuums(t, s, schema, "messages"); n != 0 {
		t.Fatalf("messages vacuumed before it held %d dead rows", vacuumDue("messages"))
	}
	lifecycles(t, s, q, int(vacuumDue("messages")))
	waitVacuumed(t, s, schema, "messages")
}

// Dead rows count whichever instance left them: two instances that share
// a load, each deleting fewer messages than call for a pass, get one
// between them.
func TestVacuumerCountsEveryInstance(t *testing.T) {
	a, schema := openVacuuming(t, "")
	b, _ := openVacuuming(t, schema)
	q := createQueue(t, a, "v", false)
	half := int(vacuumDue("messages"))*3/5 - int(vacuumDue("messages"))*3/5%500
	for range half / 500 {
		lifecycles(t, a, q, 500)
		lifecycles(t, b, q, 500)
	}
	waitVacuumed(t, a, schema, "messages")
}

// A Store with a negative VacuumInterval leaves vacuuming to autovacuum
// (and does not hand the negative interval to a ticker, which panics).
func TestVacuumerOff(t *testing.T) {
	dsn, schema := newSchema(t)
	s, err := Open(context.Background(), dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 4, VacuumInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	withoutAutovacuum(t, s) // else it may take the dead rows this test waits to see
	q := createQueue(t, s, "v", false)
	lifecycles(t, s, q, int(vacuumDue("messages")))
	waitStats(t, "deletions not counted", func() bool { return deadRows(t, s, schema, "messages") >= vacuumDue("messages") })
	time.Sleep(100 * time.Millisecond)
	if n := s.vacuums.Load(); n != 0 {
		t.Errorf("%d vacuum passes with the vacuumer off", n)
	}
}

// A pass waits for a table another session holds (as autovacuum's own
// vacuum does, which PostgreSQL then cancels) instead of skipping it, runs
// once the table is free, and hands its connection back with the
// session's lock_timeout as it found it.
func TestVacuumerWaitsForTheTable(t *testing.T) {
	s, schema := openVacuuming(t, "")
	ctx := context.Background()
	q := createQueue(t, s, "v", false)
	holder, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(holder.Release) // before the Store closes, or its Close waits for it
	defer release()
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE messages IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	lifecycles(t, s, q, int(vacuumDue("messages")))
	waitStats(t, "no VACUUM waited for messages", func() bool {
		var waiting bool
		err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'VACUUM%messages%' AND wait_event_type = 'Lock')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		return waiting
	})
	if n := manualVacuums(t, s, schema, "messages"); n != 0 {
		t.Fatalf("messages vacuumed %d times while another session held it", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	release()
	waitVacuumed(t, s, schema, "messages")

	conns := make([]*pgxpool.Conn, s.pool.Config().MaxConns)
	for i := range conns {
		if conns[i], err = s.pool.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Release()
		var v string
		if err := conns[i].QueryRow(ctx, "SHOW lock_timeout").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "0" {
			t.Errorf("a pooled session has lock_timeout %s after the pass", v)
		}
	}
}

// The wait after a pass follows how long a pass over the due dead rows
// takes, within a cap.
func TestVacuumWait(t *testing.T) {
	for _, c := range []struct{ perDue, want time.Duration }{
		{0, 0},
		{200 * time.Millisecond, 2 * time.Second},
		{vacuumMaxWait / vacuumBackoff, vacuumMaxWait},
		{time.Minute, vacuumMaxWait},
	} {
		if got := vacuumWait(c.perDue); got != c.want {
			t.Errorf("vacuumWait(%s) = %s, want %s", c.perDue, got, c.want)
		}
	}
}

// A long pass over many dead rows does not make the next wait long: the
// wait scales with a pass over the threshold's rows.
func TestPassOverDue(t *testing.T) {
	for _, c := range []struct {
		took            time.Duration
		dead, threshold int64
		want            time.Duration
	}{
		{6 * time.Second, 200_000, 5_000, 150 * time.Millisecond},
		{time.Second, 5_000, 5_000, time.Second},
		{time.Second, 14_000, 7_000, 500 * time.Millisecond},
		{time.Second, 3_000, 5_000, time.Second}, // never more than the pass itself
	} {
		if got := passOverDue(c.took, c.dead, c.threshold); got != c.want {
			t.Errorf("passOverDue(%s, %d, %d) = %s, want %s", c.took, c.dead, c.threshold, got, c.want)
		}
	}
}

// A pass vacuums the indexes in its own session: it starts no parallel
// workers, however large the indexes. PostgreSQL says so in a DEBUG2
// message to the session, which this store's sessions receive.
func TestVacuumStartsNoParallelWorkers(t *testing.T) {
	dsn, schema := newSchema(t)
	// Every index qualifies for a worker, and the session hears DEBUG2.
	dsn = withParams(dsn, "min_parallel_index_scan_size=0&client_min_messages=debug2")
	var mu sync.Mutex
	var vacuumed, launched []string
	s, err := Open(context.Background(), dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 4,
		VacuumInterval: 20 * time.Millisecond,
		OnNotice: func(n *pgconn.Notice) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case strings.HasPrefix(n.Message, "scanned index "):
				vacuumed = append(vacuumed, n.Message)
			case strings.Contains(n.Message, "parallel vacuum worker"):
				launched = append(launched, n.Message)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	withoutAutovacuum(t, s)
	q := createQueue(t, s, "v", false)
	lifecycles(t, s, q, int(vacuumDue("messages")))
	waitVacuumed(t, s, schema, "messages")
	mu.Lock()
	defer mu.Unlock()
	if len(vacuumed) == 0 {
		t.Fatal("no pass vacuumed an index, or its DEBUG2 messages did not reach the session: this test cannot see workers")
	}
	if len(launched) > 0 {
		t.Fatalf("the pass started parallel workers: %q", launched)
	}
}
