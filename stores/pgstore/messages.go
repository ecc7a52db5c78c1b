package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

func encodeAttrs(m map[string]stores.Attribute) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return json.Marshal(m)
}

func decodeAttrs(b []byte) (map[string]stores.Attribute, error) {
	if b == nil {
		return nil, nil
	}
	var m map[string]stores.Attribute
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("pgstore: stored attributes: %w", err)
	}
	return m, nil
}

// msgCols are the columns scanMessage reads, in its order.
const msgCols = `message_id, seq, group_id, dedup_id, body, attributes, system_attributes,
	md5_body, md5_attributes, md5_system, sender_id, sent_at, receive_count, first_received_at, dead_letter_source`

func scanMessage(fifo bool, dest ...any) (*stores.StoredMessage, []any, func() error) {
	m := &stores.StoredMessage{}
	var seq int64
	var attrs, sys []byte
	var first *time.Time
	targets := append([]any{&m.ID, &seq, &m.GroupID, &m.DedupID, &m.Body, &attrs, &sys,
		&m.MD5OfBody, &m.MD5OfMessageAttributes, &m.MD5OfSystemAttributes, &m.SenderID, &m.SentAt,
		&m.ReceiveCount, &first, &m.DeadLetterSource}, dest...)
	finish := func() error {
		var err error
		if m.Attributes, err = decodeAttrs(attrs); err != nil {
			return err
		}
		if m.SystemAttributes, err = decodeAttrs(sys); err != nil {
			return err
		}
		if first != nil {
			m.FirstReceivedAt = *first
		}
		if fifo {
			m.SequenceNumber = formatSeq(seq)
		}
		return nil
	}
	return m, targets, finish
}

// ---- send

// A send is one statement (Standard) or one pgx.Batch (FIFO) outside an
// explicit transaction: PostgreSQL runs the statements of one batch (one
// Sync) as one implicit transaction, so the send is atomic, takes one round
// trip and returns after its commit (as durable as the server's
// synchronous_commit makes it). Each statement reads
// the queue row ($1 name, $2 incarnation) itself and stores nothing when it
// is missing; times come from the given now ($3) or the database clock
// (now(), the implicit transaction's start, so one value for the batch).
// No lock on the queue row: sends to one queue run in parallel. A send
// racing a DeleteQueue can leave rows of the dead incarnation, which nothing
// reads and Maintain removes.

// sendStandardSQL stores the messages of a Standard queue given as
// parallel arrays ($4 ids ... $13 senders, $14 delays in microseconds) in
// one statement; its row count is how many it stored (none when the queue
// is missing). One statement for the whole batch: each statement costs
// PostgreSQL an executor start-up and a trip through the protocol, as much
// as the inserts of a few rows, so a batch of 10 (or a combined batch of up
// to 100) pays it once, as a multi-row insert does. A plain insert: message
// ids are fresh random ones, so a conflict would be another message's id,
// which the send must not overwrite (it fails instead), and ON CONFLICT
// would make every insert a speculative one (an extra index probe and WAL
// record).
const sendStandardSQL = `INSERT INTO messages (queue_id, message_id, seq, group_id, dedup_id, body, attributes,
		system_attributes, md5_body, md5_attributes, md5_system, sender_id, sent_at, visible_at)
	SELECT q.id, u.id, nextval('message_seq'), u.grp, u.dedup, u.body, u.attrs, u.sys, u.md5_body, u.md5_attrs,
		u.md5_sys, u.sender, coalesce($3::timestamptz, now()),
		coalesce($3::timestamptz, now()) + u.delay * interval '1 microsecond'
	FROM queues q CROSS JOIN unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::bytea[], $9::bytea[],
		$10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[])
		AS u(id, grp, dedup, body, attrs, sys, md5_body, md5_attrs, md5_sys, sender, delay)
	WHERE q.name = $1 AND q.id = $2`

// sendFIFOSQL stores the messages of a FIFO queue given as parallel arrays
// ($4 ids ... $13 senders, $14 delays in microseconds, $15 dedup scopes),
// in their order, in one statement, except those whose dedup key (scope
// and id; an empty id: no dedup) was used within the window ($16
// microseconds; 0: no dedup markers). It returns a row per message: its
// position in the arrays (ord), and the original's id and SequenceNumber
// for a duplicate, or the new message's seq; nothing when the queue is
// missing. Two messages of one key in one statement would both miss the
// markers (one snapshot) and collide on them: the caller sends the first
// only and echoes it for the later ones.
//
// The new messages take their numbers in the arrays' order: nextval is
// volatile, so PostgreSQL evaluates it after the ORDER BY
// (TestFIFOSendNumbersInOrder). A message to a group without a row in
// fifo_groups makes the row (the group's first new message is its head).
// The existence check is a plain read, so a send does not wait for a claim
// that is updating the row; it is enough because rows are deleted only
// under the group's send lock, which this transaction took (sendLockSQL,
// earlier in the batch) before this statement's snapshot. The row is a
// plain INSERT: sends and moves, the writers of a group's first row, hold
// that lock too, so none appears after the snapshot (ON CONFLICT would
// probe the key twice and write a confirmation record). The one other
// writer, group upkeep that finds a group's messages without their row,
// holds no send lock; should it meet a send, the send fails on the key and
// is retried whole (retryable). The send holds
// the advisory locks of the messages' groups and dedup keys, so the check
// and the marker are atomic and a group's sequence order is its commit
// order. A key without a marker gets a plain INSERT: only sends write
// markers, under the key's lock, so none can appear after the snapshot
// (INSERT … ON CONFLICT costs a second probe of the key and a WAL record
// more). A key whose marker has expired overwrites it with ON CONFLICT,
// since housekeeping may delete that marker meanwhile. Each dedup marker
// and group row is looked up by its whole primary key, one message at a
// time: a LATERAL subquery with a LIMIT, which PostgreSQL does not flatten
// into a join. Flattened, on statistics of
// drained tables, the planner walked the queue's whole range of the key
// and matched the messages against it
// (TestHotStatementsStaySmallOnDrainedStatistics).
var sendFIFOSQL = `WITH q AS (
		SELECT id, coalesce($3::timestamptz, now()) AS now FROM queues WHERE name = $1 AND id = $2
	), u AS (
		SELECT * FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::bytea[], $9::bytea[],
			$10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::text[]) WITH ORDINALITY
			AS u(id, grp, dedup, body, attrs, sys, md5_body, md5_attrs, md5_sys, sender, delay, scope, ord)
	), marker AS (
		SELECT u.ord, d.message_id, d.seq,
			d.created_at > coalesce($3::timestamptz, now()) - $16::bigint * interval '1 microsecond' AS live
		FROM u CROSS JOIN LATERAL (
			SELECT d.message_id, d.seq, d.created_at FROM dedup d
			WHERE d.queue_id = $2 AND d.scope = u.scope AND d.dedup_id = u.dedup
			LIMIT 1
		) d
		WHERE u.dedup <> '' AND EXISTS (SELECT 1 FROM q)
	), dup AS (
		SELECT ord, message_id, seq FROM marker WHERE live
	), ins AS (
		INSERT INTO messages (queue_id, message_id, seq, group_id, dedup_id, body, attributes,
			system_attributes, md5_body, md5_attributes, md5_system, sender_id, sent_at, visible_at)
		SELECT q.id, u.id, nextval('message_seq'), u.grp, u.dedup, u.body, u.attrs, u.sys, u.md5_body,
			u.md5_attrs, u.md5_sys, u.sender, q.now, q.now + u.delay * interval '1 microsecond'
		FROM q CROSS JOIN u WHERE NOT EXISTS (SELECT 1 FROM dup WHERE dup.ord = u.ord)
		ORDER BY u.ord
		RETURNING message_id, seq, group_id, dedup_id, sent_at, visible_at
	), mark AS (
		INSERT INTO dedup (queue_id, scope, dedup_id, message_id, seq, created_at, expires_at)
		SELECT $2, u.scope, ins.dedup_id, ins.message_id, (` + seqBaseSQL + ` + ins.seq)::text, ins.sent_at,
			ins.sent_at + $16::bigint * interval '1 microsecond'
		FROM ins JOIN u ON u.id = ins.message_id
		WHERE ins.dedup_id <> '' AND $16::bigint > 0 AND NOT EXISTS (SELECT 1 FROM marker WHERE marker.ord = u.ord)
	), remark AS (
		INSERT INTO dedup (queue_id, scope, dedup_id, message_id, seq, created_at, expires_at)
		SELECT $2, u.scope, ins.dedup_id, ins.message_id, (` + seqBaseSQL + ` + ins.seq)::text, ins.sent_at,
			ins.sent_at + $16::bigint * interval '1 microsecond'
		FROM ins JOIN u ON u.id = ins.message_id
		WHERE ins.dedup_id <> '' AND $16::bigint > 0 AND EXISTS (SELECT 1 FROM marker WHERE marker.ord = u.ord)
		ON CONFLICT (queue_id, scope, dedup_id) DO UPDATE SET message_id = excluded.message_id,
			seq = excluded.seq, created_at = excluded.created_at, expires_at = excluded.expires_at
	), grp AS (
		INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
		SELECT DISTINCT ON (ins.group_id) $2, ins.group_id, ins.seq, ins.visible_at
		FROM ins LEFT JOIN LATERAL (
			SELECT true AS found FROM fifo_groups f WHERE f.queue_id = $2 AND f.group_id = ins.group_id LIMIT 1
		) f ON true
		WHERE f.found IS NULL
		ORDER BY ins.group_id, ins.seq
	)
	SELECT ord, message_id, seq, 0::bigint FROM dup
	UNION ALL
	SELECT u.ord, '', '', ins.seq FROM ins JOIN u ON u.id = ins.message_id`

// sendLockSQL takes transaction-scoped advisory locks on the keys $1, in
// the order given (callers sort them, so concurrent senders never wait on
// each other in a cycle).
const sendLockSQL = `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0)))
	FROM unnest($1::text[]) WITH ORDINALITY AS u(k, o)`

// sendLocks are the advisory lock keys a FIFO send holds: one per message
// group (sends to a group commit in sequence order, so a claim that sees a
// group's message sees every earlier one) and one per dedup key (two sends
// of one dedup id store one message). Claims lock groups under a different
// key, so sends and receives of a group do not wait for each other.
func sendLocks(queueID string, msgs []stores.NewMessage) []string {
	set := map[string]bool{}
	for _, m := range msgs {
		set[groupSendKey(queueID, m.GroupID)] = true
		if m.DedupID != "" {
			set[queueID+"\x1ed\x1f"+m.DedupScope+"\x1f"+m.DedupID] = true
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func groupSendKey(queueID, group string) string { return queueID + "\x1es\x1f" + group }

// sendTarget is the queue incarnation a send goes to and whether it is
// FIFO: from the cache, else read (once per incarnation and process).
func (s *Store) sendTarget(ctx context.Context, name, id string) (string, bool, error) {
	if id != "" {
		if fifo, ok := s.fifoOf(id); ok {
			return id, fifo, nil
		}
	}
	var qid string
	var fifo bool
	err := s.pool.QueryRow(ctx, "SELECT id, fifo FROM queues WHERE name = $1", name).Scan(&qid, &fifo)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && id != "" && id != qid {
		return "", false, stores.ErrQueueNotFound
	}
	if err != nil {
		return "", false, err
	}
	s.noteFIFO(qid, fifo)
	return qid, fifo, nil
}

// Combining: see combiner. Sends, deletes and fast claims combine
// (runQueueBatch) per queue incarnation and clock, up to
// maxCombinedQueueOps messages sent, receipts and messages asked for in
// all.
const (
	combineLimit        = 1
	maxCombinedQueueOps = 100
)

// batchKey is what the calls of one batch share: the queue's name and
// incarnation, and the clock.
type batchKey struct {
	name, id string
	now      int64 // UnixNano; 0 for the database's clock
}

func combineKey(name, id string, now time.Time) batchKey {
	k := batchKey{name: name, id: id}
	if !now.IsZero() {
		k.now = now.UnixNano()
	}
	return k
}

func (s *Store) MessageSend(ctx context.Context, p *stores.MessageSendParams) (*stores.MessageSendResult, error) {
	qid, fifo, err := s.sendTarget(ctx, p.QueueName, p.QueueID)
	if err != nil {
		return nil, err
	}
	if len(p.Messages) == 0 {
		return &stores.MessageSendResult{Results: []stores.SendResult{}}, nil
	}
	q := *p
	q.QueueID = qid
	enc, err := encodeMessages(q.Messages)
	if err != nil {
		return nil, err
	}
	op := queueOp{send: &queueSend{p: &q, enc: enc, fifo: fifo}}
	if h := q.HandOff; h != nil && oneStatementClaim(h) {
		// The fast claim's statement, after the send's in its batch; its
		// retention sweep is left to the receives' own claims.
		c := *h
		c.QueueName, c.QueueID, c.Now = q.QueueName, qid, q.Now
		var from int64
		if !fifo {
			from = s.fronts.from(qid, time.Now())
		}
		op.claim = fastClaimReq{p: &c, fifo: fifo, from: from}
	}
	res, err := s.inQueueBatch(ctx, q.QueueName, qid, q.Now, op)
	if res.send != nil {
		res.send.HandedOff = res.claim
	}
	return res.send, err
}

// encodedAttrs are a message's attributes and system attributes as stored.
type encodedAttrs struct{ attrs, sys []byte }

func encodeMessages(msgs []stores.NewMessage) ([]encodedAttrs, error) {
	enc := make([]encodedAttrs, len(msgs))
	for i := range msgs {
		var err error
		if enc[i].attrs, err = encodeAttrs(msgs[i].Attributes); err != nil {
			return nil, err
		}
		if enc[i].sys, err = encodeAttrs(msgs[i].SystemAttributes); err != nil {
			return nil, err
		}
	}
	return enc, nil
}

// messageArrays are the columns of p's messages at the indexes sent, as
// parallel arrays in the send statements' parameter order ($4 to $14).
func messageArrays(p *stores.MessageSendParams, enc []encodedAttrs, sent []int) []any {
	n := len(sent)
	// The eight text columns share one allocation, the two bytea ones another.
	strs, blobs := make([]string, 8*n), make([][]byte, 2*n)
	col := func(i int) []string { return strs[i*n : (i+1)*n : (i+1)*n] }
	ids, groups, dedups, bodies := col(0), col(1), col(2), col(3)
	md5b, md5a, md5s, senders := col(4), col(5), col(6), col(7)
	attrs, sys := blobs[:n:n], blobs[n:]
	delays := make([]int64, n)
	for k, i := range sent {
		m := &p.Messages[i]
		ids[k], groups[k], dedups[k], bodies[k] = m.ID, m.GroupID, m.DedupID, m.Body
		attrs[k], sys[k] = enc[i].attrs, enc[i].sys
		md5b[k], md5a[k], md5s[k], senders[k] = m.MD5OfBody, m.MD5OfMessageAttributes, m.MD5OfSystemAttributes, m.SenderID
		delays[k] = micros(max(m.Delay, 0))
	}
	return []any{ids, groups, dedups, bodies, attrs, sys, md5b, md5a, md5s, senders, delays}
}

// fifoSend is the statements that store the messages of p, a send to a
// FIFO queue incarnation (p.QueueID), and what they answered. They are
// built once (a retry sends the same statements) and queued in a
// pgx.Batch, alone (sendFIFO) or first in their queue's batch
// (runQueueBatch).
type fifoSend struct {
	p *stores.MessageSendParams
	// The messages the statement gets (sendFIFOSQL's ord - 1), and the
	// later messages of a dedup key that one of those has.
	sent  []int
	echo  map[int]int
	args  []any
	locks []string

	res     *stores.MessageSendResult
	stored  int
	missing bool
}

func newFIFOSend(p *stores.MessageSendParams, enc []encodedAttrs) *fifoSend {
	f := &fifoSend{p: p, res: &stores.MessageSendResult{Results: make([]stores.SendResult, len(p.Messages))}}
	f.sent, f.echo = firstOfKeys(p)
	f.args, f.locks = fifoSendArgs(p, p.QueueID, nowArg(p.Now), enc, f.sent), sendLocks(p.QueueID, p.Messages)
	return f
}

// queue adds the send's statements to b, and forgets what an earlier try
// answered.
func (f *fifoSend) queue(b *pgx.Batch) {
	f.missing, f.stored = false, 0
	for i := range f.p.Messages {
		f.res.Results[i] = stores.SendResult{MessageID: f.p.Messages[i].ID}
	}
	b.Queue(sendLockSQL, f.locks)
	b.Queue(sendFIFOSQL, f.args...).Query(func(rows pgx.Rows) error {
		var ord int
		var id, sn string
		var seq int64
		n := 0
		_, err := pgx.ForEachRow(rows, []any{&ord, &id, &sn, &seq}, func() error {
			n++
			i := f.sent[ord-1]
			if id != "" {
				f.res.Results[i] = stores.SendResult{MessageID: id, SequenceNumber: sn, Duplicate: true}
			} else {
				f.res.Results[i].SequenceNumber = formatSeq(seq)
				f.stored++
			}
			return nil
		})
		f.missing = err == nil && n == 0
		return err
	})
}

// result is the send's answer, once its batch has committed.
func (f *fifoSend) result() (*stores.MessageSendResult, error) {
	if f.missing {
		return nil, stores.ErrQueueNotFound
	}
	for i, j := range f.echo {
		f.res.Results[i] = stores.SendResult{MessageID: f.res.Results[j].MessageID,
			SequenceNumber: f.res.Results[j].SequenceNumber, Duplicate: true}
	}
	return f.res, nil
}

// sendFIFO stores the messages of p, a send to a FIFO queue, in a
// transaction of its own.
func (s *Store) sendFIFO(ctx context.Context, p *stores.MessageSendParams, enc []encodedAttrs) (*stores.MessageSendResult, error) {
	f := newFIFOSend(p, enc)
	err := s.retry(ctx, func() error {
		b := &pgx.Batch{}
		f.queue(b)
		return s.pool.SendBatch(ctx, b).Close()
	})
	if f.stored > 0 {
		s.changed(f.stored)
	}
	if err != nil {
		return nil, err
	}
	return f.result()
}

// firstOfKeys splits a FIFO send's messages into those sendFIFOSQL gets, in
// order, and those whose dedup key an earlier message of the send has: a
// duplicate of that one (the window holds a marker made at the same now
// when rules.Duplicate says so), which echoes its result.
func firstOfKeys(p *stores.MessageSendParams) (sent []int, echo map[int]int) {
	dedups := rules.Duplicate(p.Now, p.DedupWindow, p.Now)
	first := map[[2]string]int{}
	for i := range p.Messages {
		m := &p.Messages[i]
		if dedups && m.DedupID != "" {
			key := [2]string{m.DedupScope, m.DedupID}
			if j, ok := first[key]; ok {
				if echo == nil {
					echo = map[int]int{}
				}
				echo[i] = j
				continue
			}
			first[key] = i
		}
		sent = append(sent, i)
	}
	return sent, echo
}

// fifoSendArgs are sendFIFOSQL's arguments for p's messages at the indexes
// sent.
func fifoSendArgs(p *stores.MessageSendParams, qid string, now any, enc []encodedAttrs, sent []int) []any {
	scopes := make([]string, len(sent))
	for k, i := range sent {
		scopes[k] = p.Messages[i].DedupScope
	}
	args := append([]any{p.QueueName, qid, now}, messageArrays(p, enc, sent)...)
	return append(args, scopes, micros(max(p.DedupWindow, 0)))
}

// ---- receipts

// delivery is the state of one message that a receipt operation judges.
type delivery struct {
	rules.Delivery
	firstRecv *time.Time
	fifo      bool
	queueName string
	queueID   string
}

// lockDelivery reads the queue and locks the message in one round trip.
func (t *txn) lockDelivery(ctx context.Context, name, id, messageID string, now time.Time) (*delivery, error) {
	d := &delivery{}
	var qid string
	var ret int64
	var dbNow time.Time
	var mtoken *string
	var visible, sent *time.Time
	err := t.QueryRow(ctx, `SELECT q.id, q.fifo, q.retention_us, coalesce($4::timestamptz, now()),
			m.token, m.visible_at, m.first_received_at, m.sent_at
		FROM queues q
		LEFT JOIN LATERAL (
			SELECT token, visible_at, first_received_at, sent_at FROM messages
			WHERE queue_id = q.id AND message_id = $3 FOR UPDATE
		) m ON true
		WHERE q.name = $1 AND ($2 = '' OR q.id = $2)`, name, id, messageID, nowArg(now)).
		Scan(&qid, &d.fifo, &ret, &dbNow, &mtoken, &visible, &d.firstRecv, &sent)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, stores.ErrQueueNotFound
	}
	if err != nil {
		return nil, err
	}
	t.now = dbNow.Truncate(time.Microsecond)
	d.queueName, d.queueID = name, qid
	if mtoken == nil {
		return d, nil
	}
	if !rules.Retained(*sent, time.Duration(ret)*time.Microsecond, t.now) {
		return d, nil // gone
	}
	d.Delivery = rules.Delivery{Found: true, Token: *mtoken, VisibleAt: *visible}
	return d, nil
}

// deliveries reads and locks the messages ids of q for the receipt rules,
// in the order of ids (a missing one as rules.Delivery{}).
func (t *txn) deliveries(ctx context.Context, q *queueRow, ids []string) ([]rules.Delivery, error) {
	rows, err := t.Query(ctx, `SELECT message_id, token, visible_at, sent_at FROM messages
		WHERE queue_id = $1 AND message_id = ANY($2::text[]) ORDER BY message_id FOR UPDATE`, q.id, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := map[string]rules.Delivery{}
	for rows.Next() {
		var id string
		var d rules.Delivery
		var sent time.Time
		if err := rows.Scan(&id, &d.Token, &d.VisibleAt, &sent); err != nil {
			return nil, err
		}
		d.Found = rules.Retained(sent, q.retention, t.now)
		found[id] = d
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ds := make([]rules.Delivery, len(ids))
	for i, id := range ids {
		ds[i] = found[id]
	}
	return ds, nil
}

// receiptCodes are sluice_delete's outcome codes (0 current, 1 expired, 2
// stale, 3 gone, 4 earlier), by code.
var receiptCodes = []stores.ReceiptOutcome{stores.ReceiptCurrent, stores.ReceiptExpired, stores.ReceiptStale, stores.ReceiptGone, stores.ReceiptEarlier}

// receiptOfCode is the outcome sluice_delete's code c stands for.
func receiptOfCode(c int32) stores.ReceiptOutcome {
	if c < 0 || int(c) >= len(receiptCodes) {
		return stores.ReceiptGone
	}
	return receiptCodes[c]
}

func (s *Store) MessageDelete(ctx context.Context, p *stores.MessageDeleteParams) (*stores.MessageDeleteResult, error) {
	if len(p.Receipts) == 0 {
		return &stores.MessageDeleteResult{}, nil
	}
	res, err := s.inQueueBatch(ctx, p.QueueName, p.QueueID, p.Now, queueOp{del: p})
	return res.del, err
}

// standardDeleteSQL deletes the messages of a Standard queue ($1 id, $3
// name) whose receipts ($4 message ids, distinct, $5 tokens) are current
// at $2 (NULL: the database clock), in plain SQL: the common delete,
// without sluice_delete's PL/pgSQL entry and loop. Current is
// rules.JudgeReceipt's ReceiptCurrent, as in sluice_delete's first
// statement: the message is there and retained, the receipt's token is its
// delivery's, not empty, and the delivery is in flight. The ids find the
// rows (= ANY, an index condition: by the join alone, on statistics of an
// empty table, the planner walked the whole primary key). A row changed
// meanwhile is re-checked under its lock. It returns whether the queue is
// FIFO (NULL: it is gone; FIFO: nothing deleted) and the ids it deleted.
var standardDeleteSQL = `WITH ` + queueNowSQL + `, d AS (
		DELETE FROM messages m USING unnest($4::text[], $5::text[]) AS r(message_id, token)
		WHERE m.message_id = ANY($4::text[]) AND m.message_id = r.message_id AND m.queue_id = $1
		  AND m.token = r.token AND r.token <> ''
		  AND m.visible_at > (SELECT now FROM q) AND m.sent_at > (SELECT after FROM q)
		  AND NOT (SELECT fifo FROM q)
		RETURNING m.message_id
	)
	SELECT (SELECT fifo FROM q), array(SELECT message_id FROM d)`

// A deletion is one delete's statements and what they found. On a
// Standard queue, current receipts of distinct messages (nearly every
// delete) go in one plain statement (standardDeleteSQL), and
// sluice_delete_freeing judges the rest, if any, in a second: messages are
// independent, so that is what judging them one by one in order gives.
// Otherwise sluice_delete_freeing takes them all in one statement. The
// first statement goes in a batch with the queue's claims
// (runQueueBatch). An answer that says the queue is gone is kept for
// finish, so that the batch's other statements are still read; a
// statement that fails fails the batch, whose transaction then commits
// nothing. The callbacks only assign, so a retried batch starts afresh.
type deletion struct {
	p           *stores.MessageDeleteParams
	ids, tokens []string
	current     bool // the first statement is standardDeleteSQL
	outs        []stores.ReceiptOutcome
	left        []int  // the receipts standardDeleteSQL left to judge
	deleted     [2]int // messages deleted, by statement
	freed       int    // FIFO groups freed
	err         error
}

func (s *Store) newDeletion(p *stores.MessageDeleteParams) *deletion {
	d := &deletion{p: p, ids: make([]string, len(p.Receipts)), tokens: make([]string, len(p.Receipts)),
		outs: make([]stores.ReceiptOutcome, len(p.Receipts))}
	for i, r := range p.Receipts {
		d.ids[i], d.tokens[i] = r.MessageID, r.Token
	}
	fifo, ok := s.fifoOf(p.QueueID)
	d.current = ok && !fifo && distinct(d.ids)
	return d
}

// queue adds d's first statement to b.
func (d *deletion) queue(s *Store, b *pgx.Batch) {
	if !d.current {
		all := make([]int, len(d.ids))
		for i := range all {
			all[i] = i
		}
		d.queueFreeing(s, b, all)
		return
	}
	p := d.p
	b.Queue(standardDeleteSQL, p.QueueID, nowArg(p.Now), p.QueueName, d.ids, d.tokens).QueryRow(func(row pgx.Row) error {
		var fifo *bool
		var deleted []string
		if err := row.Scan(&fifo, &deleted); err != nil {
			return err // the statement failed, and the batch with it
		}
		d.err = nil
		if fifo == nil {
			d.err = stores.ErrQueueNotFound
			return nil
		}
		gone := make(map[string]bool, len(deleted))
		for _, id := range deleted {
			gone[id] = true
		}
		var left []int
		for i, id := range d.ids {
			if gone[id] {
				d.outs[i] = stores.ReceiptCurrent
			} else {
				left = append(left, i)
			}
		}
		d.left, d.deleted[0] = left, len(deleted)
		return nil
	})
}

// queueFreeing adds sluice_delete_freeing for the receipts at rest to b:
// one statement, so one round trip.
func (d *deletion) queueFreeing(s *Store, b *pgx.Batch, rest []int) {
	p := d.p
	ids, tokens := d.ids, d.tokens
	if len(rest) < len(d.ids) {
		ids, tokens = make([]string, len(rest)), make([]string, len(rest))
		for j, i := range rest {
			ids[j], tokens[j] = d.ids[i], d.tokens[i]
		}
	}
	b.Queue("SELECT * FROM sluice_delete_freeing($1, $2, $3, $4, $5, $6)",
		p.QueueName, p.QueueID, ids, tokens, p.KeepExpired, nowArg(p.Now)).QueryRow(func(row pgx.Row) error {
		var codes []int32
		var fifo *bool
		var n *int32
		if err := row.Scan(&codes, &fifo, &n); err != nil {
			return err // the statement failed, and the batch with it
		}
		d.err = nil
		if fifo == nil {
			d.err = stores.ErrQueueNotFound
			return nil
		}
		if len(codes) != len(rest) {
			d.err = fmt.Errorf("pgstore: sluice_delete_freeing gave %d outcomes for %d receipts", len(codes), len(rest))
			return nil
		}
		if p.QueueID != "" {
			s.noteFIFO(p.QueueID, *fifo)
		}
		d.freed, d.deleted[1] = 0, 0
		if n != nil {
			d.freed = int(*n)
		}
		for j, c := range codes {
			d.outs[rest[j]] = receiptOfCode(c)
			if rules.DeleteApplies(d.outs[rest[j]], p.KeepExpired) {
				d.deleted[1]++
			}
		}
		return nil
	})
}

// finish runs, once d's first statement has, what that statement left to
// judge, and returns each receipt's outcome and the number of FIFO groups
// freed. When that second statement fails, err is the error of the
// receipts it judged (unjudged, their indexes) alone: the others were
// deleted in the batch, which committed, and their outcomes stand.
// Otherwise err (unjudged nil) is every receipt's.
func (d *deletion) finish(ctx context.Context, s *Store) (outs []stores.ReceiptOutcome, freed int, unjudged []int, err error) {
	if d.err == nil && len(d.left) > 0 {
		s.changed(d.deleted[0])
		d.deleted[0] = 0
		if err := s.retry(ctx, func() error {
			b := &pgx.Batch{}
			d.queueFreeing(s, b, d.left)
			return s.pool.SendBatch(ctx, b).Close()
		}); err != nil {
			return d.outs, 0, d.left, err
		}
	}
	if d.err != nil {
		return nil, 0, nil, d.err
	}
	s.changed(d.deleted[0] + d.deleted[1])
	return d.outs, d.freed, nil, nil
}

// distinct says whether no id is there twice.
func distinct(ids []string) bool {
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, ok := seen[id]; ok {
			return false
		}
		seen[id] = struct{}{}
	}
	return true
}

func (s *Store) MessageChangeVisibility(ctx context.Context, p *stores.MessageChangeVisibilityParams) (*stores.MessageChangeVisibilityResult, error) {
	// The message may be behind the queue's front hint, and receivable
	// now: this instance's claims start from the front again.
	defer s.fronts.drop(p.QueueID)
	var res *stores.MessageChangeVisibilityResult
	fifo, known := s.fifoOf(p.QueueID)
	err := s.run(ctx, func(t *txn) error {
		if fifo || !known {
			// The group's row lock first, as claims and deletes take it
			// before the group's messages: a claim that holds the group
			// and wants the message (its visibility ending as this
			// starts) then never waits for a change that waits for it.
			if _, err := t.Exec(ctx, `WITH q AS (SELECT id FROM queues WHERE name = $1 AND ($2 = '' OR id = $2))
				SELECT count(*) FROM (SELECT 1 FROM fifo_groups WHERE queue_id = (SELECT id FROM q)
				  AND group_id = (SELECT group_id FROM messages WHERE message_id = $3 AND queue_id = (SELECT id FROM q))
				FOR NO KEY UPDATE) g`, p.QueueName, p.QueueID, p.MessageID); err != nil {
				return err
			}
		}
		d, err := t.lockDelivery(ctx, p.QueueName, p.QueueID, p.MessageID, p.Now)
		if err != nil {
			return err
		}
		res = &stores.MessageChangeVisibilityResult{Outcome: rules.JudgeReceipt(d.Delivery, p.Token, t.now)}
		if !rules.VisibilityChangeApplies(res.Outcome, p.ApplyExpired) {
			return nil
		}
		until := t.now.Add(max(p.Timeout, 0))
		var first time.Time
		if d.firstRecv != nil {
			first = *d.firstRecv
		}
		if rules.VisibilityTooLong(first, p.ReceivedAt, p.MaxSinceReceive, until) {
			res.TooLong = true
			return nil
		}
		if _, err := t.Exec(ctx, "UPDATE messages SET visible_at = $3 WHERE queue_id = $1 AND message_id = $2",
			d.queueID, p.MessageID, until); err != nil {
			return err
		}
		if d.fifo {
			if _, err := t.Exec(ctx, `SELECT sluice_fix_group($1, (SELECT group_id FROM messages WHERE queue_id = $1 AND message_id = $2))`,
				d.queueID, p.MessageID); err != nil {
				return err
			}
		}
		// Receivable sooner than waiting receives were told (their
		// NextChange): the service wakes them.
		res.Earlier = until.Before(d.VisibleAt)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ---- moves

// moveSQL moves locked messages of one queue into another with new
// sequence numbers, visible now. $6 (keep) keeps the receive history and
// the MessageId and sets DeadLetterSource to $7 (a redrive); a redrive into
// a FIFO queue ($9) enqueues them anew with their MessageId as
// deduplication ID (rules.DeadLettered). Otherwise (a move back) they are
// new messages: the MessageIds $8, in the order of $2, sent now, with no
// history. Moved rows are marked moved, for the retention sweeps (see
// migration 20): a Standard dead letter keeps its SentAt.
const moveSQL = `WITH moved AS (
		DELETE FROM messages WHERE queue_id = $1 AND message_id = ANY($2::text[])
		RETURNING *
	), ordered AS (
		SELECT moved.*, array_position($2::text[], message_id) AS pos FROM moved
	)
	INSERT INTO messages (queue_id, message_id, seq, group_id, dedup_id, body, attributes, system_attributes,
		md5_body, md5_attributes, md5_system, sender_id, sent_at, visible_at, receive_count,
		first_received_at, token, dead_letter_source, moved)
	SELECT $3, CASE WHEN $6::boolean THEN message_id ELSE ($8::text[])[pos] END,
		CASE WHEN $4::bigint IS NULL THEN nextval('message_seq') ELSE $4::bigint + row_number() OVER (ORDER BY pos) - 1 END,
		group_id, CASE WHEN $6::boolean AND $9::boolean THEN message_id ELSE dedup_id END,
		body, attributes, system_attributes, md5_body, md5_attributes, md5_system,
		sender_id, CASE WHEN $6::boolean AND NOT $9::boolean THEN sent_at ELSE $5 END, $5,
		CASE WHEN $6::boolean THEN receive_count ELSE 0 END,
		CASE WHEN $6::boolean THEN first_received_at END,
		'',
		CASE WHEN $6::boolean THEN $7 ELSE '' END,
		true
	FROM ordered ORDER BY pos
	ON CONFLICT (message_id) DO UPDATE SET seq = excluded.seq, group_id = excluded.group_id,
		dedup_id = excluded.dedup_id, body = excluded.body, attributes = excluded.attributes,
		system_attributes = excluded.system_attributes, md5_body = excluded.md5_body,
		md5_attributes = excluded.md5_attributes, md5_system = excluded.md5_system,
		sender_id = excluded.sender_id, sent_at = excluded.sent_at, visible_at = excluded.visible_at,
		receive_count = excluded.receive_count, first_received_at = excluded.first_received_at,
		token = '', dead_letter_source = excluded.dead_letter_source, moved = true`

// lockGroupsOf takes the row locks of the FIFO groups of the messages,
// before the messages change (claims of this transaction may hold them
// already), in group order, one equality lookup each: as one = ANY
// statement the planner chose a scan of every group when the table was
// small, and kept the plan. It returns the groups.
func (t *txn) lockGroupsOf(ctx context.Context, queueID string, ids []string) ([]string, error) {
	groups, err := t.groupsOf(ctx, queueID, ids)
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	for _, g := range groups {
		b.Queue(`SELECT 1 FROM fifo_groups WHERE queue_id = $1 AND group_id = $2 FOR NO KEY UPDATE`, queueID, g)
	}
	return groups, t.SendBatch(ctx, b).Close()
}

// tryLockGroupsOf is lockGroupsOf without waiting: it returns the groups
// it locked and passes over those another transaction holds.
func (t *txn) tryLockGroupsOf(ctx context.Context, queueID string, ids []string) ([]string, error) {
	groups, err := t.groupsOf(ctx, queueID, ids)
	if err != nil {
		return nil, err
	}
	got := make([]bool, len(groups))
	b := &pgx.Batch{}
	for i, g := range groups {
		b.Queue(`SELECT 1 FROM fifo_groups WHERE queue_id = $1 AND group_id = $2 FOR NO KEY UPDATE SKIP LOCKED`,
			queueID, g).Query(func(rows pgx.Rows) error {
			got[i] = rows.Next()
			rows.Close()
			return rows.Err()
		})
	}
	if err := t.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	var locked []string
	for i, g := range groups {
		if got[i] {
			locked = append(locked, g)
		}
	}
	return locked, nil
}

// groupsOf returns the distinct groups of the messages ids, in group order.
func (t *txn) groupsOf(ctx context.Context, queueID string, ids []string) ([]string, error) {
	var groups []string
	err := t.QueryRow(ctx, `SELECT coalesce(array_agg(DISTINCT group_id ORDER BY group_id), '{}') FROM messages
		WHERE queue_id = $1 AND message_id = ANY($2::text[])`, queueID, ids).Scan(&groups)
	return groups, err
}

// stillOverReceived returns those of the FIFO messages that, under their
// groups' locks, are still visible and received maxRC times or more, in
// their order (moveInto numbers them so in the dead-letter queue): a claim
// that let go of them (a rolled-back round) must not move one that another
// claim took meanwhile. It takes the groups without waiting, and passes
// over the messages of a group another transaction holds (a later receive
// redrives them): the claim holds its earlier rounds' groups, so waiting
// here would take groups out of order, and a delete that holds this group
// may be waiting for one of those.
func (t *txn) stillOverReceived(ctx context.Context, q *queueRow, ids []string, maxRC int) ([]string, error) {
	groups, err := t.tryLockGroupsOf(ctx, q.id, ids)
	if err != nil || len(groups) == 0 {
		return nil, err
	}
	var still []string
	err = t.QueryRow(ctx, `SELECT coalesce(array_agg(message_id ORDER BY seq), '{}') FROM messages
		WHERE message_id = ANY($1::text[]) AND queue_id = $2 AND seq > 0 AND visible_at <= $3 AND receive_count >= $4
		  AND group_id = ANY($5::text[])`,
		ids, q.id, t.now, maxRC, groups).Scan(&still)
	return still, err
}

// moveInto moves the messages ids (locked by this transaction, in order) of
// the queue incarnation srcID into dst. redriveFrom, when not empty, keeps
// their MessageIds and receive history and marks them as dead letters from
// that queue; otherwise they arrive as new messages, with the MessageIds
// newIDs (one for each of ids).
func (t *txn) moveInto(ctx context.Context, src *queueRow, ids []string, dst *queueRow, redriveFrom string, newIDs []string) error {
	if len(ids) == 0 {
		return nil
	}
	srcID := src.id
	var srcGroups []string
	if src.fifo {
		var err error
		if srcGroups, err = t.lockGroupsOf(ctx, srcID, ids); err != nil {
			return err
		}
	}
	var base any // nil: fresh numbers from message_seq, in the given order
	if dst.fifo {
		// Like a send, a move into a FIFO group holds the group's send lock,
		// so the group's sequence order stays its commit order.
		if _, err := t.Exec(ctx, `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM (
				SELECT DISTINCT $3 || chr(30) || 's' || chr(31) || group_id AS k FROM messages
				WHERE queue_id = $1 AND message_id = ANY($2::text[]) ORDER BY 1) keys`, srcID, ids, dst.id); err != nil {
			return err
		}
	}
	if _, err := t.Exec(ctx, moveSQL, srcID, ids, dst.id, base, t.now, redriveFrom != "", redriveFrom, newIDs, dst.fifo); err != nil {
		return err
	}
	if redriveFrom == "" {
		ids = newIDs
	}
	if dst.fifo {
		// Groups new to the destination get their rows (under the send
		// locks taken above); the others' heads did not change.
		if _, err := t.Exec(ctx, `INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
			SELECT $1, group_id, min(seq), $3 FROM messages WHERE queue_id = $1 AND message_id = ANY($2::text[])
			GROUP BY group_id ORDER BY group_id
			ON CONFLICT (queue_id, group_id) DO NOTHING`, dst.id, ids, t.now); err != nil {
			return err
		}
	}
	if len(srcGroups) > 0 {
		if _, err := t.Exec(ctx, `SELECT count(sluice_fix_group($1, g)) FROM unnest($2::text[]) AS g`, srcID, srcGroups); err != nil {
			return err
		}
	}
	return nil
}

// heldInGroup returns which of the FIFO messages cands (of the queue
// incarnation queueID) must stay because an earlier retained message of
// their group stays: in flight, or unable to move (not among moving, the
// candidates with a destination). A move takes a group from its head, as a
// receive does. One lookup per group, each a walk of messages_fifo_group
// from the group's front past the moving ones (as one join, the planner
// walked the whole queue on statistics of an empty table:
// TestHotStatementsStaySmallOnDrainedStatistics).
func (t *txn) heldInGroup(ctx context.Context, queueID string, cands, moving []string, after any) (map[string]bool, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	if moving == nil {
		moving = []string{} // not NULL: NOT x = ANY(NULL) is never true
	}
	type cand struct {
		id, group string
		seq       int64
	}
	rows, err := t.Query(ctx, `SELECT message_id, group_id, seq FROM messages WHERE queue_id = $1 AND message_id = ANY($2::text[])`, queueID, cands)
	if err != nil {
		return nil, err
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (cand, error) {
		var c cand
		return c, r.Scan(&c.id, &c.group, &c.seq)
	})
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	var groups []string
	for _, c := range cs {
		if slices.Contains(groups, c.group) {
			continue
		}
		groups = append(groups, c.group)
		// From the group's head (fifo_groups): what lies before it is dead,
		// not yet vacuumed.
		b.Queue(`SELECT coalesce((SELECT seq FROM messages WHERE queue_id = $1 AND group_id = $2 AND group_id > ''
			AND seq >= coalesce((SELECT head_seq FROM fifo_groups WHERE queue_id = $1 AND group_id = $2), 1)
			AND sent_at > $4 AND NOT message_id = ANY($3::text[]) ORDER BY seq LIMIT 1), 0)`, queueID, c.group, moving, after)
	}
	staying := map[string]int64{} // each group's first message that stays (0: none)
	res := t.SendBatch(ctx, b)
	for _, g := range groups {
		var seq int64
		if err := res.QueryRow().Scan(&seq); err != nil {
			res.Close()
			return nil, err
		}
		staying[g] = seq
	}
	if err := res.Close(); err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for _, c := range cs {
		if first := staying[c.group]; first > 0 && first < c.seq {
			held[c.id] = true
		}
	}
	return held, nil
}

// moveCand is a message a move may take.
type moveCand struct {
	id, source string
	group      string    // on a FIFO queue
	to         *queueRow // its destination; nil: it stays
}

// fifoMoveWalk finds a FIFO queue's messages for a move group by group, as
// a claim does: the groups whose head is visible (fifo_groups_avail), each
// from its front, one lookup per group (messages_fifo_group). A group whose
// head is in flight is never read, however much waits behind it, and a
// group the move passes over (nothing to take, or a message that stays) is
// not read again in the step.
type fifoMoveWalk struct {
	t       *txn
	queueID string
	after   any      // retention: only messages sent after it
	passed  []string // groups passed over
	ranOut  bool     // no group was left to look at
}

func (w *fifoMoveWalk) pass(group string) {
	if !slices.Contains(w.passed, group) {
		w.passed = append(w.passed, group)
	}
}

// next returns up to limit visible messages, locked, in sequence order.
func (w *fifoMoveWalk) next(ctx context.Context, limit int) ([]moveCand, error) {
	t := w.t
	for {
		var groups []string
		var heads []int64
		if err := t.QueryRow(ctx, `SELECT coalesce(array_agg(group_id), '{}'), coalesce(array_agg(head_seq), '{}') FROM (
				SELECT group_id, head_seq FROM fifo_groups WHERE queue_id = $1 AND avail_at < 'infinity' AND avail_at <= $2
				  AND NOT group_id = ANY($3::text[])
				ORDER BY avail_at, head_seq LIMIT $4) g`, w.queueID, t.now, w.passed, limit).Scan(&groups, &heads); err != nil {
			return nil, err
		}
		if len(groups) == 0 {
			w.ranOut = true
			return nil, nil
		}
		b := &pgx.Batch{}
		for i, g := range groups {
			// From the group's head: what lies before it is dead (deleted,
			// moved), not yet vacuumed.
			b.Queue(`SELECT coalesce(array_agg(message_id ORDER BY seq), '{}') FROM (
					SELECT message_id, seq FROM messages WHERE queue_id = $1 AND group_id = $2 AND group_id > '' AND seq >= $3
					AND visible_at <= $4 AND sent_at > $5 ORDER BY seq LIMIT $6) m`, w.queueID, g, heads[i], t.now, w.after, limit)
		}
		res := t.SendBatch(ctx, b)
		var ids []string
		for _, g := range groups {
			var got []string
			if err := res.QueryRow().Scan(&got); err != nil {
				res.Close()
				return nil, err
			}
			if len(got) == 0 || len(ids) >= limit {
				if len(got) == 0 {
					w.pass(g) // nothing visible: its row is behind (a claim's, a delete's upkeep)
				}
				continue
			}
			ids = append(ids, got[:min(len(got), limit-len(ids))]...)
		}
		if err := res.Close(); err != nil {
			return nil, err
		}
		// Locked in order; a message a claim holds is passed over (its
		// group's later messages then wait for it: heldInGroup).
		rows, err := t.Query(ctx, `SELECT message_id, dead_letter_source, group_id FROM messages
			WHERE queue_id = $1 AND message_id = ANY($2::text[]) AND visible_at <= $3 ORDER BY seq FOR UPDATE SKIP LOCKED`,
			w.queueID, ids, t.now)
		if err != nil {
			return nil, err
		}
		cands, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (moveCand, error) {
			var c moveCand
			return c, r.Scan(&c.id, &c.source, &c.group)
		})
		if err != nil {
			return nil, err
		}
		if len(cands) > 0 {
			return cands, nil
		}
		for _, g := range groups {
			w.pass(g) // all it found was taken meanwhile
		}
	}
}

func (s *Store) MessageMove(ctx context.Context, p *stores.MessageMoveParams) (*stores.MessageMoveResult, error) {
	if p.NewID == nil {
		return nil, errors.New("pgstore: MessageMove needs NewID")
	}
	var res *stores.MessageMoveResult
	err := s.run(ctx, func(t *txn) error {
		res = &stores.MessageMoveResult{MovedTo: map[string]int{}}
		if p.Step != nil {
			if err := t.stepTask(ctx, p.Step); err != nil {
				return err
			}
		}
		src, err := t.queue(ctx, p.FromName, p.FromID, p.Now, lockKeyShare)
		if err != nil {
			return err
		}
		var dst *queueRow
		if p.ToName != "" {
			if dst, err = t.queue(ctx, p.ToName, "", time.Time{}, lockKeyShare); err != nil {
				return err
			}
			if dst.id == src.id {
				return errors.New("pgstore: MessageMove to the source queue")
			}
		}
		if err := t.sweepExpired(ctx, src, 1000); err != nil {
			return err
		}
		after := sentAfter(rules.RetentionCutoff(src.retention, t.now))
		dests := map[string]*queueRow{} // by name; nil: no such queue
		var fetch func(limit int) ([]moveCand, error)
		var walk *fifoMoveWalk
		if src.fifo {
			if _, err := t.Exec(ctx, `SELECT sluice_fifo_groups_whole()`); err != nil {
				return err // SLG01: run again once the group rows are rebuilt
			}
			walk = &fifoMoveWalk{t: t, queueID: src.id, after: after, passed: []string{}}
			fetch = func(limit int) ([]moveCand, error) { return walk.next(ctx, limit) }
		} else {
			lastSeq := int64(-1 << 63)
			fetch = func(limit int) ([]moveCand, error) {
				// In order, on any statistics: see migration 16.
				rows, err := t.Query(ctx, `SELECT * FROM sluice_move_candidates($1, $2, $3, $4, $5)`,
					src.id, t.now, after, lastSeq, limit)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, func(r pgx.CollectableRow) (moveCand, error) {
					var c moveCand
					return c, r.Scan(&c.id, &lastSeq, &c.source)
				})
			}
		}
		for res.Moved < p.Max {
			cands, err := fetch(p.Max - res.Moved)
			if err != nil {
				return err
			}
			if len(cands) == 0 {
				break
			}
			var movable []string // those with a destination
			for i, c := range cands {
				to := dst
				if to == nil {
					d, ok := dests[c.source]
					if !ok && c.source != "" {
						d, err = t.queue(ctx, c.source, "", time.Time{}, lockKeyShare)
						if errors.Is(err, stores.ErrQueueNotFound) {
							d, err = nil, nil
						}
						if err != nil {
							return err
						}
						dests[c.source] = d
					}
					if d != nil && d.id != src.id {
						to = d
					}
				}
				cands[i].to = to
				if to != nil {
					movable = append(movable, c.id)
				}
			}
			var held map[string]bool
			if src.fifo {
				all := make([]string, len(cands))
				for i, c := range cands {
					all[i] = c.id
				}
				if held, err = t.heldInGroup(ctx, src.id, all, movable, after); err != nil {
					return err
				}
			}
			var order []string
			byDest := map[string][]string{}
			for _, c := range cands {
				if held[c.id] || c.to == nil {
					if !held[c.id] {
						res.Failed++ // stays put
					} // else it waits for its group's earlier message
					if walk != nil {
						walk.pass(c.group) // nothing behind it moves either
					}
					continue
				}
				to := c.to
				if _, ok := byDest[to.name]; !ok {
					order = append(order, to.name)
					if dests[to.name] == nil {
						dests[to.name] = to
					}
				}
				byDest[to.name] = append(byDest[to.name], c.id)
				res.Moved++
			}
			for _, name := range order {
				to := dst
				if to == nil || to.name != name {
					to = dests[name]
				}
				newIDs := make([]string, len(byDest[name]))
				for i := range newIDs {
					newIDs[i] = p.NewID()
				}
				if err := t.moveInto(ctx, src, byDest[name], to, "", newIDs); err != nil {
					return err
				}
				res.MovedTo[name] += len(byDest[name])
			}
		}
		// Exhausted when nothing is left that a move could take: on a FIFO
		// queue, when the walk found no group left to look at (those it
		// passed over wait for their head).
		if walk != nil {
			res.Exhausted = walk.ranOut && res.Failed == 0
		} else if err := t.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM messages WHERE queue_id = $1 AND seq > 0 AND visible_at <= $2 AND sent_at > $3)`,
			src.id, t.now, after).Scan(&res.Exhausted); err != nil {
			return err
		}
		if p.Step != nil {
			res.Task, err = t.countStep(ctx, p.Step, res.Moved)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
