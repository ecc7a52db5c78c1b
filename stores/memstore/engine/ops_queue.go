package engine

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

func (e *Engine) QueueCreate(ctx context.Context, p *stores.QueueCreateParams) (*stores.QueueCreateResult, error) {
	if p.Queue == nil || p.Queue.Name == "" {
		return nil, errors.New("engine: QueueCreate needs a queue with a name")
	}
	var res *stores.QueueCreateResult
	err := e.run(ctx, p.Now, func(t *tx) error {
		name := p.Queue.Name
		if q := e.queues[name]; q != nil {
			res = &stores.QueueCreateResult{Queue: copyQueue(&q.rec.Queue)}
			return nil
		}
		tomb := e.tombs[name]
		if tomb != nil && rules.RecreateRefused(tomb.DeletedAt, p.RecreateCooldown, t.now) {
			return stores.ErrQueueDeletedRecently
		}
		rec := &QueueRecord{Queue: *copyQueue(p.Queue)}
		rec.Queue.CreatedAt = t.now
		rec.Queue.ModifiedAt = t.now
		rec.Queue.Version = 1
		t.putQueue(rec)
		if tomb != nil {
			t.deleteTombstone(tomb)
		}
		res = &stores.QueueCreateResult{Queue: copyQueue(&rec.Queue), Created: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) QueueGet(ctx context.Context, p *stores.QueueGetParams) (*stores.Queue, error) {
	var res *stores.Queue
	err := e.run(ctx, time.Time{}, func(t *tx) error {
		q := e.queues[p.Name]
		if q == nil {
			return stores.ErrQueueNotFound
		}
		res = copyQueue(&q.rec.Queue)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) QueueList(ctx context.Context, p *stores.QueueListParams) ([]*stores.Queue, error) {
	var res []*stores.Queue
	err := e.run(ctx, time.Time{}, func(t *tx) error {
		start := p.Prefix
		if p.After > start {
			start = p.After
		}
		for i := sort.SearchStrings(e.names, start); i < len(e.names); i++ {
			name := e.names[i]
			if !strings.HasPrefix(name, p.Prefix) {
				break // names are sorted: past the prefix range
			}
			if name <= p.After {
				continue
			}
			if p.Limit > 0 && len(res) >= p.Limit {
				break
			}
			res = append(res, copyQueue(&e.queues[name].rec.Queue))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) QueueUpdate(ctx context.Context, p *stores.QueueUpdateParams) (*stores.Queue, error) {
	var res *stores.Queue
	err := e.run(ctx, p.Now, func(t *tx) error {
		q := e.queues[p.Name]
		if q == nil || (p.ID != "" && p.ID != q.rec.Queue.ID) {
			return stores.ErrQueueNotFound
		}
		rec := &QueueRecord{Queue: *copyQueue(&q.rec.Queue), LastPurgeAt: q.rec.LastPurgeAt}
		nq := &rec.Queue
		if err := rules.UpdateQueue(nq, p, t.now); err != nil {
			return err
		}
		t.putQueue(rec)
		res = copyQueue(nq)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) QueueDelete(ctx context.Context, p *stores.QueueDeleteParams) error {
	return e.run(ctx, p.Now, func(t *tx) error {
		q := e.queues[p.Name]
		if q == nil || (p.ID != "" && p.ID != q.rec.Queue.ID) {
			return stores.ErrQueueNotFound
		}
		for _, m := range q.msgs {
			t.deleteMessage(q, m)
		}
		for _, d := range q.dedup {
			t.deleteDedup(q, d)
		}
		for _, a := range q.attempts {
			t.deleteAttempt(q, a)
		}
		t.deleteQueue(q)
		t.putTombstone(&TombstoneRecord{Name: q.name, DeletedAt: t.now})
		return nil
	})
}

func (e *Engine) QueuePurge(ctx context.Context, p *stores.QueuePurgeParams) error {
	return e.run(ctx, p.Now, func(t *tx) error {
		q, err := t.queue(p.Name, p.ID)
		if err != nil {
			return err
		}
		if rules.PurgeRefused(q.rec.LastPurgeAt, p.MinInterval, t.now) {
			return stores.ErrPurgeInProgress
		}
		// Like SQS, a purge also forgets deduplication ids (a message sent
		// again after a purge is stored) and receive attempts.
		for _, m := range q.msgs {
			t.deleteMessage(q, m)
		}
		for _, d := range q.dedup {
			t.deleteDedup(q, d)
		}
		for _, a := range q.attempts {
			t.deleteAttempt(q, a)
		}
		t.putQueue(&QueueRecord{Queue: q.rec.Queue, LastPurgeAt: t.now})
		return nil
	})
}

func (e *Engine) QueueStats(ctx context.Context, p *stores.QueueStatsParams) (*stores.QueueStats, error) {
	var res *stores.QueueStats
	err := e.run(ctx, p.Now, func(t *tx) error {
		q, err := t.queue(p.Name, p.ID)
		if err != nil {
			return err
		}
		res = &stores.QueueStats{Visible: int64(q.vSeq.Len()), InFlight: q.pendRecv, Delayed: q.pendNew}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Maintain drops messages past retention, expired dedup markers and attempt
// records, and tombstones past rules.TombstoneTTL.
func (e *Engine) Maintain(ctx context.Context, p *stores.MaintainParams) error {
	return e.run(ctx, p.Now, func(t *tx) error {
		for _, q := range e.queues {
			t.advance(q)
		}
		for _, tomb := range e.tombs {
			if !rules.TombstoneKept(tomb.DeletedAt, t.now) {
				t.deleteTombstone(tomb)
			}
		}
		return nil
	})
}
