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
// transaction: first the deletes (their receipts in one statement; two if
// they differ in KeepExpired), then each claim's own statement, which sees
// what the deletes freed (READ COMMITTED: each statement's snapshot holds
// the transaction's changes before it) and what the claims before it took,
// so no message and no FIFO group goes to two callers. One round trip and
// one commit serve a queue's consumers where a delete's and a claim's
// transactions served them.
//
// It adds no way to deadlock. While the deletes run, the transaction holds
// only the locks a delete of its own would, and waits only as one would:
// for group rows, taken in group order, or for message rows. The claims
// after them never wait (SKIP LOCKED), so a transaction that holds what
// its claims took is never waiting.
func (s *Store) consumeCombined(ctx context.Context, _ string, ops []consumerOp) ([]consumerRes, error) {
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
	err := s.retry(ctx, func() error {
		b := &pgx.Batch{}
		for _, d := range ds {
			if d != nil {
				d.queue(s, b)
			}
		}
		for i, op := range ops {
			if op.del != nil {
				continue
			}
			sql, args := claimStatement(op.claim)
			b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
				// A claim's own error (its queue gone) is its caller's
				// alone; the rest of the batch is still read.
				out[i].claim, out[i].err = readClaim(rows, op.claim)
				return nil
			})
		}
		return s.pool.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, err
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
		if d != nil {
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
