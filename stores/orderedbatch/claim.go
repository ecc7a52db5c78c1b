package orderedbatch

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/rules"
)

// claimRetries: a claim whose candidates were all taken by other receivers
// looks again this many times.
const claimRetries = 2

func (s *Store) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	q, err := s.cachedQueue(ctx, p.QueueName, p.QueueID)
	if err != nil {
		return nil, err
	}
	now := nowOr(p.Now)
	// Once the call has waited before a try's transaction (an earlier try,
	// a group's latch), its deliveries' timeouts count from when it began
	// (runSince): else they would end that much before the whole timeout
	// from when it returns them. (Not before: a frozen test clock, which a
	// visibility timeout of 0 must leave receivable at once.)
	called := time.Now()
	// Alone on the queue (in this process), a claim takes the oldest
	// candidates; beside other claims it spreads from the start, so that
	// concurrent receivers do not all lock the same oldest group.
	crowded := s.claiming(p.QueueID, 1) > 1
	defer s.claiming(p.QueueID, -1)
	var res *stores.MessageClaimResult
	checked := false // the queue record was read during this call
	lost := false    // the last try's candidates were taken by others
	timedOut := 0    // tries that ran out claimAttemptBound
	for try := 0; ; try++ {
		cands, hints, err := s.candidates(ctx, q, p.Max, now, crowded || try > 0)
		if err != nil {
			return nil, err
		}
		var stale bool
		lost = false
		res = &stores.MessageClaimResult{}
		// With no candidate there is nothing to claim; but a repeated
		// attempt replays what it claimed before.
		if len(cands) > 0 || (q.Queue.FIFO && p.AttemptID != "") {
			var latched *held
			if q.Queue.FIFO {
				cands, latched = s.latchCandidates(cands)
			}
			var since time.Time
			if try > 0 || latched != nil && latched.waited {
				since = called
			}
			began := time.Now()
			err = s.runSince(ctx, now, since, func(t *txn) error {
				if time.Since(began) > claimAttemptBound {
					// Give up before this attempt reads anything: no commit
					// is under way, so nothing was claimed.
					return errClaimBound
				}
				cur, cached, err := s.queueFor(t, p.QueueName, p.QueueID)
				if err != nil {
					return err
				}
				checked = checked || !cached
				if stale = cur.Gen != q.Gen; stale {
					return nil // purged since: look again in the new generation
				}
				q = cur
				c := &claim{t: t, q: q, p: p, payloads: newPayloads(t), res: &stores.MessageClaimResult{}, budget: s.txBudget(), hints: hints}
				if q.Queue.FIFO {
					err = c.fifo(cands)
				} else {
					err = c.standard(cands)
				}
				if err != nil {
					return err
				}
				res, lost = c.res, c.lost
				return nil
			})
			if latched != nil {
				latched.unlock()
			}
			if errors.Is(err, errClaimBound) {
				// Past its bound (see claimAttemptBound): try others.
				s.stuck.add(cands, time.Now())
				err, res, lost = nil, &stores.MessageClaimResult{}, true
				if timedOut++; timedOut > 1 {
					break // the caller looks again (Contended)
				}
			}
			if errors.Is(err, errStaleQueue) {
				stale, err = true, nil
			}
			if err != nil {
				if errors.Is(err, stores.ErrQueueNotFound) {
					s.queues.forget(p.QueueName)
				}
				return nil, err
			}
		}
		if !stale && len(res.Messages) == 0 && !checked {
			// Nothing found through a record this instance trusted without
			// reading: make sure no purge elsewhere moved the queue to a
			// generation the candidates did not look in, so that a long
			// poll woken for a message sent since does not miss it.
			cur, err := s.refreshQueue(ctx, p.QueueName, p.QueueID)
			if err != nil {
				return nil, err
			}
			checked, stale = true, cur.Gen != q.Gen
		}
		if stale {
			s.queues.forget(p.QueueName)
			if q, err = s.refreshQueue(ctx, p.QueueName, p.QueueID); err != nil {
				return nil, err
			}
			checked = true
			continue
		}
		if len(res.Messages) > 0 || !lost || try >= claimRetries {
			break
		}
	}
	if len(res.Messages) == 0 && lost {
		// The others may have left some: the caller looks again soon, so
		// the next change need not be looked up.
		res.Contended = true
		return res, nil
	}
	if len(res.Messages) == 0 {
		if res.NextChange, err = s.nextChange(ctx, q, now); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// latchCandidates keeps the candidate groups whose latch the claim gets
// without waiting (another claim in this process holds the others), or
// waits for the first one's when it gets none.
func (s *Store) latchCandidates(cands []docstore.Key) ([]docstore.Key, *held) {
	ids := make([]string, len(cands))
	for i, k := range cands {
		ids[i] = k.ID
	}
	h, got := s.latches.try(ids)
	out := make([]docstore.Key, len(got))
	for i, id := range got {
		out[i] = docstore.Key{Collection: colGroups, ID: id}
	}
	return out, h
}

// readQueue reads the live queue outside a transaction (for the queries
// that find candidates; the transaction checks it again).
func (s *Store) readQueue(ctx context.Context, name, id string) (*queueRec, error) {
	ds, err := s.docs.Get(ctx, queueKey(name))
	if err != nil {
		return nil, s.mapErr(err)
	}
	q, err := decodeQueue(ds[0])
	if err != nil {
		return nil, err
	}
	if q == nil || !q.Live || (id != "" && id != q.Queue.ID) {
		return nil, stores.ErrQueueNotFound
	}
	return q, nil
}

// candidates finds documents that may hold claimable messages: FIFO groups
// whose head may be claimable, or visible Standard messages, oldest first.
// With spread (a claim that lost its candidates to other receivers looks
// again) it asks one random shard first, so that concurrent receivers
// spread instead of all fighting over the oldest few, and all shards when
// that one has too few.
func (s *Store) candidates(ctx context.Context, q *queueRec, max int, now time.Time, spread bool) ([]docstore.Key, map[docstore.Key]int64, error) {
	col, field := colMessages, fVis
	if q.Queue.FIFO {
		col, field = colGroups, fReady
	}
	base := []docstore.Filter{
		{Field: fInc, Op: docstore.Eq, Value: q.Queue.ID},
		{Field: fGen, Op: docstore.Eq, Value: q.Gen},
	}
	var until any = now
	if q.Queue.FIFO {
		until = rankUntil(now)
	}
	// While there are suspects (see claimAttemptBound), the claim reads
	// a wider window and picks among it at random, suspects last: the
	// dead transaction may hold more of the oldest candidates than the
	// ones already found waiting.
	stuck := s.stuck.live(time.Now())
	want := max
	if len(stuck) > 0 {
		want = max + len(stuck) + suspectWindow
	}
	query := func(shard docstore.Filter) ([]*docstore.Doc, error) {
		return s.docs.Query(ctx, docstore.Query{
			Collection: col,
			Filters:    append(slices.Clone(base), shard, docstore.Filter{Field: field, Op: docstore.Le, Value: until}),
			Order:      []docstore.Order{{Field: field}},
			Limit:      want,
		})
	}
	var docs []*docstore.Doc
	if spread {
		var err error
		if docs, err = query(docstore.Filter{Field: fShard, Op: docstore.Eq, Value: randomShard()}); err != nil {
			return nil, nil, s.mapErr(err)
		}
	}
	if len(docs) < want {
		more, err := query(docstore.Filter{Field: fShard, Op: docstore.In, Value: allShards()})
		if err != nil {
			return nil, nil, s.mapErr(err)
		}
		docs = append(docs, more...)
	}
	var keys, later []docstore.Key
	hints := map[docstore.Key]int64{}
	for _, d := range docs {
		if _, seen := hints[d.Key]; seen {
			continue
		}
		// A group gives at most its pending messages; a Standard
		// message one.
		hints[d.Key] = 1
		if n := fieldInt(d, fPend); n > 1 {
			hints[d.Key] = n
		}
		if stuck[d.Key] {
			later = append(later, d.Key)
		} else {
			keys = append(keys, d.Key)
		}
	}
	if len(stuck) > 0 {
		rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	}
	keys = append(keys, later...)
	if len(keys) > max {
		for _, k := range keys[max:] {
			delete(hints, k)
		}
		keys = keys[:max]
	}
	return keys, hints, nil
}

// nextChange finds when the next delayed or in-flight message becomes
// visible, for long polls to wake then.
func (s *Store) nextChange(ctx context.Context, q *queueRec, now time.Time) (time.Time, error) {
	col, field := colMessages, fVis
	var after any = now
	if q.Queue.FIFO {
		col, field, after = colGroups, fReady, rankUntil(now)
	}
	docs, err := s.docs.Query(ctx, docstore.Query{
		Collection: col,
		Filters: []docstore.Filter{
			{Field: fInc, Op: docstore.Eq, Value: q.Queue.ID},
			{Field: fGen, Op: docstore.Eq, Value: q.Gen},
			{Field: fShard, Op: docstore.In, Value: allShards()},
			{Field: field, Op: docstore.Gt, Value: after},
		},
		Order: []docstore.Order{{Field: field}},
		Limit: 1,
	})
	if err != nil || len(docs) == 0 {
		return time.Time{}, s.mapErr(err)
	}
	if r, ok := docs[0].Fields[field].(int64); ok {
		return rankTime(r), nil
	}
	t, _ := docs[0].Fields[field].(time.Time)
	return t, nil
}

// claim is one claim's transaction attempt.
type claim struct {
	t        *txn
	q        *queueRec
	p        *stores.MessageClaimParams
	payloads *payloads
	res      *stores.MessageClaimResult
	lost     bool // a candidate turned out taken or gone
	// hints: how many messages each candidate may give at most (see
	// candidates).
	hints map[docstore.Key]int64

	dlq   *queueRec
	moves []incoming
	// budget is what is left of the bytes one transaction may write.
	budget int
}

// spend takes n bytes from the budget if they fit.
func (c *claim) spend(n int) bool {
	if n > c.budget {
		return false
	}
	c.budget -= n
	return true
}

func (c *claim) until() time.Time { return c.t.deadline(c.p.VisibilityTimeout) }

// deadLetter reads the dead-letter queue when the claim may redrive.
func (c *claim) deadLetter() error {
	if c.p.Redrive == nil {
		return nil
	}
	target := rules.RedriveTarget(c.p.Redrive, c.q.Queue.Name)
	if target == "" {
		return nil
	}
	d, err := c.t.get1(queueKey(target))
	if err != nil {
		return err
	}
	dlq, err := decodeQueue(d)
	if err != nil {
		return err
	}
	if dlq != nil && dlq.Live && dlq.Queue.FIFO == c.q.Queue.FIFO {
		c.dlq = dlq
	}
	return nil
}

func (c *claim) redrives(rc int) bool {
	return rules.Redrives(c.p.Redrive, c.q.Queue.Name, c.dlq != nil, rc)
}

// finish stores the redriven messages in the dead-letter queue.
func (c *claim) finish() error {
	if len(c.moves) == 0 {
		return nil
	}
	for i := range c.moves {
		m := &c.moves[i].meta
		m.DedupID, m.SentAt = rules.DeadLettered(c.dlq.Queue.FIFO, m.ID, m.DedupID, m.SentAt, c.t.now)
	}
	if _, err := c.t.add(c.dlq, c.moves, dedup{}); err != nil {
		return err
	}
	c.res.Redriven = len(c.moves)
	return nil
}

// ---- Standard

func (c *claim) standard(cands []docstore.Key) error {
	if err := c.deadLetter(); err != nil {
		return err
	}
	docs, err := c.t.get(cands...)
	if err != nil {
		return err
	}
	now := c.t.now
	for i, d := range docs {
		if len(c.res.Messages) >= c.p.Max {
			break
		}
		if d != nil && fieldInt(d, fGen) > c.q.Gen {
			return errStaleQueue
		}
		if d == nil || fieldInt(d, fGen) != c.q.Gen {
			c.lost = true
			continue
		}
		var rec stdRec
		if err := decode(d, &rec); err != nil {
			return err
		}
		if rec.Vis.After(now) {
			c.lost = true
			continue
		}
		key := cands[i]
		if !c.q.retained(rec.Meta.SentAt, now) {
			c.t.deleteWithChunks(key, rec.Chunks)
			continue
		}
		moving := c.redrives(rec.RC)
		bodies, err := c.payloads.get(key, rec.Payload, rec.Chunks, 1)
		if err != nil {
			return err
		}
		// What the transaction writes: the moved message, or the claimed
		// one rewritten with its inline payload.
		size := len(rec.Payload)
		if moving {
			size = payloadSize(bodies[0])
		}
		if !c.spend(size) {
			continue // left for the next claim
		}
		if moving {
			m := rec.Meta
			m.DLSource, m.RC, m.FirstRecv = c.q.Queue.Name, rec.RC, rec.First
			c.moves = append(c.moves, incoming{meta: m, body: bodies[0]})
			c.t.deleteWithChunks(key, rec.Chunks)
			continue
		}
		rec.RC++
		if rec.First.IsZero() {
			rec.First = now
		}
		rec.Vis, rec.Token = c.until(), c.p.Token
		c.t.set(key, stdFields(c.q, &rec))
		c.res.Messages = append(c.res.Messages, stores.ClaimedMessage{
			StoredMessage: stored(rec.Meta, bodies[0], rec.RC, rec.First), Token: c.p.Token,
		})
	}
	return c.finish()
}

// ---- FIFO

// run is a manifest as a claim reads it.
type manifestDoc struct {
	key docstore.Key
	rec manifestRec
}

func (c *claim) manifest(g *group, start int64, cache map[docstore.Key]*manifestDoc) (*manifestDoc, error) {
	k := manifestKey(c.q.Queue.ID, g.gk, start)
	if m := cache[k]; m != nil {
		return m, nil
	}
	d, err := c.t.get1(k)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, errMissingManifest(k)
	}
	m := &manifestDoc{key: k}
	if err := decode(d, &m.rec); err != nil {
		return nil, err
	}
	cache[k] = m
	return m, nil
}

func (c *claim) fifo(cands []docstore.Key) error {
	// A receive attempt is read first: its groups are read with the
	// first candidates.
	var att *attemptRec
	var first []docstore.Key
	akey := attemptKey(c.q.Queue.ID, c.p.AttemptID)
	if c.p.AttemptID != "" {
		d, err := c.t.get1(akey)
		if err != nil {
			return err
		}
		if d != nil && fieldInt(d, fGen) > c.q.Gen {
			return errStaleQueue
		}
		if d != nil && fieldInt(d, fGen) == c.q.Gen {
			att = &attemptRec{}
			if err := decode(d, att); err != nil {
				return err
			}
			for _, m := range att.Members {
				if k := groupKey(c.q.Queue.ID, m.GK); !slices.Contains(first, k) {
					first = append(first, k)
				}
			}
			cands = slices.DeleteFunc(slices.Clone(cands), func(k docstore.Key) bool { return slices.Contains(first, k) })
		}
	}
	if err := c.deadLetter(); err != nil {
		return err
	}
	// Groups are read in rounds, each of the next candidates whose hints
	// add up to what the claim still wants: a receive of ten that one
	// group can fill reads that group, not every candidate.
	groups := map[string]*group{}
	var loaded []*group
	load := func(keys []docstore.Key) ([]*group, error) {
		docs, err := c.t.get(keys...)
		if err != nil {
			return nil, err
		}
		round := make([]*group, len(docs))
		for i, d := range docs {
			gk := keys[i].ID[len(c.q.Queue.ID)+1:]
			if round[i], err = loadGroup(d, keys[i], gk, c.q); err != nil {
				return nil, err
			}
			groups[gk] = round[i]
		}
		loaded = append(loaded, round...)
		return round, nil
	}
	keys, next := c.nextRound(cands, 0)
	round, err := load(append(first, keys...))
	if err != nil {
		return err
	}
	cache := map[docstore.Key]*manifestDoc{}
	if att != nil {
		replayed, err := c.replay(akey, att, groups, cache)
		if err != nil || replayed {
			return err
		}
	}
	var claimed []attemptMember
	for {
		slices.SortStableFunc(round, func(a, b *group) int { return cmp.Compare(a.rec.Rank, b.rec.Rank) })
		for _, g := range round {
			if len(c.res.Messages) >= c.p.Max {
				break
			}
			if !g.seen || g.empty() {
				c.lost = true
				continue
			}
			got, err := c.fromGroup(g, cache)
			if err != nil {
				return err
			}
			if len(got) == 0 {
				c.lost = true
			}
			claimed = append(claimed, got...)
		}
		if len(c.res.Messages) >= c.p.Max || next >= len(cands) {
			break
		}
		keys, next = c.nextRound(cands, next)
		if round, err = load(keys); err != nil {
			return err
		}
	}
	for _, g := range loaded {
		if g.dirty {
			c.t.set(g.key, g.fields(c.q.Queue.ID, c.t.now))
		}
	}
	if c.p.AttemptID != "" && c.p.AttemptWindow > 0 && len(claimed) > 0 {
		c.t.set(akey, docstore.Fields{
			fInc: c.q.Queue.ID, fGen: c.q.Gen, fShard: randomShard(), fExp: c.t.now.Add(c.p.AttemptWindow),
			fData: encode(&attemptRec{Token: c.p.Token, At: c.t.now, Until: c.until(), Members: claimed}),
		})
	}
	return c.finish()
}

// nextRound takes candidates from cands[from:] until their hints cover
// what the claim still wants (at least one), and says where the next round
// starts.
func (c *claim) nextRound(cands []docstore.Key, from int) ([]docstore.Key, int) {
	want := int64(c.p.Max - len(c.res.Messages))
	i := from
	for ; i < len(cands) && (i == from || want > 0); i++ {
		h, ok := c.hints[cands[i]]
		if !ok {
			h = 1
		}
		want -= h
	}
	return cands[from:i], i
}

// fromGroup claims the contiguous run of visible messages from g's head,
// stopping at the first one in flight or delayed. Messages past retention
// are dropped and over-received ones redriven on the way; neither stops
// the run.
func (c *claim) fromGroup(g *group, cache map[docstore.Key]*manifestDoc) ([]attemptMember, error) {
	now := c.t.now
	var got []attemptMember
	var headVis time.Time
	changed := false
	var cur *manifestDoc
	w := walker{g: g}
	for pos := g.rec.Head; pos < g.rec.Tail && len(c.res.Messages) < c.p.Max; pos++ {
		mem := g.member(pos)
		if mem != nil && mem.Del {
			w.span(mem.Start, mem.End)
			continue
		}
		if mem != nil && !c.q.retained(mem.SentAt, now) {
			// Past retention, in flight or not: gone (SQS drops in-flight
			// messages at retention too), so it holds the group no longer.
			mem.Del, changed = true, true
			w.span(mem.Start, mem.End)
			continue
		}
		if mem != nil && mem.Vis.After(now) {
			break // in flight: the group gives nothing more
		}
		var err error
		if cur, err = c.manifest(g, w.start(pos, mem), cache); err != nil {
			return nil, err
		}
		w.span(cur.rec.Start, cur.rec.End)
		if mem == nil && cur.rec.Vis.After(now) {
			if pos == g.rec.Head {
				headVis = cur.rec.Vis
			}
			break // delayed
		}
		mt := cur.rec.Members[pos-cur.rec.Start]
		if mem == nil {
			g.rec.Members = append(g.rec.Members, member{
				Pos: pos, Start: cur.rec.Start, End: cur.rec.End, Chunks: cur.rec.Chunks, ID: mt.ID,
				RC: mt.RC, First: mt.FirstRecv, SentAt: mt.SentAt,
			})
			mem = &g.rec.Members[len(g.rec.Members)-1]
		}
		changed = true
		if !c.q.retained(mt.SentAt, now) {
			mem.Del = true
			continue
		}
		if c.redrives(mem.RC) {
			bodies, err := c.payloads.get(cur.key, cur.rec.Payload, cur.rec.Chunks, len(cur.rec.Members))
			if err != nil {
				return nil, err
			}
			if !c.spend(payloadSize(bodies[pos-cur.rec.Start])) {
				mem.Del = false
				break // the group's next claim moves it
			}
			m := mt
			m.Seq, m.DLSource, m.RC, m.FirstRecv = "", c.q.Queue.Name, mem.RC, mem.First
			c.moves = append(c.moves, incoming{meta: m, body: bodies[pos-cur.rec.Start]})
			mem.Del = true
			continue
		}
		bodies, err := c.payloads.get(cur.key, cur.rec.Payload, cur.rec.Chunks, len(cur.rec.Members))
		if err != nil {
			return nil, err
		}
		mem.RC++
		if mem.First.IsZero() {
			mem.First = now
		}
		mem.Vis, mem.Token = c.until(), c.p.Token
		c.res.Messages = append(c.res.Messages, stores.ClaimedMessage{
			StoredMessage: stored(mt, bodies[pos-cur.rec.Start], mem.RC, mem.First),
			Token:         c.p.Token, Locator: locator(g.gk, pos),
		})
		got = append(got, attemptMember{GK: g.gk, Pos: pos, ID: mt.ID})
	}
	if changed || !headVis.IsZero() {
		for _, m := range g.pass() {
			c.t.deleteWithChunks(manifestKey(c.q.Queue.ID, g.gk, m.Start), m.Chunks)
		}
		g.settle(now, headVis)
	}
	return got, nil
}

// replay returns an attempt's messages again, restarting their visibility,
// when rules.AttemptReplays says so.
func (c *claim) replay(akey docstore.Key, att *attemptRec, groups map[string]*group, cache map[docstore.Key]*manifestDoc) (bool, error) {
	now := c.t.now
	ds := make([]rules.Delivery, len(att.Members))
	for i, am := range att.Members {
		g := groups[am.GK]
		if m := g.member(am.Pos); m != nil && !m.Del && m.ID == am.ID && c.q.retained(m.SentAt, now) {
			ds[i] = rules.Delivery{Found: true, Token: m.Token, VisibleAt: m.Vis}
		}
	}
	if !rules.AttemptReplays(att.At, c.p.AttemptWindow, att.Token, rules.LeftAll(len(ds), att.Until), ds, now) {
		return false, nil
	}
	for _, am := range att.Members {
		g := groups[am.GK]
		m := g.member(am.Pos)
		cur, err := c.manifest(g, m.Start, cache)
		if err != nil {
			return false, err
		}
		bodies, err := c.payloads.get(cur.key, cur.rec.Payload, cur.rec.Chunks, len(cur.rec.Members))
		if err != nil {
			return false, err
		}
		m.Vis = c.until()
		g.settle(now, time.Time{})
		i := am.Pos - cur.rec.Start
		c.res.Messages = append(c.res.Messages, stores.ClaimedMessage{
			StoredMessage: stored(cur.rec.Members[i], bodies[i], m.RC, m.First),
			Token:         att.Token, Locator: locator(am.GK, am.Pos),
		})
	}
	for _, g := range groups {
		if g.dirty {
			c.t.set(g.key, g.fields(c.q.Queue.ID, now))
		}
	}
	again := *att
	again.Until = c.until() // where the replay left them
	c.t.set(akey, docstore.Fields{
		fInc: c.q.Queue.ID, fGen: c.q.Gen, fShard: randomShard(), fExp: att.At.Add(c.p.AttemptWindow), fData: encode(&again),
	})
	return true, nil
}

// walker finds the manifest of each position as a loop walks a group from
// its head: positions are contiguous, so the manifest of a position is the
// one of the position before it or the one that starts where it ends.
type walker struct {
	g        *group
	known    bool
	from, to int64 // the manifest of the position before
}

func (w *walker) span(from, to int64) { w.known, w.from, w.to = true, from, to }

// start is the first position of the manifest holding pos.
func (w *walker) start(pos int64, mem *member) int64 {
	switch {
	case mem != nil:
		return mem.Start
	case !w.known:
		return w.g.rec.HeadStart
	case pos < w.to:
		return w.from
	}
	return w.to
}

type errMissingManifest docstore.Key

func (e errMissingManifest) Error() string {
	return "orderedbatch: manifest " + e.ID + " is missing"
}
