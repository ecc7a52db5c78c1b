package pgstore

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

// A claim is one transaction:
//
//  1. a few messages past retention are swept (SKIP LOCKED: never waits);
//  2. FIFO with an AttemptID: a replay, if the earlier claim is still whole;
//  3. otherwise the claim proper (standard or FIFO, below), moving
//     over-received candidates to the dead-letter queue instead of returning
//     them, and trying again for what is left of Max;
//  4. NextChange and Contended, when the claim got nothing: Standard from
//     the queue's messages, FIFO from the groups' avail_at (a group's head
//     is the next to become receivable) and their heads.

// claimRowCols is what both claim statements return per row: whether the
// candidate is to be redriven, the message, and its order in the result.
const claimRowCols = `redrive, ` + msgCols + `, ord1, ord2`

// claimSet is what a claim writes to a message it hands out (the update
// of sluice_fifo_claim, in the migrations, is the same): one more receive,
// the first receive's time if it is the first, invisible until the
// deadline, and the delivery's token ($6). now and until are SQL
// expressions.
func claimSet(now, until string) string {
	return `receive_count = m.receive_count + 1,
			first_received_at = coalesce(m.first_received_at, ` + now + `),
			visible_at = ` + until + `, token = $6`
}

// standardClaim is the Standard claim, as the statements' first common
// table expressions (cand, front, upd) with the claim's clock (now),
// retention cutoff (after) and visibility deadline (until) given as SQL
// expressions, and its other inputs as parameters: $1 the queue's id, $4
// how many, $6 the delivery's token, $7 the receive count from which a
// candidate is redriven instead, $8 the message ids this claim took
// already, and when hinted $9, the seq it starts after (the front hint,
// fronthint.go; otherwise it starts at the front). Each is a statement of
// its own: a generic plan made while the table is tiny walks the index
// for the plain one, but sorts a bitmap scan of the whole range for one
// with a second lower bound on seq, whose selectivity it cannot know; the
// hinted one runs only beside thousands of messages, so its plan is made
// on a table of that size. It locks up to $4 visible messages, oldest (by seq) first,
// skipping rows other transactions hold, walking (queue_id, seq) past the
// messages in flight or delayed before them, and claims those received
// fewer than $7 times. front counts the messages it passed and finds when
// the first of them in flight or delayed becomes visible (for the front
// hint); every row it returns carries the two as its ord1 (which orders
// nothing: it is the same on every row of the statement) and front_next.
// A row that another claimer updated and committed after this
// statement's snapshot is re-checked by the row lock (READ COMMITTED
// follows the update chain and re-evaluates visible_at <= now), so it is
// never handed out twice. If it is still visible, this claim skips it: the
// update joins by ctid and cannot see the new version (see migration
// 0003); the next claim takes it.
func standardClaim(now, after, until string, hinted bool) string {
	start := ""
	if hinted {
		start = " AND seq > $9::bigint"
	}
	return `cand AS (
		SELECT ctid, message_id, seq, visible_at, receive_count FROM messages
		WHERE queue_id = $1 AND seq > 0` + start + ` AND visible_at <= ` + now + ` AND sent_at > ` + after + `
		  AND message_id <> ALL($8::text[])
		ORDER BY seq
		LIMIT $4
		FOR UPDATE SKIP LOCKED
	), front AS (
		SELECT count(*)::float8 AS passed, min(visible_at) FILTER (WHERE visible_at > ` + now + `) AS next
		FROM messages
		WHERE queue_id = $1 AND seq > 0` + start + ` AND seq < (SELECT min(seq) FROM cand)
	), upd AS (
		UPDATE messages m SET ` + claimSet(now, until) + `
		FROM cand
		WHERE m.ctid = cand.ctid AND cand.receive_count < $7
		RETURNING m.*, (SELECT passed FROM front) AS ord1, m.seq AS ord2, (SELECT next FROM front) AS front_next
	)`
}

// standardRedriveSQL is the rows of a Standard claim's candidates to be
// redriven, after its rows claimed (upd).
const standardRedriveSQL = `SELECT true, m.message_id, m.seq, m.group_id, m.dedup_id, m.body, m.attributes, m.system_attributes,
		m.md5_body, m.md5_attributes, m.md5_system, m.sender_id, m.sent_at, m.receive_count,
		m.first_received_at, m.dead_letter_source, (SELECT passed FROM front), m.seq, (SELECT next FROM front)
	FROM cand JOIN messages m ON m.ctid = cand.ctid
	WHERE cand.receive_count >= $7`

// standardClaimSQL is the general path's Standard claim ($2 now, $3 the
// retention cutoff, $5 the visibility deadline), from the front or, when
// hinted, after $9.
func standardClaimSQL(hinted bool) string {
	return `WITH ` + standardClaim("$2", "$3", "$5", hinted) + `
	SELECT false AS redrive, ` + msgCols + `, ord1, ord2, front_next FROM upd
	UNION ALL
	` + standardRedriveSQL
}

var standardClaimSQLs = [2]string{standardClaimSQL(false), standardClaimSQL(true)}

// fifoClaimSQL claims from a FIFO queue's groups in the order their heads
// became receivable (avail_at, then head_seq), one group lock at a time:
// see sluice_fifo_claim in the migrations (the latest, 0011).
const fifoClaimSQL = `SELECT * FROM sluice_fifo_claim($1, $2, $3, $4, $5, $6, $7, $8::text[], $9)`

type claimRow struct {
	msg        *stores.StoredMessage
	redrive    bool
	ord1, ord2 float64
	frontNext  *time.Time // Standard: when the first message the claim passed in flight or delayed becomes visible
}

// sortClaimRows puts a claim's rows in the order a receive returns them:
// by ord1 (a FIFO claim's groups in the order it took them; 0 for
// Standard), then by ord2 (the sequence number).
func sortClaimRows(rows []claimRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].ord1 != rows[j].ord1 {
			return rows[i].ord1 < rows[j].ord1
		}
		return rows[i].ord2 < rows[j].ord2
	})
}

func (t *txn) claimRows(ctx context.Context, fifo bool, sql string, args ...any) ([]claimRow, error) {
	rows, err := t.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []claimRow
	for rows.Next() {
		var r claimRow
		var ord2 int64
		dest := []any{&r.ord1, &ord2}
		if !fifo {
			dest = append(dest, &r.frontNext)
		}
		m, targets, finish := scanMessage(fifo, dest...)
		if err := rows.Scan(append([]any{&r.redrive}, targets...)...); err != nil {
			return nil, err
		}
		if err := finish(); err != nil {
			return nil, err
		}
		r.msg, r.ord2 = m, float64(ord2)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sortClaimRows(out)
	return out, nil
}

// The one-statement receives are plain SQL, without a PL/pgSQL wrapper's
// function entry and RETURN QUERY layer.
// Their parameters: $1 the queue's id, $2 now (NULL: the database clock),
// $3 its name, $4 how many, $5 the visibility timeout in microseconds, $6
// the delivery's token. Their rows: as claimRowCols, then NextChange and
// whether a message is receivable now, which only the row of a receive that
// got nothing (its message id empty) carries; a Standard claim's message rows
// carry its front_next in the NextChange column. No row at all: the queue is
// gone.

// queueNowSQL is the first table expression of the one-statement receives
// and of the plain Standard delete: the queue's row ($1 id, $3 name), the
// operation's clock ($2, NULL: the database's) and its retention cutoff
// (after: what was sent at or before it is past retention, as
// rules.Retained says). The database's clock is the statement's start
// (statement_timestamp(): PostgreSQL sets it as it takes up each statement
// of a pipeline), not the transaction's (now()): a receive combined with
// other operations runs after them in their transaction, after whatever
// locks they waited for, and a visibility timeout counted from the
// transaction's start would end that much early, handing the message to a
// second receiver while the first still holds it. It is stable within the
// statement, as now() is, so the walks may use it in index conditions.
const queueNowSQL = `q AS (
		SELECT id, fifo, coalesce($2::timestamptz, statement_timestamp()) AS now,
			CASE WHEN retention_us > 0 THEN coalesce($2::timestamptz, statement_timestamp()) - retention_us * interval '1 microsecond'
				ELSE '-infinity' END AS after
		FROM queues WHERE name = $3 AND id = $1
	)`

// receiveUntilSQL is the claim's visibility deadline.
const receiveUntilSQL = `(SELECT now FROM q) + $5::bigint * interval '1 microsecond'`

// nothingReceivedSQL is their last branch: when the claim (its rows in
// claimed) got nothing, one row that says when to look again, from next
// (sluice_standard_next_from or sluice_fifo_next, called on q): a volatile
// function, so its statement takes a snapshot of its own and sees what
// committed while the claim ran, and called only then (the condition holds
// for the whole statement or not at all). The row carries the statement's
// clock as its sent_at, and ord1 and ord2 as given (for Standard, how many
// messages it read and the last one's seq).
func nothingReceivedSQL(claimed, next, ord1, ord2 string) string {
	return `SELECT false, '', 0::bigint, '', '', '', NULL::bytea, NULL::bytea, '', '', '', '', q.now, 0,
		NULL::timestamptz, '', ` + ord1 + `, ` + ord2 + `, n.r_next, n.r_receivable
	FROM q, ` + next + ` n
	WHERE NOT EXISTS (SELECT 1 FROM ` + claimed + `)`
}

// fifoNothingReceivedSQL is nothingReceivedSQL for the FIFO receives.
func fifoNothingReceivedSQL(claimed string) string {
	return nothingReceivedSQL(claimed, "sluice_fifo_next(q.id, q.now, q.after)", "0::float8", "0::bigint")
}

// fifoReceiveSQL is the one-statement FIFO claim: sluice_fifo_claim, with
// nothing to redrive and none taken before; $7 whether it sweeps first.
var fifoReceiveSQL = `WITH ` + queueNowSQL + `, c AS (
		SELECT c.* FROM q, sluice_fifo_claim(q.id, q.now, q.after, $4, ` + receiveUntilSQL + `, $6,
			2147483647, '{}', $7) c
	)
	SELECT c.*, NULL::timestamptz, false FROM c
	UNION ALL
	` + fifoNothingReceivedSQL("c")

// fifoReceiveOneSQL is the one-statement FIFO claim of a single message
// ($4 is 1) when no sweep is due, without a PL/pgSQL function in the common case:
// it takes the first group by avail_at and head_seq as sluice_fifo_claim's
// loop does (walking fifo_groups_avail, locking as it goes, skipping rows
// other claims hold), claims the group's head if it is visible, and puts
// the group in flight, all in one statement. The group's lock re-checks a
// row changed since the snapshot against avail_at, and every change to a
// group's messages holds that lock, so the run read on the snapshot is the
// group's run (the function reads it afresh after the lock instead). When
// the group it locked yields nothing (its avail_at was early, or no
// message within retention is visible at its front), sluice_fifo_claim
// runs in the same statement and takes that group first (this transaction
// holds its lock): it puts the row right and goes on to the next group.
// The message's update is claimSet; the group's (avail_at to the deadline,
// head_seq kept) is the function's, and the two change together.
var fifoReceiveOneSQL = `WITH ` + queueNowSQL + `, g AS (
		SELECT f.group_id, f.head_seq FROM fifo_groups f
		WHERE f.queue_id = $1 AND f.avail_at < 'infinity' AND f.avail_at <= coalesce($2::timestamptz, statement_timestamp())
		  AND EXISTS (SELECT 1 FROM q)
		ORDER BY f.avail_at, f.head_seq
		LIMIT 1
		FOR NO KEY UPDATE SKIP LOCKED
	), head AS (
		SELECT m.ctid FROM messages m
		WHERE m.queue_id = $1 AND m.group_id = (SELECT group_id FROM g) AND m.group_id > ''
		  AND m.seq >= (SELECT head_seq FROM g) AND m.sent_at > (SELECT after FROM q)
		ORDER BY m.seq
		LIMIT $4::integer
	), upd AS (
		UPDATE messages m SET ` + claimSet("q.now", receiveUntilSQL) + `
		FROM head, q
		WHERE m.ctid = head.ctid AND m.visible_at <= q.now
		RETURNING ` + msgCols + `
	), inflight AS (
		UPDATE fifo_groups f SET avail_at = ` + receiveUntilSQL + `
		WHERE f.queue_id = $1 AND f.group_id = (SELECT group_id FROM g) AND EXISTS (SELECT 1 FROM upd)
	), c AS (
		SELECT c.* FROM q, sluice_fifo_claim(q.id, q.now, q.after, $4, ` + receiveUntilSQL + `, $6,
			2147483647, '{}', false) c
		WHERE EXISTS (SELECT 1 FROM g) AND NOT EXISTS (SELECT 1 FROM upd)
	), got AS (
		SELECT 1 FROM upd UNION ALL SELECT 1 FROM c
	)
	SELECT false, ` + msgCols + `, 1::float8, seq, NULL::timestamptz, false FROM upd
	UNION ALL
	SELECT c.*, NULL::timestamptz, false FROM c
	UNION ALL
	` + fifoNothingReceivedSQL("got")

// standardReceiveSQL is the one-statement Standard claim: standardClaim,
// with nothing to redrive ($7 MaxInt32) and none taken before ($8), from
// the front or, when hinted, after $9.
func standardReceiveSQL(hinted bool) string {
	from := "0"
	if hinted {
		from = "$9::bigint"
	}
	return `WITH ` + queueNowSQL + `, ` +
		standardClaim("(SELECT now FROM q)", "(SELECT after FROM q)", receiveUntilSQL, hinted) + `
	SELECT false, ` + msgCols + `, ord1, ord2, front_next, false FROM upd
	UNION ALL
	` + nothingReceivedSQL("upd", "sluice_standard_next_from(q.id, q.now, q.after, "+from+")",
		"n.r_count::float8", "n.r_last")
}

var standardReceiveSQLs = [2]string{standardReceiveSQL(false), standardReceiveSQL(true)}

// After a claim that got nothing, one more statement says when the next
// message becomes visible (NextChange) and whether one is receivable now:
// sluice_fifo_next (from the groups' avail_at and heads) or
// sluice_standard_next_from (from the messages after the claim's front
// hint, which answers for those up to it). A claim can get nothing while one is: SKIP LOCKED
// passed over candidates that other claims hold (and may let go of), and
// the claim's snapshot predates sends that committed while it ran, whose
// wake-ups went to the claims that took the rest. The receivable check is
// a later statement, so it sees both; the claim then reports Contended and
// its long poll looks again soon instead of sleeping beside a message
// until its repair check. The one-statement receives run it inside their
// statement; the general path in its transaction ($3: the retention
// cutoff, $4: the seq the Standard walk starts after).
const (
	fifoNextSQL     = `SELECT r_next, r_receivable FROM sluice_fifo_next($1, $2, $3)`
	standardNextSQL = `SELECT r_next, r_receivable, r_count, r_last FROM sluice_standard_next_from($1, $2, $3, $4)`
)

// fastClaim is MessageClaim on a queue whose kind is known, without an
// attempt id or a redrive: one statement, which also answers NextChange
// and Contended when it got nothing. Standard claims take it only when no
// sweep is due (their sweep is in Go, in the general path). Concurrent
// fast claims, sends and deletes on one queue share a transaction
// (runQueueBatch).
func (s *Store) fastClaim(ctx context.Context, p *stores.MessageClaimParams, fifo, sweep bool) (*stores.MessageClaimResult, error) {
	var from int64
	if !fifo {
		from = s.fronts.from(p.QueueID, time.Now())
	}
	res, err := s.inQueueBatch(ctx, p.QueueName, p.QueueID, p.Now, queueOp{claim: fastClaimReq{p, fifo, sweep, from}})
	return res.claim, err
}

// fastClaimReq is one fast claim waiting in the combiner; a Standard one
// starts after seq from.
type fastClaimReq struct {
	p           *stores.MessageClaimParams
	fifo, sweep bool
	from        int64
}

// claimStatement is r's one-statement claim and its arguments.
func claimStatement(r fastClaimReq) (string, []any) {
	p := r.p
	args := []any{p.QueueID, nowArg(p.Now), p.QueueName, p.Max, micros(max(p.VisibilityTimeout, 0)), p.Token}
	if r.fifo && p.Max == 1 && !r.sweep {
		return fifoReceiveOneSQL, args
	}
	if r.fifo {
		return fifoReceiveSQL, append(args, r.sweep)
	}
	args = append(args, math.MaxInt32, []string{})
	if r.from > 0 {
		return standardReceiveSQLs[1], append(args, r.from)
	}
	return standardReceiveSQLs[0], args
}

// readClaim reads the rows of r's claim statement and closes them; a
// Standard claim's rows also go to fronts.
func readClaim(rows pgx.Rows, r fastClaimReq, fronts *frontHints) (*stores.MessageClaimResult, error) {
	defer rows.Close()
	res := &stores.MessageClaimResult{}
	var out []claimRow
	answered := false // a row came: the queue is there
	for rows.Next() {
		answered = true
		var c claimRow
		var ord2 int64
		var next *time.Time
		var receivable bool
		m, targets, finish := scanMessage(r.fifo, &c.ord1, &ord2, &next, &receivable)
		if err := rows.Scan(append([]any{&c.redrive}, targets...)...); err != nil {
			return nil, err
		}
		if m.ID == "" { // got nothing: the answers, on the statement's clock (its sent_at)
			res.Contended = receivable
			if r.fifo {
				res.NextChange = deref(next)
			} else {
				res.NextChange = fronts.nothingClaimed(r.p.QueueID, time.Now(), m.SentAt,
					stdEmpty{r.from, int64(c.ord1), ord2, deref(next), receivable})
			}
			continue
		}
		c.frontNext = next
		if err := finish(); err != nil {
			return nil, err
		}
		c.msg, c.ord2 = m, float64(ord2)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !answered {
		return nil, stores.ErrQueueNotFound
	}
	sortClaimRows(out)
	if !r.fifo {
		// The statement's clock is the database's unless the claim gave
		// one; the two are taken to agree (as for NextChange).
		now := time.Now()
		fronts.claimedRows(r.p.QueueID, now, cmp.Or(r.p.Now, now), r.from, out)
	}
	for _, c := range out {
		res.Messages = append(res.Messages, stores.ClaimedMessage{StoredMessage: *c.msg, Token: r.p.Token})
	}
	return res, nil
}

// oneStatementClaim says whether p's claim is one statement (a fast claim,
// or a send's hand-off): no attempt id to replay, no redrive to another
// queue.
func oneStatementClaim(p *stores.MessageClaimParams) bool {
	return p.Max > 0 && p.AttemptID == "" && rules.RedriveTarget(p.Redrive, p.QueueName) == ""
}

func (s *Store) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	sweep := s.sweepDue(sweepKey(p.QueueName, p.QueueID), p.Now)
	if fifo, ok := s.fifoOf(p.QueueID); ok && (fifo || !sweep) && p.QueueID != "" && oneStatementClaim(p) {
		return s.fastClaim(ctx, p, fifo, sweep)
	}
	var res *stores.MessageClaimResult
	err := s.run(ctx, func(t *txn) error {
		res = &stores.MessageClaimResult{}
		q, err := t.queue(ctx, p.QueueName, p.QueueID, p.Now, lockNone)
		if err != nil {
			return err
		}
		if !q.fifo && sweep { // FIFO: in sluice_fifo_claim
			if err := t.sweepExpired(ctx, q, 100); err != nil {
				return err
			}
		}
		vt := max(p.VisibilityTimeout, 0)
		until := t.now.Add(vt)
		after := sentAfter(rules.RetentionCutoff(q.retention, t.now))

		var got []stores.ClaimedMessage
		replayed := false
		if q.fifo && p.AttemptID != "" && p.AttemptWindow > 0 {
			if got, replayed, err = t.replay(ctx, q, p, until); err != nil {
				return err
			}
		}
		if !replayed && p.Max > 0 {
			if got, res.Redriven, err = t.claim(ctx, q, p, until, after, sweep); err != nil {
				return err
			}
			if q.fifo && p.AttemptID != "" && p.AttemptWindow > 0 && len(got) > 0 {
				ids := make([]string, len(got))
				for i, m := range got {
					ids[i] = m.ID
				}
				// visible_until as the claim wrote it, message by message
				// (each round on its statement's clock: queueNowSQL).
				if _, err := t.Exec(ctx, `INSERT INTO receive_attempts (queue_id, attempt_id, token, message_ids, created_at, expires_at, visible_until)
					VALUES ($1, $2, $3, $4, $5, $6, (SELECT array_agg(visible_at ORDER BY array_position($4::text[], message_id)) FROM messages
						WHERE queue_id = $1 AND message_id = ANY($4::text[])))
					ON CONFLICT (queue_id, attempt_id) DO UPDATE SET token = excluded.token,
						message_ids = excluded.message_ids, created_at = excluded.created_at, expires_at = excluded.expires_at,
						visible_until = excluded.visible_until`,
					q.id, p.AttemptID, p.Token, ids, t.now, t.now.Add(p.AttemptWindow)); err != nil {
					return err
				}
			}
		}
		res.Messages = got
		if len(got) > 0 {
			return nil // NextChange only matters to a receive that waits
		}
		var next *time.Time
		if q.fifo {
			if err := t.QueryRow(ctx, fifoNextSQL, q.id, t.now, after).Scan(&next, &res.Contended); err != nil {
				return err
			}
			res.NextChange = deref(next)
			return nil
		}
		e := stdEmpty{from: t.s.fronts.from(q.id, time.Now())}
		if err := t.QueryRow(ctx, standardNextSQL, q.id, t.now, after, e.from).Scan(&next, &e.receivable, &e.count, &e.last); err != nil {
			return err
		}
		e.next, res.Contended = deref(next), e.receivable
		res.NextChange = t.s.fronts.nothingClaimed(q.id, time.Now(), t.now, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// claim hands out up to p.Max messages under a new delivery (p.Token), and
// says how many it moved to the dead-letter queue instead. With sweep, a
// FIFO claim sweeps expired messages first.
func (t *txn) claim(ctx context.Context, q *queueRow, p *stores.MessageClaimParams, until time.Time, after any, sweep bool) (got []stores.ClaimedMessage, redriven int, err error) {
	// The claim statements redrive what was received maxRC times already
	// (rules.Redrives, in SQL): none without a dead-letter queue.
	maxRC := math.MaxInt32
	var dlq *queueRow
	if name := rules.RedriveTarget(p.Redrive, q.name); name != "" {
		d, err := t.queue(ctx, name, "", time.Time{}, lockNone)
		switch {
		case err == nil:
			dlq, maxRC = d, p.Redrive.MaxReceiveCount
		case !errors.Is(err, stores.ErrQueueNotFound):
			return nil, 0, err
		}
	}
	// A FIFO round counts the messages it finds over-received against
	// want, so a round that redrives cuts other groups' runs short, and
	// those groups cannot go on in a later round (their heads are in
	// flight then). So a FIFO round that finds any is undone to a
	// savepoint, the over-received messages are moved, and the round runs
	// again without them.
	undoable := q.fifo && dlq != nil
	swept := !sweep     // an undone round undoes its sweep too
	taken := []string{} // groups (FIFO) or messages (standard) this claim took
	for round := 0; round < 8 && len(got) < p.Max; round++ {
		want := p.Max - len(got)
		var rows []claimRow
		if undoable {
			if _, err := t.Exec(ctx, "SAVEPOINT sluice_round"); err != nil {
				return nil, 0, err
			}
		}
		if q.fifo {
			rows, err = t.claimRows(ctx, true, fifoClaimSQL, q.id, t.now, after, want, until, p.Token, maxRC, taken, !swept)
		} else {
			args := []any{q.id, t.now, after, want, until, p.Token, maxRC, taken}
			sql := standardClaimSQLs[0]
			from := t.s.fronts.from(q.id, time.Now())
			if from > 0 {
				sql, args = standardClaimSQLs[1], append(args, from)
			}
			rows, err = t.claimRows(ctx, false, sql, args...)
			t.s.fronts.claimedRows(q.id, time.Now(), t.now, from, rows)
		}
		if err != nil {
			return nil, 0, err
		}
		var redrive []string
		for _, r := range rows {
			if r.redrive {
				redrive = append(redrive, r.msg.ID)
			}
		}
		if undoable && len(redrive) > 0 {
			if _, err := t.Exec(ctx, "ROLLBACK TO SAVEPOINT sluice_round"); err != nil {
				return nil, 0, err
			}
			// The round's locks went with it: move only what another claim
			// did not take meanwhile.
			if redrive, err = t.stillOverReceived(ctx, q, redrive, maxRC); err != nil {
				return nil, 0, err
			}
			if err := t.moveInto(ctx, q, redrive, dlq, q.name, nil); err != nil {
				return nil, 0, err
			}
			redriven += len(redrive)
			continue // the round again, without them
		}
		swept = true
		for _, r := range rows {
			if r.redrive {
				continue
			}
			got = append(got, stores.ClaimedMessage{StoredMessage: *r.msg, Token: p.Token})
			if !q.fifo {
				taken = append(taken, r.msg.ID)
			} else if !slices.Contains(taken, r.msg.GroupID) {
				// Not again in this claim (with a zero timeout it is still
				// visible); a group that only lost messages to the
				// dead-letter queue may go on in the next round.
				taken = append(taken, r.msg.GroupID)
			}
		}
		if len(redrive) > 0 {
			if err := t.moveInto(ctx, q, redrive, dlq, q.name, nil); err != nil {
				return nil, 0, err
			}
			// What stood behind the moved messages may be receivable now:
			// another round.
			redriven += len(redrive)
			continue
		}
		// Standard: SKIP LOCKED gave what there is. FIFO: sluice_fifo_claim
		// went through every available group.
		break
	}
	return got, redriven, nil
}

// replay repeats an earlier claim with the same attempt id when
// rules.AttemptReplays says so: same messages, same token, visibility
// restarted. (A replay is a client's retry, rare enough for the rule to be
// judged here rather than written again in SQL: one more round trip.)
func (t *txn) replay(ctx context.Context, q *queueRow, p *stores.MessageClaimParams, until time.Time) ([]stores.ClaimedMessage, bool, error) {
	var token string
	var ids []string
	var created time.Time
	var visibleUntil []time.Time
	err := t.QueryRow(ctx, `SELECT token, message_ids, created_at, visible_until FROM receive_attempts
		WHERE queue_id = $1 AND attempt_id = $2 FOR UPDATE`, q.id, p.AttemptID).Scan(&token, &ids, &created, &visibleUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if len(ids) == 0 || !rules.AttemptInWindow(created, p.AttemptWindow, t.now) {
		return nil, false, nil // without reading the messages
	}
	// The messages' groups first, in group order, as claims and deletes
	// take them: holding a message while waiting for another, a replay
	// would otherwise meet a claim that holds both groups and waits for the
	// first message.
	groups, err := t.lockGroupsOf(ctx, q.id, ids)
	if err != nil {
		return nil, false, err
	}
	ds, err := t.deliveries(ctx, q, ids)
	if err != nil {
		return nil, false, err
	}
	if len(visibleUntil) != len(ids) {
		visibleUntil = nil // an older instance's attempt: not compared
	}
	if !rules.AttemptReplays(created, p.AttemptWindow, token, visibleUntil, ds, t.now) {
		return nil, false, nil
	}
	if _, err := t.Exec(ctx, `UPDATE receive_attempts SET visible_until = array_fill($3::timestamptz, ARRAY[cardinality(message_ids)])
		WHERE queue_id = $1 AND attempt_id = $2`, q.id, p.AttemptID, until); err != nil {
		return nil, false, err
	}
	rows, err := t.Query(ctx, `UPDATE messages SET visible_at = $3 WHERE queue_id = $1 AND message_id = ANY($2::text[])
		RETURNING `+msgCols+`, array_position($2::text[], message_id)`, q.id, ids, until)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	type ordered struct {
		m   stores.ClaimedMessage
		pos int
	}
	var got []ordered
	for rows.Next() {
		var pos int
		m, targets, finish := scanMessage(q.fifo, &pos)
		if err := rows.Scan(targets...); err != nil {
			return nil, false, err
		}
		if err := finish(); err != nil {
			return nil, false, err
		}
		got = append(got, ordered{stores.ClaimedMessage{StoredMessage: *m, Token: token}, pos})
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	if len(got) != len(ids) {
		return nil, false, nil
	}
	// The groups' rows follow their heads' new visibility (which may end
	// sooner than the claim's did).
	if _, err := t.Exec(ctx, `SELECT count(sluice_fix_group($1, g)) FROM unnest($2::text[]) AS g`, q.id, groups); err != nil {
		return nil, false, err
	}
	sort.Slice(got, func(i, j int) bool { return got[i].pos < got[j].pos })
	out := make([]stores.ClaimedMessage, len(got))
	for i := range got {
		out[i] = got[i].m
	}
	return out, true, nil
}
