package pgstore

import (
	"context"
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
// So the vacuumer VACUUMs each table in passing once this Store has changed
// enough of its rows since that table's last pass. One instance at a time
// does it (an advisory lock); a pass that took long pushes the next one
// back; TRUNCATE false, because truncating takes an exclusive lock on the
// table.

const (
	vacuumEvery     = 2 * time.Second // at most this often
	vacuumBackoff   = 10              // the next pass waits 10× the last one's duration
	vacuumLockSQL   = "SELECT pg_try_advisory_lock(hashtextextended('sluice.pgstore.vacuum:' || coalesce(current_schema(), ''), 0))"
	vacuumUnlockSQL = "SELECT pg_advisory_unlock(hashtextextended('sluice.pgstore.vacuum:' || coalesce(current_schema(), ''), 0))"
)

// vacuumTables are the tables the vacuumer looks after, each with the
// number of rows this Store changes in it that calls for a pass.
var vacuumTables = [...]struct {
	name    string
	changes func(*Store) int64
	due     int64
}{
	{"fifo_groups", func(s *Store) int64 { return s.changes.Load() }, 2000}, // rows of any table changed: each FIFO one updates a group
	{"messages", func(s *Store) int64 { return s.deletions.Load() }, 10000}, // messages deleted
}

// changed counts rows this Store changed, for the vacuumer.
func (s *Store) changed(n int) { s.changes.Add(int64(n)) }

// messagesDeleted counts messages this Store deleted (and counts them as changes).
func (s *Store) messagesDeleted(n int) {
	s.deletions.Add(int64(n))
	s.changed(n)
}

// vacuumer runs until ctx ends.
func (s *Store) vacuumer(ctx context.Context) {
	defer close(s.vacuumDone)
	if s.vacuumInterval < 0 {
		return
	}
	tick := time.NewTicker(s.vacuumInterval)
	defer tick.Stop()
	var last [len(vacuumTables)]int64
	next := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if now.Before(next) {
				continue
			}
			var due []string
			var seen [len(vacuumTables)]int64
			for i, t := range vacuumTables {
				if n := t.changes(s); n-last[i] >= t.due {
					due, seen[i] = append(due, t.name), n
				}
			}
			if len(due) == 0 {
				continue
			}
			took := s.vacuum(ctx, due)
			for i, n := range seen {
				if n > 0 { // this pass's tables start counting again
					last[i] = n
				}
			}
			next = time.Now().Add(vacuumBackoff * took)
		}
	}
}

// vacuum runs one pass over tables unless another instance is running
// one, and returns how long it took.
func (s *Store) vacuum(ctx context.Context, tables []string) time.Duration {
	start := time.Now()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, vacuumLockSQL).Scan(&got); err != nil || !got {
		return 0
	}
	if _, err := conn.Exec(ctx, "VACUUM (SKIP_LOCKED, TRUNCATE false) "+strings.Join(tables, ", ")); err != nil && ctx.Err() == nil {
		s.log.Debug("pgstore: vacuum", "err", err)
	}
	if _, err := conn.Exec(context.WithoutCancel(ctx), vacuumUnlockSQL); err != nil {
		conn.Conn().Close(context.Background()) // the lock goes with the session
	}
	s.vacuums.Add(1)
	return time.Since(start)
}
