package orderedbatch

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
)

// taken is a visible message a move takes from its source.
type taken struct {
	in incoming
	to string // destination queue name
}

func (s *Store) MessageMove(ctx context.Context, p *stores.MessageMoveParams) (*stores.MessageMoveResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if p.NewID == nil {
		return nil, errors.New("orderedbatch: MessageMove needs NewID")
	}
	limit := min(max(p.Max, 0), maxMovePerCall)
	src, err := s.readQueue(ctx, p.FromName, p.FromID)
	if err != nil {
		return nil, err
	}
	now := nowOr(p.Now)
	// One more candidate than the move may take tells whether any is left.
	cands, _, err := s.candidates(ctx, src, limit+1, now, false)
	if err != nil {
		return nil, err
	}
	var res *stores.MessageMoveResult
	err = s.run(ctx, now, func(t *txn) error {
		var task *stores.MoveTask
		if p.Step != nil {
			var err error
			if task, err = t.step(p.Step); err != nil {
				return err
			}
		}
		src, err := t.queue(p.FromName, p.FromID)
		if err != nil {
			return err
		}
		if p.ToName == src.Queue.Name {
			return errors.New("orderedbatch: MessageMove to the source queue")
		}
		dests := map[string]*queueRec{}
		if p.ToName != "" {
			dst, err := t.queue(p.ToName, "")
			if err != nil {
				return err
			}
			dests[p.ToName] = dst
		}
		mv := &mover{t: t, q: src, payloads: newPayloads(t), newID: p.NewID, to: p.ToName, dests: dests, limit: limit,
			budget: s.txBudget(), writes: s.docs.Limits().MaxTxWrites - moveWriteRoom}
		if src.Queue.FIFO {
			err = mv.fifo(cands)
		} else {
			err = mv.standard(cands)
		}
		if err != nil {
			return err
		}
		res = &stores.MessageMoveResult{MovedTo: map[string]int{}}
		byDest := map[string][]incoming{}
		var names []string
		for _, tk := range mv.taken {
			if _, ok := byDest[tk.to]; !ok {
				names = append(names, tk.to)
			}
			byDest[tk.to] = append(byDest[tk.to], tk.in)
		}
		for _, name := range names {
			if _, err := t.add(dests[name], byDest[name], dedup{}); err != nil {
				return err
			}
			res.Moved += len(byDest[name])
			res.MovedTo[name] = len(byDest[name])
		}
		res.Failed = mv.failed
		res.Exhausted = len(cands) <= limit && mv.failed == 0 && !mv.left
		if task != nil {
			task.Moved += int64(res.Moved)
			task.PacedTo = p.Step.PacedTo
			task.UpdatedAt = t.now
			task.Version++
			t.set(taskKey(task.Handle), taskFields(task))
			res.Task = task
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// mover takes visible messages from a source for a move.
type mover struct {
	t        *txn
	q        *queueRec
	payloads *payloads
	newID    func() string
	to       string
	dests    map[string]*queueRec
	limit    int
	taken    []taken
	failed   int
	left     bool // a visible message is left that this call did not take
	budget   int  // payload and record bytes the transaction may still write
	writes   int  // documents it may still write
}

// spend takes a message of payload n from the budgets if it fits: its
// payload and record in bytes, and in writes its deletion (with chunks) at
// the source and its creation (with chunks) at the destination, plus, on a
// FIFO queue, a group and a manifest on either side.
func (mv *mover) spend(n int) bool {
	bytes := n + moveRecordRoom
	writes := 2 * (1 + chunksOf(n))
	if mv.q.Queue.FIFO {
		writes += 4
	}
	if bytes > mv.budget || writes > mv.writes {
		return false
	}
	mv.budget -= bytes
	mv.writes -= writes
	return true
}

// moveRecordRoom is what a moved message's record (its metadata: ids,
// digests, sender, group, source) may take besides its payload.
const moveRecordRoom = 2 << 10

// moveWriteRoom is the writes of a move that no message pays for: the
// task's record, and room to spare.
const moveWriteRoom = 10

// destination says where a message goes: the move's destination, or the
// queue it was redriven from (which must exist and be of the same kind).
func (mv *mover) destination(m meta) (string, error) {
	if mv.to != "" {
		return mv.to, nil
	}
	name := m.DLSource
	if name == "" || name == mv.q.Queue.Name {
		return "", nil
	}
	if d, ok := mv.dests[name]; ok {
		if d == nil {
			return "", nil
		}
		return name, nil
	}
	dst, err := mv.t.queue(name, "")
	if errors.Is(err, stores.ErrQueueNotFound) || (err == nil && dst.Queue.FIFO != mv.q.Queue.FIFO) {
		mv.dests[name] = nil
		return "", nil
	}
	if err != nil {
		return "", err
	}
	mv.dests[name] = dst
	return name, nil
}

// restart is a moved message as it starts over in its destination: a new
// message (see stores.MessageMoveParams).
func (mv *mover) restart(m meta) meta {
	m.ID, m.SentAt = mv.newID(), mv.t.now
	m.Seq, m.DLSource, m.RC, m.FirstRecv = "", "", 0, timeZero
	return m
}

func (mv *mover) standard(cands []docstore.Key) error {
	docs, err := mv.t.get(cands...)
	if err != nil {
		return err
	}
	now := mv.t.now
	for i, d := range docs {
		if d == nil || fieldInt(d, fGen) != mv.q.Gen {
			continue
		}
		var rec stdRec
		if err := decode(d, &rec); err != nil {
			return err
		}
		if rec.Vis.After(now) || !mv.q.retained(rec.Meta.SentAt, now) {
			continue
		}
		if len(mv.taken)+mv.failed >= mv.limit {
			mv.left = true
			break
		}
		to, err := mv.destination(rec.Meta)
		if err != nil {
			return err
		}
		if to == "" {
			mv.failed++
			continue
		}
		bodies, err := mv.payloads.get(cands[i], rec.Payload, rec.Chunks, 1)
		if err != nil {
			return err
		}
		if !mv.spend(payloadSize(bodies[0])) {
			mv.left = true
			break
		}
		mv.taken = append(mv.taken, taken{in: incoming{meta: mv.restart(rec.Meta), body: bodies[0]}, to: to})
		mv.t.deleteWithChunks(cands[i], rec.Chunks)
	}
	return nil
}

// fifo takes each candidate group's run of visible messages from its head,
// in order, as a claim would, and removes them from the group.
func (mv *mover) fifo(cands []docstore.Key) error {
	docs, err := mv.t.get(cands...)
	if err != nil {
		return err
	}
	now := mv.t.now
	c := &claim{t: mv.t, q: mv.q}
	cache := map[docstore.Key]*manifestDoc{}
	var gs []*group
	for i, d := range docs {
		g, err := loadGroup(d, cands[i], cands[i].ID[len(mv.q.Queue.ID)+1:], mv.q)
		if err != nil {
			return err
		}
		gs = append(gs, g)
	}
	slices.SortStableFunc(gs, func(a, b *group) int { return cmp.Compare(a.rec.Rank, b.rec.Rank) })
	for _, g := range gs {
		if !g.seen {
			continue
		}
		changed := false
		var cur *manifestDoc
		w := walker{g: g}
		for pos := g.rec.Head; pos < g.rec.Tail; pos++ {
			mem := g.member(pos)
			if mem != nil && mem.Del {
				w.span(mem.Start, mem.End)
				continue
			}
			if mem != nil && mem.Vis.After(now) {
				break
			}
			if cur, err = c.manifest(g, w.start(pos, mem), cache); err != nil {
				return err
			}
			w.span(cur.rec.Start, cur.rec.End)
			if mem == nil && cur.rec.Vis.After(now) {
				break
			}
			if len(mv.taken)+mv.failed >= mv.limit {
				mv.left = true
				break
			}
			mt := cur.rec.Members[pos-cur.rec.Start]
			to, err := mv.destination(mt)
			if err != nil {
				return err
			}
			if to == "" {
				mv.failed++
				break // it stays at the head: the group gives nothing more
			}
			bodies, err := mv.payloads.get(cur.key, cur.rec.Payload, cur.rec.Chunks, len(cur.rec.Members))
			if err != nil {
				return err
			}
			if !mv.spend(payloadSize(bodies[pos-cur.rec.Start])) {
				mv.left = true
				break
			}
			if mem == nil {
				g.rec.Members = append(g.rec.Members, member{
					Pos: pos, Start: cur.rec.Start, End: cur.rec.End, Chunks: cur.rec.Chunks, ID: mt.ID, SentAt: mt.SentAt,
				})
				mem = &g.rec.Members[len(g.rec.Members)-1]
			}
			mem.Del = true
			changed = true
			if mv.q.retained(mt.SentAt, now) {
				mv.taken = append(mv.taken, taken{in: incoming{meta: mv.restart(mt), body: bodies[pos-cur.rec.Start]}, to: to})
			}
		}
		if changed {
			for _, m := range g.pass() {
				mv.t.deleteWithChunks(manifestKey(mv.q.Queue.ID, g.gk, m.Start), m.Chunks)
			}
			g.settle(now, timeZero)
			mv.t.set(g.key, g.fields(mv.q.Queue.ID, now))
		}
	}
	return nil
}
