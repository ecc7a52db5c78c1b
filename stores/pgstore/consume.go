package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
)

// A consumerOp is what a queue's consumers ask of it: a delete or a fast
// claim. Both kinds combine into one transaction per queue
// (consumeCombined).
type consumerOp struct {
	del   *stores.MessageDeleteParams // a delete, or
	claim fastClaimReq                // a claim
}

type consumerRes struct {
	del   *stores.MessageDeleteResult
	claim *stores.MessageClaimResult
	err   error
}

// consume runs op in a batch with the other deletes and fast claims of its
// queue incarnation and clock.
func (s *Store) consume(ctx context.Context, name, id string, now time.Time, op consumerOp) (consumerRes, error) {
	var size int // receipts, or messages asked for
	if op.del != nil {
		size = len(op.del.Receipts)
	} else {
		size = max(op.claim.p.Max, 1)
	}
	res, err := s.consumers.do(ctx, combineKey(name, id, 0, now), op, size)
	if err == nil {
		err = res.err
	}
	return res, err
}

// consumeCombined runs deletes and fast claims of one queue incarnation and
// clock as one pgx.Batch, which PostgreSQL runs in order as one implicit
// transaction: first the deletes' receipts in one statement, then each
// claim's own statement, which sees what the deletes freed (READ
// COMMITTED: each statement's snapshot holds the transaction's changes
// before it) and what the claims before it took, so no message and no FIFO
// group goes to two callers. One round trip and one commit serve a queue's
// consumers where a delete's and a claim's transactions served them. On a
// Standard queue the receipts that were not current, if any, are judged
// after the batch, in a transaction of their own (deletion.finish).
//
// Its delete statement holds and waits for only what a delete of its own
// would (FIFO group rows in group order, then their messages); its claims
// take group rows without waiting (SKIP LOCKED) and then wait, if at all,
// only for messages of the groups they hold. A message move out of a FIFO
// queue locks messages before their groups, so a claim can be part of a
// cycle with one, in a batch or alone; in a batch it may also hold a group
// its delete freed, from the moment the delete locked it. PostgreSQL
// breaks such a cycle after deadlock_timeout and the batch is retried
// (s.retry).
func (s *Store) consumeCombined(ctx context.Context, _ batchKey, ops []consumerOp) ([]consumerRes, error) {
	out := make([]consumerRes, len(ops))
	// One deletion per KeepExpired value (the service gives a queue one).
	var dels [2]*stores.MessageDeleteParams
	for _, op := range ops {
		if op.del == nil {
			continue
		}
		k := keepIndex(op.del)
		if dels[k] == nil {
			all := *op.del
			all.Receipts = nil
			dels[k] = &all
		}
		dels[k].Receipts = append(dels[k].Receipts, op.del.Receipts...)
	}
	var ds [2]*deletion
	for k, p := range dels {
		if p != nil {
			ds[k] = s.newDeletion(p)
		}
	}
	// One delete statement in the batch: two, each locking its groups in
	// order, would not lock them in order together. A second (which the
	// service never makes: it gives a queue one KeepExpired) runs after.
	first, second := ds[0], ds[1]
	if first == nil {
		first, second = second, nil
	}
	err := s.retry(ctx, func() error {
		b := &pgx.Batch{}
		if first != nil {
			first.queue(s, b)
		}
		for i, op := range ops {
			if op.del != nil {
				continue
			}
			sql, args := claimStatement(op.claim)
			b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
				// readClaim's answer that the queue is gone is its
				// caller's alone, and the rest of the batch is still
				// read. (A row it could not scan would fail every call
				// of a batch that committed: a programming error.)
				out[i].claim, out[i].err = readClaim(rows, op.claim)
				return nil
			})
		}
		return s.pool.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, err
	}
	var secondErr error // the second delete's callers' alone: the batch committed
	if second != nil {
		secondErr = s.retry(ctx, func() error {
			b := &pgx.Batch{}
			second.queue(s, b)
			return s.pool.SendBatch(ctx, b).Close()
		})
	}
	claimed := 0
	for _, r := range out {
		if r.claim != nil {
			claimed += len(r.claim.Messages)
		}
	}
	if claimed > 0 {
		s.changed(claimed)
	}
	// Each delete takes its receipts' share of its deletion's outcomes, in
	// order; the groups freed are the first's to report (each wakes a long
	// poll once).
	var outs [2][]stores.ReceiptOutcome
	var freed [2]int
	var errs [2]error
	for k, d := range ds {
		switch {
		case d == nil:
		case d == second && secondErr != nil:
			errs[k] = secondErr
		default:
			outs[k], freed[k], errs[k] = d.finish(ctx, s)
		}
	}
	for i, op := range ops {
		if op.del == nil {
			continue
		}
		k := keepIndex(op.del)
		if errs[k] != nil {
			out[i].err = errs[k]
			continue
		}
		n := len(op.del.Receipts)
		out[i].del = &stores.MessageDeleteResult{Outcomes: outs[k][:n:n], Freed: freed[k]}
		outs[k], freed[k] = outs[k][n:], 0
	}
	return out, nil
}

func keepIndex(p *stores.MessageDeleteParams) int {
	if p.KeepExpired {
		return 1
	}
	return 0
}
