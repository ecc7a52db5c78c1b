package pgstore

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// A queue's tables churn: every message is inserted, updated and deleted,
// and every FIFO receive and delete updates its group's row in fifo_groups
// (avail_at is indexed, so not in place). Autovacuum visits a database at
// most once a minute (autovacuum_naptime), and a minute of dead rows costs
// more than the vacuum that removes them:
//   - fifo_groups, a few rows per queue, gathers tens of thousands of dead
//     versions that every FIFO receive walks past;
//   - messages grows by every message deleted (nothing reuses a dead row's
//     space until a vacuum records it as free), and a Standard receive walks
//     the queue's sequence index from its front, over the entry of every
//     message deleted since the last vacuum. Under a steady load the walk
//     grows until receives take milliseconds each; on the bench (make
//     bench-soak), Standard batches of 10 fell from 8,310 lifecycles a
//     second to under 3,000 within four minutes.
// So the vacuumer VACUUMs each table in passing once it holds enough dead
// rows. It counts them as PostgreSQL's statistics do (n_dead_tup), which
// add up the rows every instance's sessions left dead and start again at
// every pass, whoever ran it: an instance's own count would let N
// instances sharing a load gather N times the dead rows between passes,
// and be lost when the instance scales to zero. One instance at a time
// runs a pass (an advisory lock); TRUNCATE false, because truncating
// takes an exclusive lock on the table.
//
// After a pass, by any instance, the next one waits ten times as long as
// a pass over the threshold's dead rows takes, by the rate of the last
// pass this instance ran, and never more than vacuumMaxWait. Not ten
// times the last pass itself: a pass's time grows with the dead rows it
// removes, and those grow with the wait, so a long pass (after a stall,
// or over a table that has just grown by a large backlog) would lengthen
// the wait that makes the next one long. Passes over a few thousand dead
// rows stay short on a large table too: PostgreSQL skips the indexes
// when under 2 % of the table's pages hold dead rows.
//
// A pass waits for the table's lock rather than skipping a table another
// VACUUM holds. Autovacuum still visits these tables (it also analyzes
// them and prevents wraparound), and on a large table its own vacuum,
// paced by autovacuum_vacuum_cost_delay, can hold the lock for minutes:
// passes that skipped the table meanwhile let its dead rows grow without
// bound (beside a million resident messages, Standard batches of 10 fell
// to 400-500 lifecycles a second for two minutes). PostgreSQL cancels an
// autovacuum that keeps another session waiting for a lock longer than
// deadlock_timeout (unless it runs to prevent wraparound), so the pass
// gets the table within a second or so; vacuumLockWait bounds the wait
// for holders that are not cancelled.

const (
	vacuumEvery   = 2 * time.Second // looks at most this often
	vacuumBackoff = 10              // after any pass, wait 10× what a pass over the due dead rows takes
	// vacuumMaxWait caps that wait. The first pass over a table that has
	// just grown by a large backlog sets its pages all-visible, once, and
	// can take tens of seconds at any count of dead rows; the dead rows
	// of minutes of waiting would cost more than the passes after it.
	vacuumMaxWait = 30 * time.Second
	// vacuumLockWait is how long a pass waits for a table's lock (see
	// above): longer than deadlock_timeout's default of 1 s.
	vacuumLockWait = 5 * time.Second
	// vacuumQuiet: an instance that changed no rows for this long stops
	// looking (whoever still changes rows looks). It is longer than a
	// session may hold its counts back from the statistics (10 s, when
	// it goes idle within a second of its last report), so the rows an
	// instance left dead are counted before it stops.
	vacuumQuiet     = 15 * time.Second
	vacuumLockSQL   = "SELECT pg_try_advisory_lock(hashtextextended('sluice.pgstore.vacuum:' || coalesce(current_schema(), ''), 0))"
	vacuumUnlockSQL = "SELECT pg_advisory_unlock(hashtextextended('sluice.pgstore.vacuum:' || coalesce(current_schema(), ''), 0))"
)

// vacuumSettings are a pass's session settings: its wait for the table's
// lock, and no parallel workers. PostgreSQL would otherwise start one for
// each index over 512 kB but one (up to max_parallel_maintenance_workers,
// 2 by default), every pass: a process forked for the pass, which loads
// its caches from cold, to share the work on indexes that cover little
// more than a queue's front. Without them a pass takes about a third of
// the CPU and of the time (docs/postgres.md).
var vacuumSettings = "SET lock_timeout = " + strconv.FormatInt(vacuumLockWait.Milliseconds(), 10) +
	"; SET max_parallel_maintenance_workers = 0"

// vacuumTables are the tables the vacuumer looks after, each with the
// dead rows in it that call for a pass.
var vacuumTables = [...]struct {
	name string
	due  int64
}{
	{"fifo_groups", 2000},
	{"messages", 5000},
}

// vacuumLookSQL reads, for the vacuumer, each table's dead rows and the
// seconds since the last VACUUM of either ended (NULL if none did), in
// the store's schema (search_path).
var vacuumLookSQL = func() string {
	var dead, last []string
	for _, t := range vacuumTables {
		dead = append(dead, "pg_stat_get_dead_tuples('"+t.name+"'::regclass)")
		last = append(last, "pg_stat_get_last_vacuum_time('"+t.name+"'::regclass)")
	}
	return "SELECT ARRAY[" + strings.Join(dead, ", ") + "], extract(epoch FROM now() - greatest(" + strings.Join(last, ", ") + "))::float8"
}()

// changed counts rows this Store changed: while it changes some, its
// vacuumer looks.
func (s *Store) changed(n int) { s.changes.Add(int64(n)) }

// vacuumer runs until ctx ends.
func (s *Store) vacuumer(ctx context.Context) {
	defer close(s.vacuumDone)
	if s.vacuumInterval < 0 {
		return
	}
	tick := time.NewTicker(s.vacuumInterval)
	defer tick.Stop()
	var seen int64           // s.changes at the last look
	var active time.Time     // when a look last found it moved
	var perDue time.Duration // a pass over the due dead rows, by the last pass's rate
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if n := s.changes.Load(); n != seen {
				seen, active = n, now
			}
			if now.Sub(active) > vacuumQuiet {
				continue
			}
			due, dead, threshold := s.vacuumDue(ctx, vacuumWait(perDue))
			if len(due) == 0 {
				continue
			}
			if d, ran := s.vacuum(ctx, due); ran {
				perDue = passOverDue(d, dead, threshold)
			}
		}
	}
}

// passOverDue is how long a pass over threshold dead rows takes, by the
// rate of one that took took over dead (at least threshold) rows.
func passOverDue(took time.Duration, dead, threshold int64) time.Duration {
	return took * time.Duration(threshold) / time.Duration(max(dead, threshold))
}

// vacuumWait is how long after any pass the next one waits, given how
// long a pass over the due dead rows takes.
func vacuumWait(perDue time.Duration) time.Duration {
	return min(vacuumBackoff*perDue, vacuumMaxWait)
}

// vacuumDue returns the tables whose dead rows call for a pass, none if a
// pass ended less than wait ago, with the dead rows they hold and the
// sum of their thresholds.
func (s *Store) vacuumDue(ctx context.Context, wait time.Duration) (due []string, dead, threshold int64) {
	var counts []int64
	var since *float64
	if err := s.pool.QueryRow(ctx, vacuumLookSQL).Scan(&counts, &since); err != nil {
		if ctx.Err() == nil {
			s.log.Debug("pgstore: vacuum look", "err", err)
		}
		return nil, 0, 0
	}
	if since != nil && *since < wait.Seconds() {
		return nil, 0, 0
	}
	for i, t := range vacuumTables {
		if counts[i] >= t.due {
			due = append(due, t.name)
			dead += counts[i]
			threshold += t.due
		}
	}
	return due, dead, threshold
}

// vacuum runs one pass over tables unless another instance is running
// one, and returns how long it took and whether it ran to the end.
func (s *Store) vacuum(ctx context.Context, tables []string) (time.Duration, bool) {
	start := time.Now()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, false
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, vacuumLockSQL).Scan(&got); err != nil || !got {
		return 0, false
	}
	// VACUUM cannot run in a transaction, so the session's settings are
	// set and reset around it; a session that cannot reset them is closed.
	// A pass vacuums the indexes in its own session (see vacuumSettings).
	ran := false
	_, err = conn.Exec(ctx, vacuumSettings)
	if err == nil {
		_, err = conn.Exec(ctx, "VACUUM (TRUNCATE false) "+strings.Join(tables, ", "))
		ran = err == nil
	}
	if err != nil && ctx.Err() == nil {
		s.log.Debug("pgstore: vacuum", "err", err)
	}
	if _, err := conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout; RESET max_parallel_maintenance_workers; "+vacuumUnlockSQL); err != nil {
		conn.Conn().Close(context.Background()) // the lock goes with the session
	}
	if !ran {
		return 0, false
	}
	s.vacuums.Add(1)
	return time.Since(start), true
}
