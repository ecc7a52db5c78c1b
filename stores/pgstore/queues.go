package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

const queueCols = `name, id, fifo, attributes, tags, retention_us, created_at, modified_at, version`

func scanQueue(row pgx.Row) (*stores.Queue, error) {
	q := &stores.Queue{}
	var attrs, tags []byte
	var ret int64
	if err := row.Scan(&q.Name, &q.ID, &q.FIFO, &attrs, &tags, &ret, &q.CreatedAt, &q.ModifiedAt, &q.Version); err != nil {
		return nil, err
	}
	q.Attributes = map[string]string{}
	q.Tags = map[string]string{}
	if err := json.Unmarshal(attrs, &q.Attributes); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(tags, &q.Tags); err != nil {
		return nil, err
	}
	q.Retention = time.Duration(ret) * time.Microsecond
	return q, nil
}

func jsonMap(m map[string]string) []byte {
	if m == nil {
		m = map[string]string{}
	}
	b, _ := json.Marshal(m)
	return b
}

func (s *Store) QueueCreate(ctx context.Context, p *stores.QueueCreateParams) (*stores.QueueCreateResult, error) {
	if p.Queue == nil || p.Queue.Name == "" || p.Queue.ID == "" {
		return nil, errors.New("pgstore: QueueCreate needs a queue with a name and an id")
	}
	var res *stores.QueueCreateResult
	err := s.run(ctx, func(t *txn) error {
		res = nil
		if err := t.resolveNow(ctx, p.Now); err != nil {
			return err
		}
		existing := func() error {
			q, err := scanQueue(t.QueryRow(ctx, "SELECT "+queueCols+" FROM queues WHERE name = $1", p.Queue.Name))
			if err != nil {
				return err
			}
			res = &stores.QueueCreateResult{Queue: q}
			return nil
		}
		err := existing()
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var deletedAt time.Time
		err = t.QueryRow(ctx, "SELECT deleted_at FROM queue_tombstones WHERE name = $1 FOR UPDATE", p.Queue.Name).Scan(&deletedAt)
		switch {
		case err == nil:
			if rules.RecreateRefused(deletedAt, p.RecreateCooldown, t.now) {
				return stores.ErrQueueDeletedRecently
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		q, err := scanQueue(t.QueryRow(ctx, `INSERT INTO queues (name, id, fifo, attributes, tags, retention_us, created_at, modified_at, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7, 1)
			ON CONFLICT (name) DO NOTHING
			RETURNING `+queueCols,
			p.Queue.Name, p.Queue.ID, p.Queue.FIFO, jsonMap(p.Queue.Attributes), jsonMap(p.Queue.Tags), micros(p.Queue.Retention), t.now))
		if errors.Is(err, pgx.ErrNoRows) {
			return existing() // created concurrently: that one stands
		}
		if err != nil {
			return err
		}
		if _, err := t.Exec(ctx, "DELETE FROM queue_tombstones WHERE name = $1", p.Queue.Name); err != nil {
			return err
		}
		res = &stores.QueueCreateResult{Queue: q, Created: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.noteFIFO(res.Queue.ID, res.Queue.FIFO)
	return res, nil
}

func (s *Store) QueueGet(ctx context.Context, p *stores.QueueGetParams) (*stores.Queue, error) {
	q, err := scanQueue(s.pool.QueryRow(ctx, "SELECT "+queueCols+" FROM queues WHERE name = $1", p.Name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, stores.ErrQueueNotFound
	}
	if err != nil {
		return nil, err
	}
	s.noteFIFO(q.ID, q.FIFO)
	return q, nil
}

func (s *Store) QueueList(ctx context.Context, p *stores.QueueListParams) ([]*stores.Queue, error) {
	limit := any(nil)
	if p.Limit > 0 {
		limit = p.Limit
	}
	rows, err := s.pool.Query(ctx, "SELECT "+queueCols+` FROM queues
		WHERE starts_with(name, $1) AND name > $2 ORDER BY name LIMIT $3`, p.Prefix, p.After, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*stores.Queue
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

func (s *Store) QueueUpdate(ctx context.Context, p *stores.QueueUpdateParams) (*stores.Queue, error) {
	var res *stores.Queue
	err := s.run(ctx, func(t *txn) error {
		res = nil
		if err := t.resolveNow(ctx, p.Now); err != nil {
			return err
		}
		q, err := scanQueue(t.QueryRow(ctx, "SELECT "+queueCols+" FROM queues WHERE name = $1 FOR NO KEY UPDATE", p.Name))
		if errors.Is(err, pgx.ErrNoRows) || err == nil && p.ID != "" && p.ID != q.ID {
			return stores.ErrQueueNotFound
		}
		if err != nil {
			return err
		}
		if err := rules.UpdateQueue(q, p, t.now); err != nil {
			return err
		}
		res, err = scanQueue(t.QueryRow(ctx, `UPDATE queues SET attributes = $2, tags = $3, retention_us = $4, modified_at = $5, version = $6
			WHERE name = $1 RETURNING `+queueCols,
			q.Name, jsonMap(q.Attributes), jsonMap(q.Tags), micros(q.Retention), q.ModifiedAt, q.Version))
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Store) QueueDelete(ctx context.Context, p *stores.QueueDeleteParams) error {
	var deleted *queueRow
	err := s.run(ctx, func(t *txn) error {
		q, err := t.queue(ctx, p.Name, p.ID, p.Now, lockUpdate)
		if err != nil {
			return err
		}
		deleted = q
		// The incarnation ends here; its rows go later, in pages
		// (clearRemains), so that deleting a large queue is a short
		// transaction.
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO queue_remains (queue_id, deleted_at) VALUES ($1, $2)
			ON CONFLICT (queue_id) DO NOTHING`, q.id, t.now)
		b.Queue("DELETE FROM queues WHERE name = $1", q.name)
		b.Queue(`INSERT INTO queue_tombstones (name, deleted_at) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET deleted_at = excluded.deleted_at`, q.name, t.now)
		if err := t.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return nil
	})
	if err == nil {
		s.forgetIncarnation(deleted.name, deleted.id)
	}
	return err
}

func (s *Store) QueuePurge(ctx context.Context, p *stores.QueuePurgeParams) error {
	return s.run(ctx, func(t *txn) error {
		q, err := t.queue(ctx, p.Name, p.ID, p.Now, lockUpdate)
		if err != nil {
			return err
		}
		if q.purgedAt != nil && rules.PurgeRefused(*q.purgedAt, p.MinInterval, t.now) {
			return stores.ErrPurgeInProgress
		}
		b := &pgx.Batch{}
		// Like SQS, a purge also forgets receive attempts: first, as a
		// replay takes its attempt's row before its groups.
		b.Queue("DELETE FROM receive_attempts WHERE queue_id = $1", q.id)
		if q.fifo {
			// Group locks next, as claims take them.
			b.Queue(`SELECT count(*) FROM (SELECT 1 FROM fifo_groups WHERE queue_id = $1 AND avail_at < 'infinity'
				ORDER BY group_id FOR NO KEY UPDATE) g`, q.id)
		}
		b.Queue("DELETE FROM messages WHERE queue_id = $1 AND seq > 0", q.id)
		if q.fifo {
			// Rows of groups that a send racing the purge refilled stay.
			b.Queue("SELECT count(sluice_fix_group($1, group_id)) FROM fifo_groups WHERE queue_id = $1 AND avail_at < 'infinity'", q.id)
		}
		// Like SQS, a purge also forgets deduplication ids.
		b.Queue("DELETE FROM dedup WHERE queue_id = $1", q.id)
		b.Queue("UPDATE queues SET purged_at = $2 WHERE name = $1", q.name, t.now)
		return t.SendBatch(ctx, b).Close()
	})
}

func (s *Store) QueueStats(ctx context.Context, p *stores.QueueStatsParams) (*stores.QueueStats, error) {
	var res *stores.QueueStats
	var key string
	var at time.Time
	var reused bool
	err := s.run(ctx, func(t *txn) error {
		q, err := t.queue(ctx, p.Name, p.ID, p.Now, lockNone)
		if err != nil {
			return err
		}
		// A deep queue's count is reused (countcache), keyed by its last
		// purge too, so that no instance hides a purge behind an older
		// count.
		key, at = q.id, t.now
		if q.purgedAt != nil {
			key += "/" + strconv.FormatInt(q.purgedAt.UnixNano(), 10)
		}
		if res, reused = s.counts.Get(key, at); reused {
			return nil
		}
		if err := t.sweepExpired(ctx, q, 1000); err != nil {
			return err
		}
		res = &stores.QueueStats{}
		return t.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE visible_at <= $2),
				count(*) FILTER (WHERE visible_at > $2 AND receive_count > 0),
				count(*) FILTER (WHERE visible_at > $2 AND receive_count = 0)
			FROM messages WHERE queue_id = $1 AND seq > 0 AND sent_at > $3`, q.id, t.now, sentAfter(rules.RetentionCutoff(q.retention, t.now))).
			Scan(&res.Visible, &res.InFlight, &res.Delayed)
	})
	if err != nil {
		return nil, err
	}
	if !reused {
		s.counts.Put(key, at, res)
	}
	return res, nil
}

// Maintain drops messages past retention, expired dedup markers and receive
// attempts, tombstones past rules.TombstoneTTL, and (in pages) the rows of
// deleted queues.
func (s *Store) Maintain(ctx context.Context, p *stores.MaintainParams) error {
	err := s.run(ctx, func(t *txn) error {
		if err := t.resolveNow(ctx, p.Now); err != nil {
			return err
		}
		b := &pgx.Batch{}
		// FIFO queues: by group, keeping their rows in fifo_groups right.
		b.Queue(`SELECT count(sluice_fifo_sweep(q.id, $1::timestamptz - q.retention_us * interval '1 microsecond', NULL))
			FROM queues q WHERE q.fifo AND q.retention_us > 0`, t.now)
		// Standard queues: their due front and due moved messages.
		b.Queue(`SELECT count(sluice_standard_sweep(q.id, $1::timestamptz - q.retention_us * interval '1 microsecond', NULL))
			FROM queues q WHERE NOT q.fifo AND q.retention_us > 0`, t.now)
		b.Queue("DELETE FROM dedup WHERE expires_at <= $1", t.now)
		b.Queue("DELETE FROM receive_attempts WHERE expires_at <= $1", t.now)
		b.Queue("DELETE FROM queue_tombstones WHERE deleted_at <= $1", rules.TombstoneCutoff(t.now))
		return t.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return err
	}
	return s.clearRemains(ctx, p.Now)
}

// remainsPage is how many rows of a deleted incarnation one transaction
// removes, and remainsPages how many such transactions one Maintain pass
// runs at most (the rest is for the next pass), so that a pass stays short
// however large the deleted queues were.
const (
	remainsPage  = 1000
	remainsPages = 200
)

// remainsKept is how long an incarnation's entry stays after its deletion,
// for rows a send racing the deletion added just after it: a statement
// whose snapshot still saw the queue, which ends within seconds (a combined
// batch within batchTimeout).
const remainsKept = 5 * time.Minute

// retireRemainsSQL drops, in one statement, the entries of incarnations
// deleted longer than remainsKept ago of which nothing is left (the
// predicates are remainsPageSQL's).
const retireRemainsSQL = `DELETE FROM queue_remains r
	WHERE r.deleted_at <= coalesce($1::timestamptz, now()) - $2::interval
	  AND NOT EXISTS (SELECT 1 FROM messages WHERE queue_id = r.queue_id AND seq > 0)
	  AND NOT EXISTS (SELECT 1 FROM fifo_groups WHERE queue_id = r.queue_id AND avail_at < 'infinity')
	  AND NOT EXISTS (SELECT 1 FROM dedup WHERE queue_id = r.queue_id)
	  AND NOT EXISTS (SELECT 1 FROM receive_attempts WHERE queue_id = r.queue_id)
	  AND NOT EXISTS (SELECT 1 FROM queues WHERE id = r.queue_id)`

// remainsPageSQL deletes a page of one table's rows of the deleted
// incarnations listed ($1), in one statement whatever their number; never
// of a live queue's (an id is never reused, but a store must not trust its
// caller with that).
var remainsPageSQL = []string{
	`DELETE FROM messages WHERE ctid = ANY(ARRAY(SELECT m.ctid FROM messages m WHERE m.queue_id = ANY($1::text[]) AND m.seq > 0
		AND NOT EXISTS (SELECT 1 FROM queues WHERE id = m.queue_id) LIMIT $2))`,
	`DELETE FROM fifo_groups WHERE ctid = ANY(ARRAY(SELECT f.ctid FROM fifo_groups f WHERE f.queue_id = ANY($1::text[]) AND f.avail_at < 'infinity'
		AND NOT EXISTS (SELECT 1 FROM queues WHERE id = f.queue_id) LIMIT $2))`,
	`DELETE FROM dedup WHERE ctid = ANY(ARRAY(SELECT d.ctid FROM dedup d WHERE d.queue_id = ANY($1::text[])
		AND NOT EXISTS (SELECT 1 FROM queues WHERE id = d.queue_id) LIMIT $2))`,
	`DELETE FROM receive_attempts WHERE ctid = ANY(ARRAY(SELECT a.ctid FROM receive_attempts a WHERE a.queue_id = ANY($1::text[])
		AND NOT EXISTS (SELECT 1 FROM queues WHERE id = a.queue_id) LIMIT $2))`,
}

// clearRemains removes the rows of the oldest deleted incarnations (up to
// 1,000 of them) a page at a time, each page one table's rows of any of
// them in its own transaction, at most remainsPages pages a call; then it
// drops the entries of the incarnations past remainsKept of which nothing
// is left.
func (s *Store) clearRemains(ctx context.Context, now time.Time) error {
	if err := s.drainRemains(ctx); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, retireRemainsSQL, nowArg(now), remainsKept)
	return err
}

func (s *Store) drainRemains(ctx context.Context) error {
	rows, err := s.pool.Query(ctx, "SELECT queue_id FROM queue_remains ORDER BY deleted_at LIMIT 1000")
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	budget := remainsPages
	for _, sql := range remainsPageSQL {
		for {
			if budget == 0 {
				return nil
			}
			budget--
			var n int64
			err := s.retry(ctx, func() error {
				tag, err := s.pool.Exec(ctx, sql, ids, remainsPage)
				n = tag.RowsAffected()
				return err
			})
			if err != nil {
				return err
			}
			s.changed(int(n))
			if n < remainsPage {
				break // this table is drained of them
			}
		}
	}
	return nil
}
