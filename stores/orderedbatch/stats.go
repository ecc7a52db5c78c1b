package orderedbatch

import (
	"context"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/rules"
)

// QueueStats counts with aggregation queries. Messages past retention are
// swept first (a page of them), so that they are not counted.
func (s *Store) QueueStats(ctx context.Context, p *stores.QueueStatsParams) (*stores.QueueStats, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	q, err := s.readQueue(ctx, p.Name, p.ID)
	if err != nil {
		return nil, err
	}
	now := nowOr(p.Now)
	// A deep queue's count is reused (countcache); keyed by generation, so
	// that a purge, which starts one, is never hidden by an older count.
	key := q.Queue.ID + "/" + strconv.FormatInt(q.Gen, 10)
	if st, ok := s.counts.Get(key, now); ok {
		return st, nil
	}
	st, err := s.count(ctx, q, now)
	if err != nil {
		return nil, err
	}
	s.counts.Put(key, now, st)
	return st, nil
}

// count counts q's messages at now, after sweeping a page of those past
// retention.
func (s *Store) count(ctx context.Context, q *queueRec, now time.Time) (*stores.QueueStats, error) {
	if err := s.sweepRetention(ctx, q, now, sweepPage); err != nil {
		return nil, err
	}
	base := func(col string, more ...docstore.Filter) docstore.Query {
		return docstore.Query{Collection: col, Filters: append([]docstore.Filter{
			{Field: fInc, Op: docstore.Eq, Value: q.Queue.ID},
			{Field: fGen, Op: docstore.Eq, Value: q.Gen},
		}, more...)}
	}
	shardsIn := docstore.Filter{Field: fShard, Op: docstore.In, Value: allShards()}
	var st stores.QueueStats
	if q.Queue.FIFO {
		pend, err := s.docs.Sum(ctx, base(colGroups), fPend)
		if err != nil {
			return nil, s.mapErr(err)
		}
		infl, err := s.inFlightFIFO(ctx, q, now, base)
		if err != nil {
			return nil, err
		}
		delayed, err := s.docs.Sum(ctx, base(colMessages, shardsIn, docstore.Filter{Field: fVis, Op: docstore.Gt, Value: now}), fN)
		if err != nil {
			return nil, s.mapErr(err)
		}
		st = stores.QueueStats{Visible: max(pend-infl-delayed, 0), InFlight: infl, Delayed: delayed}
		return &st, nil
	}
	total, err := s.docs.Count(ctx, base(colMessages))
	if err != nil {
		return nil, s.mapErr(err)
	}
	for _, recv := range []bool{true, false} {
		n, err := s.docs.Count(ctx, base(colMessages, docstore.Filter{Field: fRecv, Op: docstore.Eq, Value: recv}, shardsIn,
			docstore.Filter{Field: fVis, Op: docstore.Gt, Value: now}))
		if err != nil {
			return nil, s.mapErr(err)
		}
		if recv {
			st.InFlight = n
		} else {
			st.Delayed = n
		}
	}
	st.Visible = max(total-st.InFlight-st.Delayed, 0)
	return &st, nil
}

// inFlightFIFO counts the members in flight. In a group whose members
// share one deadline (the usual case: a claim gives its run one), they are
// all in flight while its head is: a sum over the groups whose head is
// in flight. Groups whose members' deadlines differ (ChangeMessageVisibility
// on one of them) are read and counted member by member instead.
func (s *Store) inFlightFIFO(ctx context.Context, q *queueRec, now time.Time, base func(string, ...docstore.Filter) docstore.Query) (int64, error) {
	shardsIn := docstore.Filter{Field: fShard, Op: docstore.In, Value: allShards()}
	infl, err := s.docs.Sum(ctx, base(colGroups, shardsIn, docstore.Filter{Field: fReady, Op: docstore.Gt, Value: rankUntil(now)}), fInfl)
	if err != nil {
		return 0, s.mapErr(err)
	}
	split, err := s.docs.Query(ctx, base(colGroups, docstore.Filter{Field: fSplit, Op: docstore.Eq, Value: true}))
	if err != nil {
		return 0, s.mapErr(err)
	}
	for _, d := range split {
		g, err := loadGroup(d, d.Key, d.Key.ID[len(q.Queue.ID)+1:], q)
		if err != nil {
			return 0, err
		}
		_, members, exact, _ := g.counts(now)
		if r, _ := d.Fields[fReady].(int64); r > rankUntil(now) {
			infl -= members // the sum counted them all
		}
		infl += exact
	}
	return infl, nil
}

// sweepPage bounds the documents one sweep removes.
const sweepPage = 100

// sweepRetention removes up to limit messages (Standard) or manifests
// (FIFO) of q sent before its retention, each in its own transaction that
// checks again. On FIFO queues a manifest goes when it is its group's head
// (messages in a group are in send order, so the oldest are at the head).
func (s *Store) sweepRetention(ctx context.Context, q *queueRec, now time.Time, limit int) error {
	if q.Queue.Retention <= 0 {
		return nil
	}
	docs, err := s.docs.Query(ctx, docstore.Query{
		Collection: colMessages,
		Filters: []docstore.Filter{
			{Field: fInc, Op: docstore.Eq, Value: q.Queue.ID},
			{Field: fGen, Op: docstore.Eq, Value: q.Gen},
			{Field: fShard, Op: docstore.In, Value: allShards()},
			{Field: fSent, Op: docstore.Lt, Value: rules.RetentionCutoff(q.Queue.Retention, now)},
		},
		Order: []docstore.Order{{Field: fSent}},
		Limit: limit,
	})
	if err != nil {
		return s.mapErr(err)
	}
	for _, d := range docs {
		key := d.Key
		err := s.run(ctx, now, func(t *txn) error {
			q, err := t.queue(q.Queue.Name, q.Queue.ID)
			if err != nil {
				return err
			}
			if q.Queue.FIFO {
				return t.expireHead(q, key)
			}
			d, err := t.get1(key)
			if err != nil || d == nil || fieldInt(d, fGen) != q.Gen {
				return err
			}
			var rec stdRec
			if err := decode(d, &rec); err != nil {
				return err
			}
			if !q.retained(rec.Meta.SentAt, t.now) {
				t.deleteWithChunks(key, rec.Chunks)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// expireHead drops the expired messages of a manifest that holds its
// group's head.
func (t *txn) expireHead(q *queueRec, key docstore.Key) error {
	d, err := t.get1(key)
	if err != nil || d == nil || fieldInt(d, fGen) != q.Gen {
		return err
	}
	var man manifestRec
	if err := decode(d, &man); err != nil {
		return err
	}
	gk := hashID(man.Group)
	g, err := t.get1(groupKey(q.Queue.ID, gk))
	if err != nil {
		return err
	}
	grp, err := loadGroup(g, groupKey(q.Queue.ID, gk), gk, q)
	if err != nil || !grp.seen || grp.rec.HeadStart != man.Start {
		return err
	}
	changed := false
	for pos := grp.rec.Head; pos < man.End; pos++ {
		mt := man.Members[pos-man.Start]
		if q.retained(mt.SentAt, t.now) {
			break
		}
		m := grp.member(pos)
		if m == nil {
			grp.rec.Members = append(grp.rec.Members, member{Pos: pos, Start: man.Start, End: man.End, Chunks: man.Chunks, ID: mt.ID, SentAt: mt.SentAt})
			m = &grp.rec.Members[len(grp.rec.Members)-1]
		}
		m.Del, changed = true, true
	}
	if !changed {
		return nil
	}
	for _, m := range grp.pass() {
		t.deleteWithChunks(manifestKey(q.Queue.ID, gk, m.Start), m.Chunks)
	}
	grp.settle(t.now, timeZero)
	t.set(grp.key, grp.fields(q.Queue.ID, t.now))
	return nil
}
