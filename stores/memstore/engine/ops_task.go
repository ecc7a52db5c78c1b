package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/stores"
)

func activeTask(status string) bool { return status == "RUNNING" || status == "CANCELLING" }

func (e *Engine) MoveTaskCreate(ctx context.Context, p *stores.MoveTaskCreateParams) error {
	if p.Task == nil || p.Task.Handle == "" {
		return errors.New("engine: MoveTaskCreate needs a task with a handle")
	}
	return e.run(ctx, time.Time{}, func(t *tx) error {
		for _, tr := range e.tasks {
			if tr.Task.SourceArn == p.Task.SourceArn && activeTask(tr.Task.Status) {
				return stores.ErrMoveTaskRunning
			}
		}
		t.putTask(&TaskRecord{Task: *p.Task})
		return nil
	})
}

func (e *Engine) MoveTaskList(ctx context.Context, p *stores.MoveTaskListParams) ([]*stores.MoveTask, error) {
	var res []*stores.MoveTask
	err := e.run(ctx, time.Time{}, func(t *tx) error {
		for _, tr := range e.tasks {
			if (p.SourceArn == "" || tr.Task.SourceArn == p.SourceArn) && (p.Status == "" || tr.Task.Status == p.Status) {
				res = append(res, copyTask(&tr.Task))
			}
		}
		slices.SortFunc(res, func(a, b *stores.MoveTask) int {
			if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
				return c
			}
			return strings.Compare(a.Handle, b.Handle)
		})
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
		if p.IfStatus != "" && tr.Task.Status != p.IfStatus {
			res, conflict = copyTask(&tr.Task), true
			return nil
		}
		t.putTask(&TaskRecord{Task: *p.Task})
		res = copyTask(p.Task)
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
