package pgstore

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
)

// A claim is one transaction:
//
//  1. a few messages past retention are swept (SKIP LOCKED: never waits);
//  2. FIFO with an AttemptID: a replay, if the earlier claim is still whole;
//  3. otherwise the claim proper (standard or FIFO, below), moving
//     over-received candidates to the dead-letter queue instead of returning
//     them, and trying again for what is left of Max;
//  4. NextChange from the (queue_id, visible_at) index.

// claimRowCols is what both claim statements return per row: whether the
// candidate is to be redriven, the message, and its order in the result.
const claimRowCols = `redrive, ` + msgCols + `, ord1, ord2`

// standardClaimSQL locks up to $4 visible messages, oldest visible first,
// skipping rows other transactions hold, and claims those received fewer
// than $7 times. A row that another claimer updated and committed after
// this statement's snapshot is re-checked by the row lock (READ COMMITTED
// follows the update chain and re-evaluates visible_at <= now), so it is
// never handed out twice.
const standardClaimSQL = `WITH cand AS (
		SELECT message_id, seq, visible_at, receive_count FROM messages
		WHERE queue_id = $1 AND visible_at <= $2 AND sent_at > $3 AND message_id <> ALL($8::text[])
		ORDER BY visible_at, seq
		LIMIT $4
		FOR UPDATE SKIP LOCKED
	), upd AS (
		UPDATE messages m SET receive_count = m.receive_count + 1,
			first_received_at = coalesce(m.first_received_at, $2),
			visible_at = $5, token = $6
		FROM cand
		WHERE m.queue_id = $1 AND m.message_id = cand.message_id AND cand.receive_count < $7
		RETURNING m.*, extract(epoch FROM cand.visible_at)::float8 AS ord1, cand.seq AS ord2
	)
	SELECT false AS redrive, ` + msgCols + `, ord1, ord2 FROM upd
	UNION ALL
	SELECT true, m.message_id, m.seq, m.group_id, m.dedup_id, m.body, m.attributes, m.system_attributes,
		m.md5_body, m.md5_attributes, m.md5_system, m.sender_id, m.sent_at, m.receive_count,
		m.first_received_at, m.dead_letter_source, extract(epoch FROM cand.visible_at)::float8, cand.seq
	FROM cand JOIN messages m ON m.queue_id = $1 AND m.message_id = cand.message_id
	WHERE cand.receive_count >= $7`

// fifoGroupsSQL picks and locks the groups of a FIFO claim: see
// sluice_claim_groups in the migrations. The lock, not this statement's
// snapshot, decides: the claim statement that follows re-reads each group
// with a snapshot taken after the lock was granted.
const fifoGroupsSQL = `SELECT sluice_claim_groups($1, $2, $3, $4, $5::text[])`

// fifoClaimSQL claims from the locked groups $4 (in that order): from each
// group the messages from its head up to the first one not visible (none
// when the head is in flight), at most $5 in all. Its snapshot is taken
// after the group locks were granted, so it sees every claim of these
// groups that committed before. No SKIP LOCKED here: a
// skipped row would leave a gap in a group's order, so the statement waits
// for the rare other writer (a purge, a move) instead.
const fifoClaimSQL = `WITH grp AS (
		SELECT g.group_id, g.ord FROM unnest($4::text[]) WITH ORDINALITY AS g(group_id, ord)
	), cand AS (
		SELECT r.ord, c.message_id, c.seq, c.receive_count FROM grp r
		CROSS JOIN LATERAL (
			SELECT message_id, seq, receive_count FROM messages m
			WHERE m.queue_id = $1 AND m.group_id = r.group_id AND m.sent_at > $3 AND m.visible_at <= $2
			  AND m.seq < coalesce((SELECT min(x.seq) FROM messages x WHERE x.queue_id = $1
				AND x.group_id = r.group_id AND x.visible_at > $2 AND x.sent_at > $3), 9223372036854775807)
			ORDER BY seq LIMIT $5
		) c
		ORDER BY r.ord, c.seq
		LIMIT $5
	), upd AS (
		UPDATE messages m SET receive_count = m.receive_count + 1,
			first_received_at = coalesce(m.first_received_at, $2),
			visible_at = $6, token = $7
		FROM cand
		WHERE m.queue_id = $1 AND m.message_id = cand.message_id AND cand.receive_count < $8
		  AND m.visible_at <= $2
		RETURNING m.*, cand.ord::float8 AS ord1, cand.seq AS ord2
	)
	SELECT false AS redrive, ` + msgCols + `, ord1, ord2 FROM upd
	UNION ALL
	SELECT true, m.message_id, m.seq, m.group_id, m.dedup_id, m.body, m.attributes, m.system_attributes,
		m.md5_body, m.md5_attributes, m.md5_system, m.sender_id, m.sent_at, m.receive_count,
		m.first_received_at, m.dead_letter_source, cand.ord::float8, cand.seq
	FROM cand JOIN messages m ON m.queue_id = $1 AND m.message_id = cand.message_id
	WHERE cand.receive_count >= $8`

type claimRow struct {
	msg        *stores.StoredMessage
	redrive    bool
	ord1, ord2 float64
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
		m, targets, finish := scanMessage(fifo, &r.ord1, &ord2)
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
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ord1 != out[j].ord1 {
			return out[i].ord1 < out[j].ord1
		}
		return out[i].ord2 < out[j].ord2
	})
	return out, nil
}

func (s *Store) MessageClaim(ctx context.Context, p *stores.MessageClaimParams) (*stores.MessageClaimResult, error) {
	var res *stores.MessageClaimResult
	err := s.run(ctx, func(t *txn) error {
		res = &stores.MessageClaimResult{}
		q, err := t.queue(ctx, p.QueueName, p.QueueID, p.Now, lockNone)
		if err != nil {
			return err
		}
		if rand.IntN(sweepEvery) == 0 {
			if err := t.sweepExpired(ctx, q, 100); err != nil {
				return err
			}
		}
		vt := max(p.VisibilityTimeout, 0)
		until := t.now.Add(vt)
		after := sentAfter(q.cutoff(t.now))

		var got []stores.ClaimedMessage
		replayed := false
		if q.fifo && p.AttemptID != "" && p.AttemptWindow > 0 {
			if got, replayed, err = t.replay(ctx, q, p, until); err != nil {
				return err
			}
		}
		if !replayed && p.Max > 0 {
			if got, err = t.claim(ctx, q, p, until, after); err != nil {
				return err
			}
			if q.fifo && p.AttemptID != "" && p.AttemptWindow > 0 && len(got) > 0 {
				ids := make([]string, len(got))
				for i, m := range got {
					ids[i] = m.ID
				}
				if _, err := t.Exec(ctx, `INSERT INTO receive_attempts (queue_id, attempt_id, token, message_ids, created_at, expires_at)
					VALUES ($1, $2, $3, $4, $5, $6)
					ON CONFLICT (queue_id, attempt_id) DO UPDATE SET token = excluded.token,
						message_ids = excluded.message_ids, created_at = excluded.created_at, expires_at = excluded.expires_at`,
					q.id, p.AttemptID, p.Token, ids, t.now, t.now.Add(p.AttemptWindow)); err != nil {
					return err
				}
			}
		}
		if vt == 0 && len(got) > 0 {
			t.wake(q.name) // still visible
		}
		res.Messages = got
		if len(got) > 0 {
			return nil // NextChange only matters to a receive that waits
		}
		var next *time.Time
		if err := t.QueryRow(ctx, `SELECT min(visible_at) FROM messages WHERE queue_id = $1 AND visible_at > $2 AND sent_at > $3`,
			q.id, t.now, after).Scan(&next); err != nil {
			return err
		}
		if next != nil {
			res.NextChange = *next
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// claim hands out up to p.Max messages under a new delivery (p.Token).
func (t *txn) claim(ctx context.Context, q *queueRow, p *stores.MessageClaimParams, until time.Time, after any) ([]stores.ClaimedMessage, error) {
	maxRC := math.MaxInt32
	var dlq *queueRow
	if r := p.Redrive; r != nil && r.MaxReceiveCount > 0 && r.QueueName != q.name {
		d, err := t.queue(ctx, r.QueueName, "", time.Time{}, lockNone)
		switch {
		case err == nil:
			dlq, maxRC = d, r.MaxReceiveCount
		case !errors.Is(err, stores.ErrQueueNotFound):
			return nil, err
		}
	}
	var got []stores.ClaimedMessage
	taken := []string{} // groups (FIFO) or messages (standard) this claim took
	for round := 0; round < 8 && len(got) < p.Max; round++ {
		want := p.Max - len(got)
		var rows []claimRow
		var err error
		if q.fifo {
			var groups []string
			grows, err := t.Query(ctx, fifoGroupsSQL, q.id, t.now, after, want, taken)
			if err != nil {
				return nil, err
			}
			groups, err = pgx.CollectRows(grows, pgx.RowTo[string])
			if err != nil {
				return nil, err
			}
			if len(groups) == 0 {
				break
			}
			rows, err = t.claimRows(ctx, true, fifoClaimSQL, q.id, t.now, after, groups, want, until, p.Token, maxRC)
			if err != nil {
				return nil, err
			}
		} else {
			rows, err = t.claimRows(ctx, false, standardClaimSQL, q.id, t.now, after, want, until, p.Token, maxRC, taken)
			if err != nil {
				return nil, err
			}
		}
		var redrive []string
		for _, r := range rows {
			if r.redrive {
				redrive = append(redrive, r.msg.ID)
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
			if err := t.moveInto(ctx, q.id, redrive, dlq, q.name); err != nil {
				return nil, err
			}
			continue
		}
		// Standard: SKIP LOCKED gave what there is. FIFO: groups held by
		// others were skipped and later ones may be free; look again while
		// rounds yield something.
		if !q.fifo || len(rows) == 0 {
			break
		}
	}
	return got, nil
}

// replay repeats an earlier claim with the same attempt id when it is within
// its window and every message it returned is still in flight under its
// token: same messages, same token, visibility restarted.
func (t *txn) replay(ctx context.Context, q *queueRow, p *stores.MessageClaimParams, until time.Time) ([]stores.ClaimedMessage, bool, error) {
	var token string
	var ids []string
	var created time.Time
	err := t.QueryRow(ctx, `SELECT token, message_ids, created_at FROM receive_attempts
		WHERE queue_id = $1 AND attempt_id = $2 FOR UPDATE`, q.id, p.AttemptID).Scan(&token, &ids, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if len(ids) == 0 || !t.now.Before(created.Add(p.AttemptWindow)) {
		return nil, false, nil
	}
	rows, err := t.Query(ctx, `WITH held AS (
			SELECT message_id FROM messages
			WHERE queue_id = $1 AND message_id = ANY($2::text[]) AND token = $3
			  AND receive_count > 0 AND visible_at > $4
			FOR UPDATE
		), whole AS (
			SELECT count(*) = cardinality($2::text[]) AS ok FROM held
		), upd AS (
			UPDATE messages m SET visible_at = $5 FROM held, whole
			WHERE whole.ok AND m.queue_id = $1 AND m.message_id = held.message_id
			RETURNING m.*
		)
		SELECT `+msgCols+`, array_position($2::text[], message_id) FROM upd`, q.id, ids, token, t.now, until)
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
	sort.Slice(got, func(i, j int) bool { return got[i].pos < got[j].pos })
	out := make([]stores.ClaimedMessage, len(got))
	for i := range got {
		out[i] = got[i].m
	}
	return out, true, nil
}
