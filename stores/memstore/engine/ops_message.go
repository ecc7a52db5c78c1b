package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

func (e *Engine) MessageSend(ctx context.Context, p *stores.MessageSendParams) (*stores.MessageSendResult, error) {
	var res *stores.MessageSendResult
	err := e.run(ctx, p.Now, func(t *tx) error {
		q, err := t.queue(p.QueueName, p.QueueID)
		if err != nil {
			return err
		}
		res = &stores.MessageSendResult{Results: make([]stores.SendResult, len(p.Messages))}
		for i := range p.Messages {
			nm := &p.Messages[i]
			dedup := q.fifo && nm.DedupID != ""
			if dedup {
				if d := q.dedup[dedupKey(nm.DedupScope, nm.DedupID)]; d != nil && rules.Duplicate(d.rec.CreatedAt, p.DedupWindow, t.now) {
					res.Results[i] = stores.SendResult{MessageID: d.rec.MessageID, SequenceNumber: d.rec.SequenceNumber, Duplicate: true}
					continue
				}
			}
			seq := t.nextSeq(q)
			rec := MessageRecord{
				Queue:     q.name,
				Seq:       seq,
				VisibleAt: t.now.Add(max(nm.Delay, 0)),
				Message: stores.StoredMessage{
					ID:                     nm.ID,
					Body:                   nm.Body,
					Attributes:             copyAttrs(nm.Attributes),
					SystemAttributes:       copyAttrs(nm.SystemAttributes),
					MD5OfBody:              nm.MD5OfBody,
					MD5OfMessageAttributes: nm.MD5OfMessageAttributes,
					MD5OfSystemAttributes:  nm.MD5OfSystemAttributes,
					SenderID:               nm.SenderID,
					GroupID:                nm.GroupID,
					DedupID:                nm.DedupID,
					SentAt:                 t.now,
				},
			}
			if q.fifo {
				rec.Message.SequenceNumber = formatSeq(seq)
			}
			if old := q.msgs[nm.ID]; old != nil {
				t.deleteMessage(q, old) // the service's ids are unique; never keep two
			}
			t.insertMessage(q, rec)
			if dedup && p.DedupWindow > 0 {
				t.putDedup(q, &DedupRecord{
					Queue: q.name, Scope: nm.DedupScope, DedupID: nm.DedupID,
					MessageID: nm.ID, SequenceNumber: rec.Message.SequenceNumber,
					CreatedAt: t.now, ExpiresAt: t.now.Add(p.DedupWindow),
				})
			}
			res.Results[i] = stores.SendResult{MessageID: nm.ID, SequenceNumber: rec.Message.SequenceNumber}
		}
		if p.HandOff != nil {
			res.HandedOff = t.claim(q, p.HandOff)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	var res *stores.MessageClaimResult
	err := e.run(ctx, p.Now, func(t *tx) error {
		q, err := t.queue(p.QueueName, p.QueueID)
		if err != nil {
			return err
		}
		res = t.claim(q, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// claim is p's claim of messages of q, in t.
func (t *tx) claim(q *queue, p *stores.MessageClaimParams) *stores.MessageClaimResult {
	vt := max(p.VisibilityTimeout, 0)
	var got []*msg
	redriven := 0
	token := p.Token
	if replay := t.replay(q, p); replay != nil {
		a := *q.attempts[p.AttemptID].rec
		got, token = replay, a.Token
		for _, m := range got {
			t.updateDelivery(q, m, func(d *DeliveryRecord) { d.VisibleAt = t.now.Add(vt) })
		}
		a.Until = t.now.Add(vt) // where the replay left them
		t.putAttempt(q, &a)
	} else {
		claim := func(m *msg) {
			t.updateDelivery(q, m, func(d *DeliveryRecord) {
				d.ReceiveCount++
				if d.FirstReceivedAt.IsZero() {
					d.FirstReceivedAt = t.now
				}
				d.VisibleAt = t.now.Add(vt)
				d.Token = p.Token
			})
		}
		if q.fifo {
			got, redriven = t.claimFIFO(q, p, claim)
		} else {
			got, redriven = t.claimStandard(q, p, claim)
		}
		if q.fifo && p.AttemptID != "" && len(got) > 0 && p.AttemptWindow > 0 {
			ids := make([]string, len(got))
			for i, m := range got {
				ids[i] = m.rec.Message.ID
			}
			t.putAttempt(q, &AttemptRecord{
				Queue: q.name, AttemptID: p.AttemptID, Token: p.Token, MessageIDs: ids,
				CreatedAt: t.now, ExpiresAt: t.now.Add(p.AttemptWindow), Until: t.now.Add(vt),
			})
		}
	}
	res := &stores.MessageClaimResult{NextChange: q.nextChange(), Redriven: redriven}
	for _, m := range got {
		res.Messages = append(res.Messages, stores.ClaimedMessage{StoredMessage: copyMessage(&m.rec.Message), Token: token})
	}
	return res
}

// replay returns the messages of an earlier claim with the same attempt id
// when that claim is within the window and every message it returned is
// still in flight under its token; nil otherwise.
func (t *tx) replay(q *queue, p *stores.MessageClaimParams) []*msg {
	if !q.fifo || p.AttemptID == "" {
		return nil
	}
	a := q.attempts[p.AttemptID]
	if a == nil {
		return nil
	}
	got := make([]*msg, len(a.rec.MessageIDs))
	ds := make([]rules.Delivery, len(a.rec.MessageIDs))
	for i, id := range a.rec.MessageIDs {
		got[i] = q.msgs[id]
		ds[i] = delivery(got[i])
	}
	if !rules.AttemptReplays(a.rec.CreatedAt, p.AttemptWindow, a.rec.Token, rules.LeftAll(len(ds), a.rec.Until), ds, t.now) {
		return nil
	}
	return got
}

// claimStandard claims visible messages, oldest first. It returns them and
// how many it redrove.
func (t *tx) claimStandard(q *queue, p *stores.MessageClaimParams, claim func(*msg)) (got []*msg, redriven int) {
	for len(got) < p.Max && q.vSeq.Len() > 0 {
		m := q.vSeq.Top()
		q.unplace(m) // out of the partitions until the end, so it is seen once
		if t.redrive(q, m, p.Redrive) {
			redriven++
			continue
		}
		claim(m)
		got = append(got, m)
	}
	for _, m := range got {
		q.place(m)
	}
	return got, redriven
}

// claimFIFO claims, from groups taken in the order of lessGroup, the
// contiguous run of visible messages from each group's head, stopping at the
// first message that is in flight or delayed. It returns them and how many
// it redrove.
func (t *tx) claimFIFO(q *queue, p *stores.MessageClaimParams, claim func(*msg)) (got []*msg, redriven int) {
	var busy []*group
	for len(got) < p.Max && q.ready.Len() > 0 {
		g := q.ready.Top()
		g.busy = true // not ready again within this claim
		q.refresh(g)
		busy = append(busy, g)
		for m := g.head; m != nil && len(got) < p.Max && m.inV; {
			next := m.next
			q.unplace(m)
			if t.redrive(q, m, p.Redrive) {
				redriven++
			} else {
				claim(m)
				got = append(got, m)
			}
			m = next
		}
	}
	for _, m := range got {
		q.place(m)
	}
	for _, g := range busy {
		g.busy = false
		if q.groups[g.id] == g {
			q.refresh(g)
		}
	}
	return got, redriven
}

// redrive moves m to the dead-letter queue if the redrive rule says so; it
// reports whether it did.
func (t *tx) redrive(src *queue, m *msg, r *stores.Redrive) bool {
	dlq := t.e.queues[rules.RedriveTarget(r, src.name)]
	if !rules.Redrives(r, src.name, dlq != nil, m.rec.Message.ReceiveCount) {
		return false
	}
	t.advance(dlq)
	t.moveMessage(src, m, dlq, func(rec *MessageRecord) {
		rec.Message.DeadLetterSource = src.name
		rec.Message.DedupID, rec.Message.SentAt = rules.DeadLettered(dlq.fifo, rec.Message.ID, rec.Message.DedupID, rec.Message.SentAt, t.now)
	})
	return true
}

// moveMessage deletes m from src and stores it in dst as a visible message
// with a new sequence number; adjust changes what else differs.
func (t *tx) moveMessage(src *queue, m *msg, dst *queue, adjust func(*MessageRecord)) {
	rec := m.rec
	t.deleteMessage(src, m)
	rec.Queue = dst.name
	rec.Seq = t.nextSeq(dst)
	rec.VisibleAt = t.now
	rec.Token = ""
	rec.Message.SequenceNumber = ""
	if dst.fifo {
		rec.Message.SequenceNumber = formatSeq(rec.Seq)
	}
	adjust(&rec)
	if old := dst.msgs[rec.Message.ID]; old != nil {
		t.deleteMessage(dst, old)
	}
	t.insertMessage(dst, rec)
}

// delivery is what the receipt rules know of m (nil: no such message).
// Messages past retention are gone already: tx.queue advanced the queue.
func delivery(m *msg) rules.Delivery {
	if m == nil {
		return rules.Delivery{}
	}
	return rules.Delivery{Found: true, Token: m.rec.Token, VisibleAt: m.rec.VisibleAt}
}

func (e *Engine) MessageDelete(ctx context.Context, p *stores.MessageDeleteParams) (*stores.MessageDeleteResult, error) {
	res := &stores.MessageDeleteResult{}
	err := e.run(ctx, p.Now, func(t *tx) error {
		q, err := t.queue(p.QueueName, p.QueueID)
		if err != nil {
			return err
		}
		res.Outcomes = make([]stores.ReceiptOutcome, len(p.Receipts))
		var groups []string // of the deleted FIFO messages
		for i, r := range p.Receipts {
			m := q.msgs[r.MessageID]
			out := rules.JudgeReceipt(delivery(m), r.Token, t.now)
			res.Outcomes[i] = out
			if rules.DeleteApplies(out, p.KeepExpired) {
				if q.fifo && !slices.Contains(groups, m.rec.Message.GroupID) {
					groups = append(groups, m.rec.Message.GroupID)
				}
				t.deleteMessage(q, m)
			}
		}
		for _, id := range groups {
			if g := q.groups[id]; g != nil && g.ready() {
				res.Freed++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) MessageChangeVisibility(ctx context.Context, p *stores.MessageChangeVisibilityParams) (*stores.MessageChangeVisibilityResult, error) {
	var res *stores.MessageChangeVisibilityResult
	err := e.run(ctx, p.Now, func(t *tx) error {
		q, err := t.queue(p.QueueName, p.QueueID)
		if err != nil {
			return err
		}
		m := q.msgs[p.MessageID]
		res = &stores.MessageChangeVisibilityResult{Outcome: rules.JudgeReceipt(delivery(m), p.Token, t.now)}
		if !rules.VisibilityChangeApplies(res.Outcome, p.ApplyExpired) {
			return nil
		}
		until := t.now.Add(max(p.Timeout, 0))
		if rules.VisibilityTooLong(m.rec.Message.FirstReceivedAt, p.ReceivedAt, p.MaxSinceReceive, until) {
			res.TooLong = true
			return nil
		}
		res.Earlier = until.Before(m.rec.VisibleAt)
		t.updateDelivery(q, m, func(d *DeliveryRecord) { d.VisibleAt = until })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) MessageMove(ctx context.Context, p *stores.MessageMoveParams) (*stores.MessageMoveResult, error) {
	if p.NewID == nil {
		return nil, errors.New("engine: MessageMove needs NewID")
	}
	var res *stores.MessageMoveResult
	err := e.run(ctx, p.Now, func(t *tx) error {
		var task *TaskRecord
		if p.Step != nil {
			var err error
			if task, err = t.stepTask(p.Step); err != nil {
				return err
			}
		}
		src, err := t.queue(p.FromName, p.FromID)
		if err != nil {
			return err
		}
		var dst *queue
		if p.ToName != "" {
			if dst = e.queues[p.ToName]; dst == nil {
				return stores.ErrQueueNotFound
			}
			if dst == src {
				return errors.New("engine: MessageMove to the source queue")
			}
			t.advance(dst)
		}
		res = &stores.MessageMoveResult{MovedTo: map[string]int{}}
		var failed, held []*msg
		for res.Moved < p.Max && src.vSeq.Len() > 0 {
			m := src.vSeq.Top()
			if m.prev != nil {
				// An earlier message of its FIFO group is still here (in
				// flight, or it could not move): it stays, as a receive would
				// leave it.
				src.unplace(m)
				held = append(held, m)
				continue
			}
			to := dst
			if to == nil {
				to = e.queues[m.rec.Message.DeadLetterSource]
				if to == src {
					to = nil
				}
				if to != nil {
					t.advance(to)
				}
			}
			if to == nil {
				src.unplace(m) // stays; out of the way until the end
				failed = append(failed, m)
				continue
			}
			t.moveMessage(src, m, to, func(r *MessageRecord) {
				r.Message.ID = p.NewID()
				r.Message.SentAt = t.now
				r.Message.ReceiveCount = 0
				r.Message.FirstReceivedAt = time.Time{}
				r.Message.DeadLetterSource = ""
			})
			res.Moved++
			res.MovedTo[to.name]++
		}
		for _, m := range append(failed, held...) {
			src.place(m)
		}
		res.Failed = len(failed)
		res.Exhausted = src.vSeq.Len() == len(held) // what is left waits for its group
		if task != nil {
			res.Task = t.countStep(task, p.Step, res.Moved)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
