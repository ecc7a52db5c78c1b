package orderedbatch

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/rules"
)

func queueFields(q *queueRec) docstore.Fields {
	return docstore.Fields{fLive: q.Live, fName: q.Queue.Name, fData: encode(q)}
}

func decodeQueue(d *docstore.Doc) (*queueRec, error) {
	if d == nil {
		return nil, nil
	}
	var q queueRec
	if err := decode(d, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// queue reads the live queue incarnation (id empty: any) in the
// transaction, so that the transaction conflicts with a deletion or purge.
func (t *txn) queue(name, id string) (*queueRec, error) {
	d, err := t.get1(queueKey(name))
	if err != nil {
		return nil, err
	}
	q, err := decodeQueue(d)
	if err != nil {
		return nil, err
	}
	if q == nil || !q.Live || (id != "" && id != q.Queue.ID) {
		return nil, stores.ErrQueueNotFound
	}
	return q, nil
}

func copyQueue(q *stores.Queue) *stores.Queue {
	c := *q
	c.Attributes = maps.Clone(q.Attributes)
	c.Tags = maps.Clone(q.Tags)
	return &c
}

func (s *Store) QueueCreate(ctx context.Context, p *stores.QueueCreateParams) (*stores.QueueCreateResult, error) {
	if p.Queue == nil || p.Queue.Name == "" {
		return nil, errors.New("orderedbatch: QueueCreate needs a queue with a name")
	}
	var res *stores.QueueCreateResult
	err := s.run(ctx, p.Now, func(t *txn) error {
		d, err := t.get1(queueKey(p.Queue.Name))
		if err != nil {
			return err
		}
		old, err := decodeQueue(d)
		if err != nil {
			return err
		}
		if old != nil && old.Live {
			res = &stores.QueueCreateResult{Queue: copyQueue(&old.Queue)}
			return nil
		}
		if old != nil && rules.RecreateRefused(old.DeletedAt, p.RecreateCooldown, t.now) {
			return stores.ErrQueueDeletedRecently
		}
		q := &queueRec{Queue: *copyQueue(p.Queue), Live: true}
		q.Queue.CreatedAt, q.Queue.ModifiedAt, q.Queue.Version = t.now, t.now, 1
		t.set(queueKey(q.Queue.Name), queueFields(q))
		res = &stores.QueueCreateResult{Queue: copyQueue(&q.Queue), Created: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Store) QueueGet(ctx context.Context, p *stores.QueueGetParams) (*stores.Queue, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	ds, err := s.docs.Get(ctx, queueKey(p.Name))
	if err != nil {
		return nil, s.mapErr(err)
	}
	q, err := decodeQueue(ds[0])
	if err != nil {
		return nil, err
	}
	if q == nil || !q.Live {
		return nil, stores.ErrQueueNotFound
	}
	return copyQueue(&q.Queue), nil
}

func (s *Store) QueueList(ctx context.Context, p *stores.QueueListParams) ([]*stores.Queue, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	q := docstore.Query{
		Collection: colQueues,
		Filters:    []docstore.Filter{{Field: fLive, Op: docstore.Eq, Value: true}},
		Order:      []docstore.Order{{Field: fName}},
		Limit:      p.Limit,
	}
	if p.After >= p.Prefix && p.After != "" {
		q.Filters = append(q.Filters, docstore.Filter{Field: fName, Op: docstore.Gt, Value: p.After})
	} else if p.Prefix != "" {
		q.Filters = append(q.Filters, docstore.Filter{Field: fName, Op: docstore.Ge, Value: p.Prefix})
	}
	if p.Prefix != "" {
		// Names are ASCII, so every name with the prefix sorts below the
		// prefix followed by DEL.
		q.Filters = append(q.Filters, docstore.Filter{Field: fName, Op: docstore.Lt, Value: p.Prefix + "\x7f"})
	}
	ds, err := s.docs.Query(ctx, q)
	if err != nil {
		return nil, s.mapErr(err)
	}
	out := make([]*stores.Queue, 0, len(ds))
	for _, d := range ds {
		rec, err := decodeQueue(d)
		if err != nil {
			return nil, err
		}
		out = append(out, copyQueue(&rec.Queue))
	}
	return out, nil
}

func (s *Store) QueueUpdate(ctx context.Context, p *stores.QueueUpdateParams) (*stores.Queue, error) {
	var res *stores.Queue
	err := s.run(ctx, p.Now, func(t *txn) error {
		q, err := t.queue(p.Name, p.ID)
		if err != nil {
			return err
		}
		if err := rules.UpdateQueue(&q.Queue, p, t.now); err != nil {
			return err
		}
		t.set(queueKey(p.Name), queueFields(q))
		res = copyQueue(&q.Queue)
		t.afterCommit(func() { s.queues.put(q, time.Now()) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// QueueDelete leaves a tombstone (for the recreate cooldown) and a trash
// record; Maintain removes the incarnation's documents in pages. Nothing
// reaches them meanwhile: every document is keyed by the incarnation and
// every transaction checks it on the queue record.
func (s *Store) QueueDelete(ctx context.Context, p *stores.QueueDeleteParams) error {
	return s.run(ctx, p.Now, func(t *txn) error {
		q, err := t.queue(p.Name, p.ID)
		if err != nil {
			return err
		}
		tomb := &queueRec{Queue: stores.Queue{Name: q.Queue.Name, ID: q.Queue.ID}, DeletedAt: t.now}
		t.set(queueKey(p.Name), queueFields(tomb))
		t.afterCommit(func() { s.queues.put(tomb, time.Now()) })
		t.set(trashKey(q.Queue.ID), trashFields(&trashRec{Inc: q.Queue.ID, Below: maxGen, Since: t.now}))
		return nil
	})
}

// maxGen marks a trash record of a deleted incarnation: every generation.
const maxGen = int64(1) << 62

// QueuePurge starts a new generation: documents written in an older one are
// gone from then on (every read checks the generation), and Maintain
// removes them in pages.
func (s *Store) QueuePurge(ctx context.Context, p *stores.QueuePurgeParams) error {
	return s.run(ctx, p.Now, func(t *txn) error {
		q, err := t.queue(p.Name, p.ID)
		if err != nil {
			return err
		}
		if rules.PurgeRefused(q.LastPurge, p.MinInterval, t.now) {
			return stores.ErrPurgeInProgress
		}
		d, err := t.get1(trashKey(q.Queue.ID))
		if err != nil {
			return err
		}
		q.Gen++
		q.LastPurge = t.now
		t.set(queueKey(p.Name), queueFields(q))
		t.afterCommit(func() { s.queues.put(q, time.Now()) })
		if d == nil || fieldInt(d, "below") < maxGen {
			t.set(trashKey(q.Queue.ID), trashFields(&trashRec{Inc: q.Queue.ID, Below: q.Gen, Since: t.now}))
		}
		return nil
	})
}

func trashFields(r *trashRec) docstore.Fields {
	return docstore.Fields{"below": r.Below, "since": r.Since, fData: encode(r)}
}

// retained says whether a message sent at sentAt is within the queue's
// retention at now.
func (q *queueRec) retained(sentAt, now time.Time) bool {
	return rules.Retained(sentAt, q.Queue.Retention, now)
}
