package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

// taskCols are the columns taskArgs gives, in order; scanTask reads them
// and version.
const taskCols = `handle, source_name, source_arn, destination_arn, max_per_second, status, moved, to_move,
	failure_reason, started_at, updated_at, paced_to`

func scanTask(row pgx.Row) (*stores.MoveTask, error) {
	t := &stores.MoveTask{}
	err := row.Scan(&t.Handle, &t.SourceName, &t.SourceArn, &t.DestinationArn, &t.MaxPerSecond, &t.Status,
		&t.Moved, &t.ToMove, &t.FailureReason, &t.StartedAt, &t.UpdatedAt, &t.PacedTo, &t.Version)
	return t, err
}

func taskArgs(t *stores.MoveTask) []any {
	return []any{t.Handle, t.SourceName, t.SourceArn, t.DestinationArn, t.MaxPerSecond, t.Status,
		t.Moved, t.ToMove, t.FailureReason, t.StartedAt, t.UpdatedAt, t.PacedTo}
}

func (s *Store) MoveTaskCreate(ctx context.Context, p *stores.MoveTaskCreateParams) error {
	if p.Task == nil || p.Task.Handle == "" {
		return errors.New("pgstore: MoveTaskCreate needs a task with a handle")
	}
	err := s.run(ctx, func(t *txn) error {
		var n int
		if err := t.QueryRow(ctx, `SELECT count(*) FROM move_tasks WHERE source_arn = $1 AND status = ANY($2::text[])`,
			p.Task.SourceArn, rules.ActiveMoveTaskStatuses()).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return stores.ErrMoveTaskRunning
		}
		if _, err := t.Exec(ctx, `INSERT INTO move_tasks (`+taskCols+`, version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1)`,
			taskArgs(p.Task)...); err != nil {
			return err
		}
		if p.KeepFinished <= 0 {
			return nil
		}
		rows, err := t.Query(ctx, `SELECT handle, status FROM move_tasks WHERE source_arn = $1 ORDER BY started_at DESC, handle`, p.Task.SourceArn)
		if err != nil {
			return err
		}
		tasks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*stores.MoveTask, error) {
			var mt stores.MoveTask
			return &mt, r.Scan(&mt.Handle, &mt.Status)
		})
		if err != nil {
			return err
		}
		var gone []string
		for _, old := range rules.FinishedPast(tasks, p.KeepFinished) {
			gone = append(gone, old.Handle)
		}
		if len(gone) > 0 {
			_, err = t.Exec(ctx, `DELETE FROM move_tasks WHERE handle = ANY($1)`, gone)
		}
		return err
	})
	if isUniqueViolation(err) {
		// Another task for this source became active concurrently (the
		// partial unique index), or the handle is taken.
		return stores.ErrMoveTaskRunning
	}
	return err
}

func (s *Store) MoveTaskList(ctx context.Context, p *stores.MoveTaskListParams) ([]*stores.MoveTask, error) {
	var limit any
	if p.Limit > 0 {
		limit = p.Limit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+taskCols+`, version FROM move_tasks
		WHERE ($1 = '' OR source_arn = $1) AND ($2 = '' OR status = $2)
		ORDER BY started_at DESC, handle LIMIT $3`, p.SourceArn, p.Status, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*stores.MoveTask
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *Store) MoveTaskGet(ctx context.Context, p *stores.MoveTaskGetParams) (*stores.MoveTask, error) {
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+taskCols+`, version FROM move_tasks WHERE handle = $1`, p.Handle))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, stores.ErrMoveTaskNotFound
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (s *Store) MoveTaskUpdate(ctx context.Context, p *stores.MoveTaskUpdateParams) (*stores.MoveTask, error) {
	if p.Task == nil {
		return nil, errors.New("pgstore: MoveTaskUpdate needs a task")
	}
	var res *stores.MoveTask
	var conflict bool
	err := s.run(ctx, func(t *txn) error {
		res, conflict = nil, false
		cur, err := scanTask(t.QueryRow(ctx, `SELECT `+taskCols+`, version FROM move_tasks WHERE handle = $1 FOR UPDATE`, p.Task.Handle))
		if errors.Is(err, pgx.ErrNoRows) {
			return stores.ErrMoveTaskNotFound
		}
		if err != nil {
			return err
		}
		if cur.Version != p.IfVersion {
			res, conflict = cur, true
			return nil
		}
		res, err = scanTask(t.QueryRow(ctx, `UPDATE move_tasks SET source_name = $2, source_arn = $3, destination_arn = $4,
			max_per_second = $5, status = $6, moved = $7, to_move = $8, failure_reason = $9, started_at = $10, updated_at = $11,
			paced_to = $12, version = version + 1
			WHERE handle = $1 RETURNING `+taskCols+`, version`, taskArgs(p.Task)...))
		return err
	})
	if err != nil {
		return nil, err
	}
	if conflict {
		return res, stores.ErrVersionConflict
	}
	return res, nil
}

// stepTask checks a MessageMove's Step before anything moves (see
// stores.MoveTaskStep), holding the task's row lock to the commit. A step
// that finds the row locked lost to a step in progress and moves nothing,
// at once: waiting would only read that step's new version afterwards,
// and would hold this instance's other tasks up behind a stalled step.
func (t *txn) stepTask(ctx context.Context, s *stores.MoveTaskStep) error {
	var v int64
	err := t.QueryRow(ctx, `SELECT version FROM move_tasks WHERE handle = $1 FOR UPDATE NOWAIT`, s.Handle).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return stores.ErrMoveTaskNotFound
	}
	if isLockNotAvailable(err) {
		return stores.ErrVersionConflict
	}
	if err != nil {
		return err
	}
	if v != s.IfVersion {
		return stores.ErrVersionConflict
	}
	return nil
}

// countStep records a step's moved messages on its task, in the move's
// transaction (whose row lock stepTask holds).
func (t *txn) countStep(ctx context.Context, s *stores.MoveTaskStep, moved int) (*stores.MoveTask, error) {
	return scanTask(t.QueryRow(ctx, `UPDATE move_tasks SET moved = moved + $2, paced_to = $3, updated_at = $4, version = version + 1
		WHERE handle = $1 RETURNING `+taskCols+`, version`, s.Handle, moved, s.PacedTo, t.now))
}
