package orderedbatch

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/rules"
)

func taskFields(mt *stores.MoveTask) docstore.Fields {
	return docstore.Fields{fSrc: mt.SourceArn, fStat: mt.Status, fStart: docstore.Micro(mt.StartedAt), fData: encode(mt)}
}

func decodeTask(d *docstore.Doc) (*stores.MoveTask, error) {
	var mt stores.MoveTask
	if err := decode(d, &mt); err != nil {
		return nil, err
	}
	return &mt, nil
}

// MoveTaskCreate keeps one guard document per source naming its latest
// task, so that concurrent creates for one source read the same document
// and at most one commits.
func (s *Store) MoveTaskCreate(ctx context.Context, p *stores.MoveTaskCreateParams) error {
	if p.Task == nil || p.Task.Handle == "" {
		return errors.New("orderedbatch: MoveTaskCreate needs a task with a handle")
	}
	if err := s.createTask(ctx, p); err != nil {
		return err
	}
	if p.KeepFinished <= 0 {
		return nil
	}
	// The source's old finished tasks go after the create, each checked
	// again in the transaction that removes it (a transaction here reads
	// keys, not queries).
	tasks, err := s.MoveTaskList(ctx, &stores.MoveTaskListParams{SourceArn: p.Task.SourceArn})
	if err != nil {
		return err
	}
	var old []*docstore.Doc
	for _, mt := range rules.FinishedPast(tasks, p.KeepFinished) {
		if len(old) < removePage { // a transaction's worth; the next create takes more
			old = append(old, &docstore.Doc{Key: taskKey(mt.Handle)})
		}
	}
	if len(old) == 0 {
		return nil
	}
	return s.removeStill(ctx, p.Task.StartedAt, old, func(d *docstore.Doc) bool {
		return !rules.MoveTaskActive(fieldString(d, fStat))
	})
}

func (s *Store) createTask(ctx context.Context, p *stores.MoveTaskCreateParams) error {
	return s.run(ctx, p.Task.StartedAt, func(t *txn) error {
		gk, tk := taskGuardKey(p.Task.SourceArn), taskKey(p.Task.Handle)
		docs, err := t.get(gk, tk)
		if err != nil {
			return err
		}
		if docs[1] != nil {
			return stores.ErrMoveTaskRunning
		}
		if docs[0] != nil {
			prev, err := t.get1(taskKey(fieldString(docs[0], "handle")))
			if err != nil {
				return err
			}
			if prev != nil {
				pt, err := decodeTask(prev)
				if err != nil {
					return err
				}
				if rules.MoveTaskActive(pt.Status) {
					return stores.ErrMoveTaskRunning
				}
			}
		}
		mt := *p.Task
		mt.Version = 1
		t.set(tk, taskFields(&mt))
		t.set(gk, docstore.Fields{"handle": mt.Handle})
		return nil
	})
}

func (s *Store) MoveTaskList(ctx context.Context, p *stores.MoveTaskListParams) ([]*stores.MoveTask, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	q := docstore.Query{Collection: colTasks, Order: []docstore.Order{{Field: fStart, Desc: true}}, Limit: p.Limit}
	if p.SourceArn != "" {
		q.Filters = append(q.Filters, docstore.Filter{Field: fSrc, Op: docstore.Eq, Value: p.SourceArn})
	}
	if p.Status != "" {
		q.Filters = append(q.Filters, docstore.Filter{Field: fStat, Op: docstore.Eq, Value: p.Status})
	}
	docs, err := s.docs.Query(ctx, q)
	if err != nil {
		return nil, s.mapErr(err)
	}
	out := make([]*stores.MoveTask, 0, len(docs))
	for _, d := range docs {
		mt, err := decodeTask(d)
		if err != nil {
			return nil, err
		}
		out = append(out, mt)
	}
	slices.SortStableFunc(out, func(a, b *stores.MoveTask) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Handle, b.Handle)
	})
	return out, nil
}

func (s *Store) MoveTaskGet(ctx context.Context, p *stores.MoveTaskGetParams) (*stores.MoveTask, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	docs, err := s.docs.Get(ctx, taskKey(p.Handle))
	if err != nil {
		return nil, s.mapErr(err)
	}
	if docs[0] == nil {
		return nil, stores.ErrMoveTaskNotFound
	}
	return decodeTask(docs[0])
}

func (s *Store) MoveTaskUpdate(ctx context.Context, p *stores.MoveTaskUpdateParams) (*stores.MoveTask, error) {
	if p.Task == nil {
		return nil, errors.New("orderedbatch: MoveTaskUpdate needs a task")
	}
	var res *stores.MoveTask
	var conflict bool
	err := s.run(ctx, p.Task.UpdatedAt, func(t *txn) error {
		conflict = false
		d, err := t.get1(taskKey(p.Task.Handle))
		if err != nil {
			return err
		}
		if d == nil {
			return stores.ErrMoveTaskNotFound
		}
		cur, err := decodeTask(d)
		if err != nil {
			return err
		}
		if cur.Version != p.IfVersion {
			res, conflict = cur, true
			return nil
		}
		mt := *p.Task
		mt.Version = cur.Version + 1
		t.set(taskKey(mt.Handle), taskFields(&mt))
		res = &mt
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

// step checks a move's Step against its task in the move's transaction.
func (t *txn) step(st *stores.MoveTaskStep) (*stores.MoveTask, error) {
	d, err := t.get1(taskKey(st.Handle))
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, stores.ErrMoveTaskNotFound
	}
	mt, err := decodeTask(d)
	if err != nil {
		return nil, err
	}
	if mt.Version != st.IfVersion {
		return nil, stores.ErrVersionConflict
	}
	return mt, nil
}
