package pgstore

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/stores"
)

// A queueOp is what a queue's clients ask of it that one batch serves: a
// send, a delete or a fast claim. All three kinds combine into one
// transaction per queue (runQueueBatch).
type queueOp struct {
	send  *queueSend                  // a send, or
	del   *stores.MessageDeleteParams // a delete, or
	claim fastClaimReq                // a claim (after a send: its hand-off)
}

// queueSend is a send and its messages' attributes as stored, encoded
// before it joins a batch.
type queueSend struct {
	p    *stores.MessageSendParams
	enc  []encodedAttrs
	fifo bool
}

type queueRes struct {
	send  *stores.MessageSendResult
	del   *stores.MessageDeleteResult
	claim *stores.MessageClaimResult
	err   error
}

// inQueueBatch runs op in a batch with the other sends, deletes and fast
// claims of its queue incarnation and clock.
func (s *Store) inQueueBatch(ctx context.Context, name, id string, now time.Time, op queueOp) (queueRes, error) {
	var size int // messages sent, receipts, and messages asked for
	switch {
	case op.send != nil:
		size = len(op.send.p.Messages)
	case op.del != nil:
		size = len(op.del.Receipts)
	}
	if op.claim.p != nil {
		size += max(op.claim.p.Max, 1)
	}
	res, err := s.queueOps.do(ctx, combineKey(name, id, now), op, size)
	if err == nil {
		err = res.err
	}
	return res, err
}

// runQueueBatch runs the sends, deletes and fast claims of one queue
// incarnation and clock as one pgx.Batch, which PostgreSQL runs in order as
// one implicit transaction: first the sends (batchSends), then the
// deletes' receipts in one statement, then each claim's own statement,
// which sees what the sends stored and the deletes freed (READ COMMITTED:
// each statement's snapshot holds the transaction's changes before it) and
// what the claims before it took, so no message and no FIFO group goes to
// two callers. One round trip and one commit serve a queue's producers and
// consumers where a send's, a delete's and a claim's transactions served
// them. On a Standard queue the receipts that were not current, if any,
// are judged after the batch, in a transaction of their own
// (deletion.finish).
//
// A Standard send takes no lock but its new rows'. FIFO sends take their
// groups' and dedup keys' send locks first, in key order, waiting for
// them, and hold them to the commit. The delete statement then holds and
// waits for only what a delete of its own would (FIFO group rows in group
// order, then their messages; it only tries the send locks of the groups
// it empties); its claims take group rows without waiting (SKIP LOCKED)
// and then wait, if at all, only for messages of the groups they hold. So
// two batches wait for locks in one order. A message move out of a FIFO
// queue locks messages before their groups, so a claim can be part of a
// cycle with one, in a batch or alone; in a batch it may also hold a group
// its delete freed, from the moment the delete locked it. A move into a
// FIFO queue, or a redriving receive, waits for the destination's send
// locks while it holds the source's groups, so it can close a cycle with
// a batch that holds those send locks and a transaction that holds the
// destination's groups and waits for the source. PostgreSQL breaks such a
// cycle after deadlock_timeout and the batch is retried (s.retry).
func (s *Store) runQueueBatch(ctx context.Context, _ batchKey, ops []queueOp) ([]queueRes, error) {
	out := make([]queueRes, len(ops))
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
	sends := newBatchSends(ops)
	err := s.retry(ctx, func() error {
		b := &pgx.Batch{}
		sends.queue(b)
		if first != nil {
			first.queue(s, b)
		}
		for i, op := range ops {
			if op.claim.p == nil || op.send != nil && slices.Contains(sends.later, i) {
				continue // a hand-off runs after its send, never before it
			}
			sql, args := claimStatement(op.claim)
			b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
				// readClaim's answer that the queue is gone is its
				// caller's alone, and the rest of the batch is still
				// read. (A row it could not scan would fail every call
				// of a batch that committed: a programming error.)
				res, err := readClaim(rows, op.claim, &s.fronts)
				if op.send != nil {
					// A send's hand-off: what it could not claim is not
					// the send's failure.
					if err == nil {
						out[i].claim = res
					}
					return nil
				}
				out[i].claim, out[i].err = res, err
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
	if n := sends.stored(); n > 0 {
		s.changed(n)
	}
	sends.answer(ops, out)
	sends.sendLater(ctx, s, ops, out)
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
	// A receipt left unjudged fails its caller's delete alone.
	var outs [2][]stores.ReceiptOutcome
	var freed [2]int
	var errs [2]error
	var unjudged [2]map[int]bool
	for k, d := range ds {
		switch {
		case d == nil:
		case d == second && secondErr != nil:
			errs[k] = secondErr
		default:
			var left []int
			outs[k], freed[k], left, errs[k] = d.finish(ctx, s)
			if left != nil {
				unjudged[k] = map[int]bool{}
				for _, j := range left {
					unjudged[k][j] = true
				}
			}
		}
	}
	var at [2]int // where each deletion's next caller's receipts start
	for i, op := range ops {
		if op.del == nil {
			continue
		}
		k := keepIndex(op.del)
		n := len(op.del.Receipts)
		from := at[k]
		at[k] += n
		if errs[k] != nil && (unjudged[k] == nil || anyIn(unjudged[k], from, from+n)) {
			out[i].err = errs[k]
			continue
		}
		out[i].del = &stores.MessageDeleteResult{Outcomes: outs[k][from : from+n : from+n], Freed: freed[k]}
		freed[k] = 0
	}
	return out, nil
}

// anyIn says whether set holds an index in [from, to).
func anyIn(set map[int]bool, from, to int) bool {
	for j := from; j < to; j++ {
		if set[j] {
			return true
		}
	}
	return false
}

func keepIndex(p *stores.MessageDeleteParams) int {
	if p.KeepExpired {
		return 1
	}
	return 0
}

// batchSends is what a batch's sends run in it, first: the messages of all
// of them in one statement (Standard), or in one transaction's send-lock
// and store statements (FIFO, fifoSend), in the batch's order. A FIFO send
// with another dedup window than the batch's first (the service gives
// every send one) is sent after the batch, in a transaction of its own.
type batchSends struct {
	in    []int // ops' indexes of the sends in the batch
	later []int // and of those sent after it
	// Standard: sendStandardSQL's arguments and its row count.
	args  []any
	count int64
	fifo  *fifoSend
}

func newBatchSends(ops []queueOp) *batchSends {
	bs := &batchSends{}
	var all *stores.MessageSendParams
	var enc []encodedAttrs
	for i, op := range ops {
		if op.send == nil {
			continue
		}
		if all == nil {
			p := *op.send.p
			p.Messages = nil
			all = &p
		} else if op.send.fifo && op.send.p.DedupWindow != all.DedupWindow {
			bs.later = append(bs.later, i)
			continue
		}
		bs.in = append(bs.in, i)
		all.Messages = append(all.Messages, op.send.p.Messages...)
		enc = append(enc, op.send.enc...)
	}
	switch {
	case all == nil:
	case ops[bs.in[0]].send.fifo:
		bs.fifo = newFIFOSend(all, enc)
	default:
		sent := make([]int, len(all.Messages))
		for i := range sent {
			sent[i] = i
		}
		bs.args = append([]any{all.QueueName, all.QueueID, nowArg(all.Now)}, messageArrays(all, enc, sent)...)
	}
	return bs
}

func (bs *batchSends) queue(b *pgx.Batch) {
	switch {
	case bs.fifo != nil:
		bs.fifo.queue(b)
	case bs.args != nil:
		b.Queue(sendStandardSQL, bs.args...).Exec(func(tag pgconn.CommandTag) error {
			bs.count = tag.RowsAffected()
			return nil
		})
	}
}

// stored is how many messages the batch stored.
func (bs *batchSends) stored() int {
	if bs.fifo != nil {
		return bs.fifo.stored
	}
	return int(bs.count)
}

// answer gives each send in the committed batch its messages' results.
// sendStandardSQL stores every message of the batch or, when the queue
// incarnation is gone, none; sendFIFOSQL answers for each message.
func (bs *batchSends) answer(ops []queueOp, out []queueRes) {
	if len(bs.in) == 0 {
		return
	}
	var all *stores.MessageSendResult
	var err error
	if bs.fifo != nil {
		all, err = bs.fifo.result()
	} else if bs.count == 0 {
		err = stores.ErrQueueNotFound
	}
	off := 0
	for _, i := range bs.in {
		p := ops[i].send.p
		n := len(p.Messages)
		switch {
		case err != nil:
			out[i].err = err
		case all != nil:
			out[i].send = &stores.MessageSendResult{Results: all.Results[off : off+n : off+n]}
		default:
			res := &stores.MessageSendResult{Results: make([]stores.SendResult, n)}
			for k := range p.Messages {
				res.Results[k].MessageID = p.Messages[k].ID
			}
			out[i].send = res
		}
		off += n
	}
}

// sendLater sends, each in a transaction of its own, the FIFO sends that
// did not go in the batch.
func (bs *batchSends) sendLater(ctx context.Context, s *Store, ops []queueOp, out []queueRes) {
	for _, i := range bs.later {
		out[i].send, out[i].err = s.sendFIFO(ctx, ops[i].send.p, ops[i].send.enc)
	}
}
