package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

func (e *Engine) MoveTaskCreate(ctx context.Context, p *stores.MoveTaskCreateParams) error {
	if p.Task == nil || p.Task.Handle == "" {
		return errors.New("engine: MoveTaskCreate needs a task with a handle")
	}
	return e.run(ctx, time.Time{}, func(t *tx) error {
		for _, tr := range e.tasks {
			if tr.Task.SourceArn == p.Task.SourceArn && rules.MoveTaskActive(tr.Task.Status) {
				return stores.ErrMoveTaskRunning
			}
		}
		rec := &TaskRecord{Task: *p.Task}
		rec.Task.Version = 1
		t.putTask(rec)
		if p.KeepFinished > 0 {
			for _, old := range rules.FinishedPast(e.listTasks(p.Task.SourceArn, ""), p.KeepFinished) {
				t.deleteTask(e.tasks[old.Handle])
			}
		}
		return nil
	})
}

// listTasks lists the tasks of a source (or all) in a status (or all),
// newest first. Call it in a transaction.
func (e *Engine) listTasks(source, status string) []*stores.MoveTask {
	var res []*stores.MoveTask
	for _, tr := range e.tasks {
		if (source == "" || tr.Task.SourceArn == source) && (status == "" || tr.Task.Status == status) {
			res = append(res, copyTask(&tr.Task))
		}
	}
	slices.SortFunc(res, func(a, b *stores.MoveTask) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Handle, b.Handle)
	})
	return res
}

func (e *Engine) MoveTaskList(ctx context.Context, p *stores.MoveTaskListParams) ([]*stores.MoveTask, error) {
	var res []*stores.MoveTask
	err := e.run(ctx, time.Time{}, func(t *tx) error {
		res = e.listTasks(p.SourceArn, p.Status)
		if p.Limit > 0 && len(res) > p.Limit {
			res = res[:p.Limit]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) MoveTaskGet(ctx context.Context, p *stores.MoveTaskGetParams) (*stores.MoveTask, error) {
	var res *stores.MoveTask
	err := e.run(ctx, time.Time{}, func(t *tx) error {
		tr := e.tasks[p.Handle]
		if tr == nil {
			return stores.ErrMoveTaskNotFound
		}
		res = copyTask(&tr.Task)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) MoveTaskUpdate(ctx context.Context, p *stores.MoveTaskUpdateParams) (*stores.MoveTask, error) {
	if p.Task == nil {
		return nil, errors.New("engine: MoveTaskUpdate needs a task")
	}
	var res *stores.MoveTask
	var conflict bool
	err := e.run(ctx, time.Time{}, func(t *tx) error {
		tr := e.tasks[p.Task.Handle]
		if tr == nil {
			return stores.ErrMoveTaskNotFound
		}
		if tr.Task.Version != p.IfVersion {
			res, conflict = copyTask(&tr.Task), true
			return nil
		}
		rec := &TaskRecord{Task: *p.Task}
		rec.Task.Version = tr.Task.Version + 1
		t.putTask(rec)
		res = copyTask(&rec.Task)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if conflict {
		return res, stores.ErrVersionConflict
	}
	return res, nil
}

// stepTask checks a MessageMove's Step against the stored task before the
// move (see stores.MoveTaskStep).
func (t *tx) stepTask(s *stores.MoveTaskStep) (*TaskRecord, error) {
	tr := t.e.tasks[s.Handle]
	if tr == nil {
		return nil, stores.ErrMoveTaskNotFound
	}
	if tr.Task.Version != s.IfVersion {
		return nil, stores.ErrVersionConflict
	}
	return tr, nil
}

// countStep records a step's moved messages on its task, in the move's
// transaction.
func (t *tx) countStep(tr *TaskRecord, s *stores.MoveTaskStep, moved int) *stores.MoveTask {
	rec := &TaskRecord{Task: tr.Task}
	rec.Task.Moved += int64(moved)
	rec.Task.PacedTo = s.PacedTo
	rec.Task.UpdatedAt = t.now
	rec.Task.Version++
	t.putTask(rec)
	return copyTask(&rec.Task)
}
