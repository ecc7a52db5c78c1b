package pgstore

import (
	"context"
	"time"
)

// A FIFO queue's group rows churn: every FIFO receive and delete updates
// its group's row in fifo_groups (and a new head is a new index entry).
// Autovacuum looks at a database once a minute (autovacuum_naptime), so
// between its visits fifo_groups, a few rows per queue, gathers tens of
// thousands of dead versions that every FIFO receive walks past. The
// vacuumer VACUUMs fifo_groups in passing when this Store has changed
// enough rows since its last pass: on the bench, FIFO unbatched did about
// 20 % more (paired runs, 4 of 5 ahead). messages is left to autovacuum:
// vacuuming it this often cost batched FIFO a fifth of its throughput.
// One instance at a time does it (an advisory lock); a pass that took long
// pushes the next one back; TRUNCATE false, because truncating takes an
// exclusive lock on the table.

const (
	vacuumEvery     = 2 * time.Second // at most this often
	vacuumChanges   = 2000            // rows changed here since the last pass
	vacuumBackoff   = 10              // the next pass waits 10× the last one's duration
	vacuumSQL       = "VACUUM (SKIP_LOCKED, TRUNCATE false) fifo_groups"
	vacuumLockSQL   = "SELECT pg_try_advisory_lock(hashtextextended('sluice.pgstore.vacuum:' || coalesce(current_schema(), ''), 0))"
	vacuumUnlockSQL = "SELECT pg_advisory_unlock(hashtextextended('sluice.pgstore.vacuum:' || coalesce(current_schema(), ''), 0))"
)

// changed counts rows this Store changed, for the vacuumer.
func (s *Store) changed(n int) { s.changes.Add(int64(n)) }

// vacuumer runs until ctx ends.
func (s *Store) vacuumer(ctx context.Context) {
	defer close(s.vacuumDone)
	if s.vacuumInterval < 0 {
		return
	}
	tick := time.NewTicker(s.vacuumInterval)
	defer tick.Stop()
	var last int64
	next := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if n := s.changes.Load(); n-last >= vacuumChanges && !now.Before(next) {
				took := s.vacuum(ctx)
				last = n
				next = time.Now().Add(vacuumBackoff * took)
			}
		}
	}
}

// vacuum runs one pass unless another instance is running one, and
// returns how long it took.
func (s *Store) vacuum(ctx context.Context) time.Duration {
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
	if _, err := conn.Exec(ctx, vacuumSQL); err != nil && ctx.Err() == nil {
		s.log.Debug("pgstore: vacuum", "err", err)
	}
	if _, err := conn.Exec(context.WithoutCancel(ctx), vacuumUnlockSQL); err != nil {
		conn.Conn().Close(context.Background()) // the lock goes with the session
	}
	s.vacuums.Add(1)
	return time.Since(start)
}
