package orderedbatch

import (
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/rules"
)

// incoming is a message to add to a queue: sent, redriven or moved.
type incoming struct {
	meta  meta
	body  body
	delay time.Duration
	// dedup key (sends to FIFO queues only)
	scope, dedupID string
}

func (s *Store) MessageSend(ctx context.Context, p *stores.MessageSendParams) (*stores.MessageSendResult, error) {
	var groups []string
	for i := range p.Messages {
		if g := p.Messages[i].GroupID; g != "" {
			groups = append(groups, groupKey(p.QueueID, hashID(g)).ID)
		}
	}
	defer s.latches.lock(groups).unlock()
	// A send first creates its dedup markers without reading them (a read
	// each, the most of what a FIFO send costs); only when one exists, and
	// the commit failed with ErrExists, does it read them, to echo the
	// duplicate or replace a marker of a former window or generation.
	for readMarkers := false; ; readMarkers = true {
		res, err := s.send(ctx, p, readMarkers)
		if readMarkers || !errors.Is(err, docstore.ErrExists) {
			return res, err
		}
	}
}

func (s *Store) send(ctx context.Context, p *stores.MessageSendParams, readMarkers bool) (*stores.MessageSendResult, error) {
	var res *stores.MessageSendResult
	err := s.run(ctx, p.Now, func(t *txn) error {
		q, err := s.readQueueIn(t, p.QueueName, p.QueueID)
		if err != nil {
			return err
		}
		in := make([]incoming, len(p.Messages))
		for i := range p.Messages {
			m := &p.Messages[i]
			in[i] = incoming{meta: newMeta(m, t.now), body: newBody(m), delay: max(m.Delay, 0)}
			if q.Queue.FIFO {
				in[i].scope, in[i].dedupID = m.DedupScope, m.DedupID
			}
		}
		results, err := t.add(q, in, dedup{window: p.DedupWindow, read: readMarkers})
		if err != nil {
			return err
		}
		res = &stores.MessageSendResult{Results: results}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// dedup is how a FIFO send deduplicates: within window (none when zero),
// reading the markers first, or creating them unread.
type dedup struct {
	window time.Duration
	read   bool
}

// add stores messages in q, in order, in the transaction: on FIFO queues
// each group's new messages as one manifest at the group's tail (after the
// dedup check), on Standard queues one document each.
func (t *txn) add(q *queueRec, in []incoming, dd dedup) ([]stores.SendResult, error) {
	if q.Queue.FIFO {
		return t.addFIFO(q, in, dd)
	}
	out := make([]stores.SendResult, len(in))
	for i := range in {
		m := &in[i]
		rec := &stdRec{Meta: m.meta, Vis: t.now.Add(m.delay), RC: m.meta.RC, First: m.meta.FirstRecv}
		key := standardKey(q.Queue.ID, m.meta.ID)
		t.putPayload(q, key, encodePayload([]body{m.body}), &rec.Payload, &rec.Chunks)
		t.set(key, stdFields(q, rec))
		out[i] = stores.SendResult{MessageID: m.meta.ID}
	}
	return out, nil
}

func stdFields(q *queueRec, r *stdRec) docstore.Fields {
	return docstore.Fields{
		fInc: q.Queue.ID, fGen: q.Gen, fShard: shardOf(r.Meta.ID), fVis: r.Vis, fSent: r.Meta.SentAt,
		fRecv: r.Token != "", fData: encode(r),
	}
}

// putPayload keeps a payload inline (in *inline) or writes it as chunks of
// owner (counting them in *chunks).
func (t *txn) putPayload(q *queueRec, owner docstore.Key, p []byte, inline *[]byte, chunks *int) {
	in, cs := splitPayload(p)
	*inline, *chunks = in, len(cs)
	for i, c := range cs {
		t.set(chunkKey(owner, i), docstore.Fields{fInc: q.Queue.ID, fGen: q.Gen, fData: c})
	}
}

func (t *txn) addFIFO(q *queueRec, in []incoming, dd dedup) ([]stores.SendResult, error) {
	dedupWindow := dd.window
	inc := q.Queue.ID
	// Read every group and dedup marker the messages touch, in one round.
	groups := map[string]*group{}
	var gks []string
	var keys []docstore.Key
	for i := range in {
		gk := hashID(in[i].meta.Group)
		if _, ok := groups[gk]; !ok {
			groups[gk] = nil
			gks = append(gks, gk)
			keys = append(keys, groupKey(inc, gk))
		}
	}
	dedup := map[docstore.Key]*docstore.Doc{}
	var dkeys []docstore.Key
	if dedupWindow > 0 && dd.read {
		for i := range in {
			if in[i].dedupID == "" {
				continue
			}
			k := dedupKey(inc, in[i].scope, in[i].dedupID)
			if _, ok := dedup[k]; !ok {
				dedup[k] = nil
				dkeys = append(dkeys, k)
			}
		}
	}
	docs, err := t.get(append(keys, dkeys...)...)
	if err != nil {
		return nil, err
	}
	for i, gk := range gks {
		g, err := loadGroup(docs[i], keys[i], gk, q)
		if err != nil {
			return nil, err
		}
		groups[gk] = g
	}
	for i := range in {
		if g := groups[hashID(in[i].meta.Group)]; g.rec.Group == "" {
			g.rec.Group = in[i].meta.Group
		}
	}
	for i, k := range dkeys {
		dedup[k] = docs[len(gks)+i]
	}
	// Groups new to the queue (or out of sequence numbers) take a number
	// from a counter shard: a second round of reads.
	adding := map[string]int64{}
	for i := range in {
		adding[hashID(in[i].meta.Group)]++
	}
	var fresh []*group
	for _, gk := range gks {
		g := groups[gk]
		if !g.seen || g.rec.Tail+adding[gk]-g.rec.Base > seqSpan-1 {
			fresh = append(fresh, g)
		}
	}
	if err := t.number(inc, fresh); err != nil {
		return nil, err
	}

	out := make([]stores.SendResult, len(in))
	added := map[docstore.Key]stores.SendResult{} // dedup keys stored by this call
	batches := map[string][]int{}                 // group -> indexes of in stored
	for i := range in {
		m := &in[i]
		var dk docstore.Key
		if dedupWindow > 0 && m.dedupID != "" {
			dk = dedupKey(inc, m.scope, m.dedupID)
			if r, ok := added[dk]; ok {
				r.Duplicate = true
				out[i] = r
				continue
			}
			if d := dedup[dk]; d != nil && fieldInt(d, fGen) == q.Gen {
				var rec dedupRec
				if err := decode(d, &rec); err != nil {
					return nil, err
				}
				if rules.Duplicate(rec.SentAt, dedupWindow, t.now) {
					out[i] = stores.SendResult{MessageID: rec.ID, SequenceNumber: rec.Seq, Duplicate: true}
					continue
				}
			}
		}
		gk := hashID(m.meta.Group)
		g := groups[gk]
		pos := g.rec.Tail
		g.rec.Tail++
		m.meta.Seq = g.seq(pos)
		batches[gk] = append(batches[gk], i)
		out[i] = stores.SendResult{MessageID: m.meta.ID, SequenceNumber: m.meta.Seq}
		if dk.ID != "" {
			added[dk] = out[i]
			marker := docstore.Fields{
				fInc: inc, fGen: q.Gen, fShard: randomShard(), fExp: t.now.Add(dedupWindow),
				fData: encode(&dedupRec{ID: m.meta.ID, Seq: m.meta.Seq, SentAt: t.now}),
			}
			if dd.read {
				t.set(dk, marker)
			} else {
				t.create(dk, marker)
			}
		}
	}
	for _, gk := range gks {
		idx := batches[gk]
		if len(idx) == 0 {
			continue
		}
		g := groups[gk]
		start := g.rec.Tail - int64(len(idx))
		man := &manifestRec{Group: in[idx[0]].meta.Group, Start: start, End: g.rec.Tail, Vis: t.now.Add(in[idx[0]].delay)}
		bodies := make([]body, len(idx))
		for j, i := range idx {
			man.Members = append(man.Members, in[i].meta)
			bodies[j] = in[i].body
			if v := t.now.Add(in[i].delay); v.After(man.Vis) {
				man.Vis = v
			}
		}
		key := manifestKey(inc, gk, start)
		g.noteAhead(start, man.Vis)
		t.putPayload(q, key, encodePayload(bodies), &man.Payload, &man.Chunks)
		t.set(key, docstore.Fields{
			fInc: inc, fGen: q.Gen, fShard: shardOf(gk), fVis: man.Vis, fSent: t.now, fN: int64(len(idx)), fData: encode(man),
		})
		if start == g.rec.Head { // the group was empty: its head is this manifest
			g.settle(t.now, man.Vis)
		}
		g.dirty = true
	}
	for _, gk := range gks {
		if g := groups[gk]; g.dirty {
			t.set(g.key, g.fields(inc, t.now))
		}
	}
	return out, nil
}

// number gives each group a new sequence-number Num from a counter shard
// of the incarnation (shards spread the writes of queues whose groups come
// and go, such as a group per message). A shard's values are unique and
// increase, and never fall below numPerSecond per second since numEpoch,
// so that a group that was removed when idle and comes back later gets a
// larger Num than it had (its sequence numbers keep increasing) unless a
// shard ran more than its idle time ahead of the clock.
func (t *txn) number(inc string, gs []*group) error {
	if len(gs) == 0 {
		return nil
	}
	shard := map[*group]int64{}
	var keys []docstore.Key
	seen := map[int64]int{}
	for _, g := range gs {
		s := randomShard()
		shard[g] = s
		if _, ok := seen[s]; !ok {
			seen[s] = len(keys)
			keys = append(keys, counterKey(inc, s))
		}
	}
	docs, err := t.get(keys...)
	if err != nil {
		return err
	}
	floor := max(t.now.Unix()-numEpoch, 0) * numPerSecond
	next := make([]int64, len(keys))
	for i, d := range docs {
		next[i] = floor
		if d != nil {
			next[i] = max(next[i], fieldInt(d, "next"))
		}
	}
	for _, g := range gs {
		s := shard[g]
		i := seen[s]
		g.rec.Num = next[i]*shards + s + 1
		g.rec.Base = g.rec.Tail
		next[i]++
		g.dirty = true
	}
	for i, k := range keys {
		t.set(k, docstore.Fields{fInc: inc, "next": next[i]})
	}
	return nil
}

// numEpoch (2026-01-01) and numPerSecond keep Num within its 14 digits for
// centuries (10^14 / (8 shards x 1000 per second) is 1.25e10 s).
const (
	numEpoch     = 1767225600
	numPerSecond = 1000
)
