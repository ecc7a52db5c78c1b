package orderedbatch

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/rules"
)

// target is the message a receipt names, as a transaction reads it.
type target struct {
	// FIFO: the group and position (the locator); Standard: the document.
	g   *group
	pos int64
	std *stdRec
	key docstore.Key
}

// locate reads the documents the receipts name, in one round: the groups
// (FIFO, by locator) or the messages (Standard, by MessageId). A locator
// that does not parse finds nothing.
func (t *txn) locate(q *queueRec, rs []stores.Receipt) ([]*target, error) {
	out := make([]*target, len(rs))
	var keys []docstore.Key
	idx := map[docstore.Key]int{}
	for i, r := range rs {
		var k docstore.Key
		if q.Queue.FIFO {
			gk, pos, ok := parseLocator(r.Locator)
			if !ok {
				continue
			}
			k = groupKey(q.Queue.ID, gk)
			out[i] = &target{key: k, pos: pos}
		} else {
			if !messageIDKeyable(r.MessageID) {
				continue // not an id the service makes: no such message
			}
			k = standardKey(q.Queue.ID, r.MessageID)
			out[i] = &target{key: k}
		}
		if _, ok := idx[k]; !ok {
			idx[k] = len(keys)
			keys = append(keys, k)
		}
	}
	docs, err := t.get(keys...)
	if err != nil {
		return nil, err
	}
	groups := map[docstore.Key]*group{}
	for _, tg := range out {
		if tg == nil {
			continue
		}
		d := docs[idx[tg.key]]
		if q.Queue.FIFO {
			g := groups[tg.key]
			if g == nil {
				if g, err = loadGroup(d, tg.key, tg.key.ID[len(q.Queue.ID)+1:], q); err != nil {
					return nil, err
				}
				groups[tg.key] = g
			}
			tg.g = g
			continue
		}
		if d != nil && fieldInt(d, fGen) > q.Gen {
			return nil, errStaleQueue
		}
		if d != nil && fieldInt(d, fGen) == q.Gen {
			tg.std = &stdRec{}
			if err := decode(d, tg.std); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// messageIDKeyable: the service's MessageIds are UUIDs; an id from a
// receipt handle that is not made of their characters names no message
// (and never becomes a key the backend refuses).
func messageIDKeyable(id string) bool {
	if id == "" || len(id) > 100 {
		return false
	}
	for _, c := range []byte(id) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

// delivery is what the receipt rules know of the target of a receipt for
// message id: a FIFO position's member (nil when never received) or a
// Standard message.
func (tg *target) delivery(q *queueRec, id string, t *txn) (rules.Delivery, *member) {
	if tg == nil {
		return rules.Delivery{}, nil
	}
	if tg.std != nil {
		if tg.std.Meta.ID != id || !q.retained(tg.std.Meta.SentAt, t.now) {
			return rules.Delivery{}, nil
		}
		return rules.Delivery{Found: true, Token: tg.std.Token, VisibleAt: tg.std.Vis}, nil
	}
	if tg.g == nil || !tg.g.seen || tg.pos < tg.g.rec.Head || tg.pos >= tg.g.rec.Tail {
		return rules.Delivery{}, nil
	}
	m := tg.g.member(tg.pos)
	if m == nil {
		// Not received since it was sent: the receipt is of no delivery.
		return rules.Delivery{Found: true}, nil
	}
	if m.Del || m.ID != id || !q.retained(m.SentAt, t.now) {
		return rules.Delivery{}, nil
	}
	return rules.Delivery{Found: true, Token: m.Token, VisibleAt: m.Vis}, m
}

// receiptGroups are the group records the locators name, for latches.
func receiptGroups(queueID string, rs []stores.Receipt) []string {
	var out []string
	for _, r := range rs {
		if gk, _, ok := parseLocator(r.Locator); ok {
			out = append(out, groupKey(queueID, gk).ID)
		}
	}
	return out
}

func (s *Store) MessageDelete(ctx context.Context, p *stores.MessageDeleteParams) (*stores.MessageDeleteResult, error) {
	defer s.latches.lock(receiptGroups(p.QueueID, p.Receipts)).unlock()
	var outs []stores.ReceiptOutcome
	freed := 0
	err := s.runOnQueue(ctx, p.Now, p.QueueName, p.QueueID, func(t *txn, q *queueRec) error {
		tgs, err := t.locate(q, p.Receipts)
		if err != nil {
			return err
		}
		outs = make([]stores.ReceiptOutcome, len(p.Receipts))
		touched := map[*group]bool{}
		// Standard messages deleted so far: each receipt has a copy of its
		// message of its own (FIFO receipts share their group's).
		deleted := map[docstore.Key]bool{}
		for i, r := range p.Receipts {
			if tg := tgs[i]; tg != nil && tg.std != nil && deleted[tg.key] {
				outs[i] = stores.ReceiptGone
				continue
			}
			d, m := tgs[i].delivery(q, r.MessageID, t)
			outs[i] = rules.JudgeReceipt(d, r.Token, t.now)
			if !rules.DeleteApplies(outs[i], p.KeepExpired) {
				continue
			}
			if tg := tgs[i]; tg.std != nil {
				t.deleteWithChunks(tg.key, tg.std.Chunks)
				deleted[tg.key] = true
				continue
			}
			m.Del = true
			touched[tgs[i].g] = true
		}
		var unknown []*group
		known := map[*group]time.Time{}
		for g := range touched {
			for _, m := range g.pass() {
				t.deleteWithChunks(manifestKey(q.Queue.ID, g.gk, m.Start), m.Chunks)
			}
			if len(g.rec.Members) == 0 && !g.empty() {
				if v, ok := g.aheadVis(g.rec.HeadStart); ok {
					known[g] = v
				} else {
					unknown = append(unknown, g)
				}
			}
		}
		// A new head never received ranks from when it became receivable
		// (its manifest's Vis: its send, or its delay's end), as SQS
		// orders groups, not from this delete: remembered by the group, or
		// read from the manifest.
		vis, err := t.manifestVis(q.Queue.ID, unknown)
		if err != nil {
			return err
		}
		for g, v := range known {
			if vis == nil {
				vis = map[*group]time.Time{}
			}
			vis[g] = v
		}
		freed = 0 // the transaction may run again
		for g := range touched {
			g.settle(t.now, vis[g])
			t.set(g.key, g.fields(q.Queue.ID, t.now))
			if !g.empty() && !g.rec.Ready.After(t.now) {
				freed++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &stores.MessageDeleteResult{Outcomes: outs, Freed: freed}, nil
}

func (s *Store) MessageChangeVisibility(ctx context.Context, p *stores.MessageChangeVisibilityParams) (*stores.MessageChangeVisibilityResult, error) {
	defer s.latches.lock(receiptGroups(p.QueueID, []stores.Receipt{{Locator: p.Locator}})).unlock()
	var res *stores.MessageChangeVisibilityResult
	err := s.runOnQueue(ctx, p.Now, p.QueueName, p.QueueID, func(t *txn, q *queueRec) error {
		tgs, err := t.locate(q, []stores.Receipt{{MessageID: p.MessageID, Token: p.Token, Locator: p.Locator}})
		if err != nil {
			return err
		}
		tg := tgs[0]
		d, m := tg.delivery(q, p.MessageID, t)
		res = &stores.MessageChangeVisibilityResult{Outcome: rules.JudgeReceipt(d, p.Token, t.now)}
		if !rules.VisibilityChangeApplies(res.Outcome, p.ApplyExpired) {
			return nil
		}
		until := t.deadline(p.Timeout)
		var first time.Time
		if m != nil {
			first = m.First
		} else {
			first = tg.std.First
		}
		if rules.VisibilityTooLong(first, p.ReceivedAt, p.MaxSinceReceive, until) {
			res.TooLong = true
			return nil
		}
		res.Earlier = until.Before(d.VisibleAt)
		if tg.std != nil {
			tg.std.Vis = until
			t.set(tg.key, stdFields(q, tg.std))
			return nil
		}
		m.Vis = until
		tg.g.settle(t.now, time.Time{})
		t.set(tg.g.key, tg.g.fields(q.Queue.ID, t.now))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
