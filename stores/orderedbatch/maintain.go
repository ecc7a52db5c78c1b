package orderedbatch

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/rules"
)

// Bounds of one Maintain pass.
const (
	trashPerRound = 4   // trash records worked on at a time, oldest first
	removePage    = 200 // documents removed per query and transaction
	queuesPerPass = 8   // queues whose retention is swept
	// idleGroupAge: an empty group record is removed after this long, so
	// that queues whose groups come and go do not keep one per group.
	idleGroupAge = 10 * time.Minute
	// trashGrace: a deleted incarnation's trash record stays this long, so
	// that a send through a queue record cached before the deletion is
	// swept too.
	trashGrace = 5 * time.Minute
)

// stepBudget: each step of a pass (trash, dedup markers and attempts,
// idle groups) takes pages of what it removes while they come back full
// and this much of its own time is left, at least one, so that a steady
// load's leftovers are removed as fast as a pass a minute sees them come,
// and a large deleted queue's trash does not starve the other steps. (A
// variable for tests.)
var stepBudget = 5 * time.Second

// Maintain removes, in pages and within a budget per step, what deletions and
// purges left, expired dedup markers and attempts, idle group records, old
// tombstones, and a round of queues' messages past retention.
func (s *Store) Maintain(ctx context.Context, p *stores.MaintainParams) error {
	if err := s.check(); err != nil {
		return err
	}
	now := nowOr(p.Now)
	for _, step := range []func(context.Context, time.Time, func() bool) error{
		s.emptyTrash, s.expireMarkers, s.removeIdleGroups, s.removeTombstones, s.sweepQueues,
	} {
		deadline := time.Now().Add(stepBudget)
		more := func() bool { return ctx.Err() == nil && time.Now().Before(deadline) }
		if err := step(ctx, now, more); err != nil {
			return err
		}
	}
	return nil
}

// emptyTrash works on the trash records, oldest first, in rounds while a
// round removes something and the step has time. A round that removes
// nothing met only records still in their grace.
func (s *Store) emptyTrash(ctx context.Context, now time.Time, more func() bool) error {
	for {
		removed, err := s.emptyTrashRound(ctx, now)
		if err != nil || removed == 0 || !more() {
			return err
		}
	}
}

// emptyTrashRound works on the oldest trash records and reports how many
// documents it removed (trash records included).
func (s *Store) emptyTrashRound(ctx context.Context, now time.Time) (int, error) {
	docs, err := s.docs.Query(ctx, docstore.Query{Collection: colTrash, Order: []docstore.Order{{Field: "since"}}, Limit: trashPerRound})
	if err != nil {
		return 0, s.mapErr(err)
	}
	removed := 0
	for _, d := range docs {
		var tr trashRec
		if err := decode(d, &tr); err != nil {
			return 0, err
		}
		left := false
		for _, col := range []string{colMessages, colChunks, colDedup, colAttempts, colGroups, colCounters} {
			if tr.Below < maxGen && (col == colGroups || col == colCounters) {
				continue // a purge keeps the groups' positions and the counters
			}
			query := docstore.Query{Collection: col, Filters: []docstore.Filter{{Field: fInc, Op: docstore.Eq, Value: tr.Inc}}, Limit: removePage}
			if tr.Below < maxGen {
				query.Filters = append(query.Filters, docstore.Filter{Field: fGen, Op: docstore.Lt, Value: tr.Below})
				query.Order = []docstore.Order{{Field: fGen}}
			}
			found, err := s.docs.Query(ctx, query)
			if err != nil {
				return 0, s.mapErr(err)
			}
			if len(found) == 0 {
				continue
			}
			removed += len(found)
			left = left || len(found) == removePage
			// Each checked again in the transaction: a key can be written
			// anew since the query (a dedup marker, a receive attempt, a
			// group's manifest of the generation after a purge), and that
			// is not trash.
			err = s.removeStill(ctx, now, found, func(d *docstore.Doc) bool {
				return fieldString(d, fInc) == tr.Inc && (tr.Below == maxGen || fieldInt(d, fGen) < tr.Below)
			})
			if err != nil {
				return 0, err
			}
			left = true // look again next round: writes may have raced the query
		}
		if !left && (tr.Below < maxGen || now.Sub(tr.Since) > trashGrace) {
			key := d.Key
			err := s.run(ctx, now, func(t *txn) error {
				cur, err := t.get1(key)
				if err != nil || cur == nil {
					return err
				}
				// A purge after this pass began raised Below: keep it.
				if fieldInt(cur, "below") == tr.Below {
					t.del(key)
				}
				return nil
			})
			if err != nil {
				return 0, err
			}
			removed++
		}
	}
	return removed, nil
}

// expireMarkers removes dedup markers and receive attempts past their
// window.
func (s *Store) expireMarkers(ctx context.Context, now time.Time, more func() bool) error {
	if s.opts.ExpiredByBackend {
		return nil
	}
	for _, f := range Expiring() {
		if err := s.removeAllLapsed(ctx, now, more, f.Collection, f.Name, now); err != nil {
			return err
		}
	}
	return nil
}

// removeIdleGroups removes group records that have been empty for
// idleGroupAge.
func (s *Store) removeIdleGroups(ctx context.Context, now time.Time, more func() bool) error {
	return s.removeAllLapsed(ctx, now, more, colGroups, fIdle, now.Add(-idleGroupAge))
}

// removeAllLapsed removes pages of lapsed documents (removeLapsed) while
// they come back full and the step has time.
func (s *Store) removeAllLapsed(ctx context.Context, now time.Time, more func() bool, col, field string, cutoff time.Time) error {
	for {
		full, err := s.removeLapsed(ctx, now, col, field, cutoff)
		if err != nil || !full || !more() {
			return err
		}
	}
}

// removeLapsed removes a page of the documents of col whose time field is
// at or before cutoff, each checked again in the transaction (a send may
// have renewed a marker, or filled a group, since the query), and reports
// whether the page was full.
func (s *Store) removeLapsed(ctx context.Context, now time.Time, col, field string, cutoff time.Time) (bool, error) {
	found, err := s.docs.Query(ctx, docstore.Query{
		Collection: col,
		Filters: []docstore.Filter{
			{Field: fShard, Op: docstore.In, Value: allShards()},
			{Field: field, Op: docstore.Le, Value: cutoff},
		},
		Order: []docstore.Order{{Field: field}},
		Limit: removePage,
	})
	if err != nil || len(found) == 0 {
		return false, s.mapErr(err)
	}
	err = s.removeStill(ctx, now, found, func(d *docstore.Doc) bool {
		at, ok := fieldTime(d, field)
		return ok && !at.After(cutoff)
	})
	return len(found) == removePage, err
}

// removeStill removes, in one transaction, the documents a query found
// that still answer to gone when read again there: a document can be
// written anew between the query and the transaction.
func (s *Store) removeStill(ctx context.Context, now time.Time, found []*docstore.Doc, gone func(*docstore.Doc) bool) error {
	return s.run(ctx, now, func(t *txn) error {
		keys := make([]docstore.Key, len(found))
		for i, f := range found {
			keys[i] = f.Key
		}
		cur, err := t.get(keys...)
		if err != nil {
			return err
		}
		for _, d := range cur {
			if d != nil && gone(d) {
				t.del(d.Key)
			}
		}
		return nil
	})
}

func (s *Store) removeTombstones(ctx context.Context, now time.Time, _ func() bool) error {
	found, err := s.docs.Query(ctx, docstore.Query{
		Collection: colQueues,
		Filters:    []docstore.Filter{{Field: fLive, Op: docstore.Eq, Value: false}},
		Limit:      removePage,
	})
	if err != nil || len(found) == 0 {
		return s.mapErr(err)
	}
	for _, f := range found {
		key := f.Key
		err := s.run(ctx, now, func(t *txn) error {
			d, err := t.get1(key)
			if err != nil || d == nil {
				return err
			}
			q, err := decodeQueue(d)
			if err != nil {
				return err
			}
			if !q.Live && !rules.TombstoneKept(q.DeletedAt, t.now) {
				t.del(key)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sweepQueues sweeps retention on the next few queues, in name order,
// from where the last pass of this instance stopped.
func (s *Store) sweepQueues(ctx context.Context, now time.Time, _ func() bool) error {
	s.mu.Lock()
	after := s.sweep
	s.mu.Unlock()
	filters := []docstore.Filter{{Field: fLive, Op: docstore.Eq, Value: true}}
	if after != "" {
		filters = append(filters, docstore.Filter{Field: fName, Op: docstore.Gt, Value: after})
	}
	docs, err := s.docs.Query(ctx, docstore.Query{
		Collection: colQueues,
		Filters:    filters,
		Order:      []docstore.Order{{Field: fName}},
		Limit:      queuesPerPass,
	})
	if err != nil {
		return s.mapErr(err)
	}
	next := ""
	for _, d := range docs {
		q, err := decodeQueue(d)
		if err != nil {
			return err
		}
		if err := s.sweepRetention(ctx, q, now, sweepPage); err != nil {
			return err
		}
		next = q.Queue.Name
	}
	if len(docs) < queuesPerPass {
		next = "" // round done: start over
	}
	s.mu.Lock()
	s.sweep = next
	s.mu.Unlock()
	return nil
}
