package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
	"github.com/sluicehq/sluice/stores/rules/rulestest"
)

// The tests here pin what pgstore keeps of a rule in SQL, for speed, to
// the rule in stores/rules: each runs the SQL on rows crafted for every
// case of the rule's table (stores/rules/rulestest) and fails where the
// SQL and the Go function disagree.

// pinQueue creates a queue of its own for one case.
func pinQueue(t *testing.T, s *Store, fifo bool, retention time.Duration) *stores.Queue {
	t.Helper()
	name := randomName("pin-")
	if fifo {
		name += ".fifo"
	}
	res, err := s.QueueCreate(context.Background(), &stores.QueueCreateParams{Queue: &stores.Queue{
		Name: name, ID: randomName("id-"), FIFO: fifo, Attributes: map[string]string{}, Retention: retention,
	}, Now: rulestest.T0.Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Queue
}

// pinMessage sends one message to q at sentAt and returns its id.
func pinMessage(t *testing.T, s *Store, q *stores.Queue, sentAt time.Time) string {
	t.Helper()
	m := newMsg("pinned", "", "")
	if q.FIFO {
		m.GroupID = "g"
	}
	if _, err := s.MessageSend(context.Background(), &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{m}, Now: sentAt}); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// setDelivery gives a stored message the delivery d (the row's token and
// visible_at) and keeps its group's row right.
func setDelivery(t *testing.T, s *Store, q *stores.Queue, id string, d rules.Delivery) {
	t.Helper()
	received := 0
	if d.Token != "" {
		received = 1
	}
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET token = $3, visible_at = $4, receive_count = $5,
		first_received_at = CASE WHEN $5 > 0 THEN $4::timestamptz - interval '1 hour' END
		WHERE queue_id = $1 AND message_id = $2`, q.ID, id, d.Token, d.VisibleAt, received); err != nil {
		t.Fatal(err)
	}
	if q.FIFO {
		if _, err := s.pool.Exec(ctx, `SELECT sluice_fix_group($1, 'g')`, q.ID); err != nil {
			t.Fatal(err)
		}
	}
}

func messageExists(t *testing.T, s *Store, q *stores.Queue, id string) bool {
	t.Helper()
	var ok bool
	if err := s.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM messages WHERE queue_id = $1 AND message_id = $2)`,
		q.ID, id).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// A deleter judges and deletes receipts of q in one call: sluice_delete
// itself, or the store's MessageDelete, which on a Standard queue deletes
// current receipts with standardDeleteSQL and leaves only the rest to
// sluice_delete.
type deleter struct {
	name string
	del  func(t *testing.T, s *Store, q *stores.Queue, ids, tokens []string, keepExpired bool, now time.Time) []stores.ReceiptOutcome
}

var deleters = []deleter{{"sluice_delete", sqlDeleteBatch}, {"MessageDelete", storeDelete}}

// sqlDeleteBatch runs sluice_delete on several receipts of q.
func sqlDeleteBatch(t *testing.T, s *Store, q *stores.Queue, ids, tokens []string, keepExpired bool, now time.Time) []stores.ReceiptOutcome {
	t.Helper()
	var codes []int32
	var fifo *bool
	if err := s.pool.QueryRow(context.Background(), "SELECT * FROM sluice_delete($1, $2, $3, $4, $5, $6)",
		q.Name, q.ID, ids, tokens, keepExpired, now).Scan(&codes, &fifo); err != nil {
		t.Fatal(err)
	}
	if len(codes) != len(ids) {
		t.Fatalf("sluice_delete gave %v for %d receipts", codes, len(ids))
	}
	outs := make([]stores.ReceiptOutcome, len(codes))
	for i, c := range codes {
		outs[i] = receiptOfCode(c)
	}
	return outs
}

// storeDelete runs MessageDelete on several receipts of q.
func storeDelete(t *testing.T, s *Store, q *stores.Queue, ids, tokens []string, keepExpired bool, now time.Time) []stores.ReceiptOutcome {
	t.Helper()
	if fifo, ok := s.fifoOf(q.ID); !ok || fifo != q.FIFO {
		t.Fatalf("the store does not know queue %s's kind: MessageDelete would not take its path for it", q.Name)
	}
	p := &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID, KeepExpired: keepExpired, Now: now}
	for i := range ids {
		p.Receipts = append(p.Receipts, stores.Receipt{MessageID: ids[i], Token: tokens[i]})
	}
	outs, err := s.MessageDelete(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs.Outcomes) != len(ids) {
		t.Fatalf("MessageDelete gave %v for %d receipts", outs.Outcomes, len(ids))
	}
	return outs.Outcomes
}

// What sluice_delete and MessageDelete answer for a receipt, and whether
// they delete its message, are rules.JudgeReceipt and rules.DeleteApplies.
func TestSQLPinReceipt(t *testing.T) {
	s := newTestStore(t)
	for _, d := range deleters {
		for _, fifo := range []bool{false, true} {
			for _, keep := range []bool{false, true} {
				for _, c := range rulestest.ReceiptCases() {
					name := fmt.Sprintf("%s (fifo %v, keepExpired %v)", c.Name, fifo, keep)
					q := pinQueue(t, s, fifo, 0)
					id := randomName("m-")
					if c.Delivery.Found {
						id = pinMessage(t, s, q, c.Now.Add(-2*time.Hour))
						setDelivery(t, s, q, id, c.Delivery)
					}
					want := rules.JudgeReceipt(c.Delivery, c.Token, c.Now)
					if got := d.del(t, s, q, []string{id}, []string{c.Token}, keep, c.Now)[0]; got != want {
						t.Errorf("%s: %s says %v, rules.JudgeReceipt %v", name, d.name, got, want)
					}
					if c.Delivery.Found && messageExists(t, s, q, id) == rules.DeleteApplies(want, keep) {
						t.Errorf("%s: %s deleted = %v, rules.DeleteApplies %v", name, d.name, !messageExists(t, s, q, id), rules.DeleteApplies(want, keep))
					}
				}
			}
		}
	}
}

// A batch of receipts (which sluice_delete takes in one statement where it
// can, and MessageDelete in at most two) is judged as its receipts are one
// by one, in order: each by rules.JudgeReceipt, and a receipt after another
// of the same message sees what that one deleted.
func TestSQLPinReceiptInBatches(t *testing.T) {
	s := newTestStore(t)
	for _, d := range deleters {
		for _, fifo := range []bool{false, true} {
			for _, keep := range []bool{false, true} {
				for _, c := range rulestest.ReceiptCases() {
					first := rules.JudgeReceipt(c.Delivery, c.Token, c.Now)
					// after is what a later receipt of the message with token
					// tok is judged, once the first was.
					after := func(tok string) stores.ReceiptOutcome {
						if !c.Delivery.Found || rules.DeleteApplies(first, keep) {
							return stores.ReceiptGone
						}
						return rules.JudgeReceipt(c.Delivery, tok, c.Now)
					}
					batches := []struct {
						name   string
						tokens []string // of the case's message; then a current receipt of another
						want   []stores.ReceiptOutcome
					}{
						{"beside another message's current receipt", []string{c.Token}, []stores.ReceiptOutcome{first}},
						{"twice", []string{c.Token, c.Token}, []stores.ReceiptOutcome{first, after(c.Token)}},
						{"then its delivery's own", []string{c.Token, c.Delivery.Token}, []stores.ReceiptOutcome{first, after(c.Delivery.Token)}},
					}
					for _, b := range batches {
						name := fmt.Sprintf("%s, %s (fifo %v, keepExpired %v)", c.Name, b.name, fifo, keep)
						q := pinQueue(t, s, fifo, 0)
						id := randomName("m-")
						if c.Delivery.Found {
							id = pinMessage(t, s, q, c.Now.Add(-2*time.Hour))
							setDelivery(t, s, q, id, c.Delivery)
						}
						other := pinMessage(t, s, q, c.Now.Add(-time.Hour))
						setDelivery(t, s, q, other, rules.Delivery{Found: true, Token: "other", VisibleAt: c.Now.Add(time.Hour)})
						ids := []string{}
						for range b.tokens {
							ids = append(ids, id)
						}
						got := d.del(t, s, q, append(ids, other), append(b.tokens, "other"), keep, c.Now)
						want := append(b.want, stores.ReceiptCurrent)
						if !slices.Equal(got, want) {
							t.Errorf("%s: %s says %v, one by one %v", name, d.name, got, want)
						}
						deleted := false
						for _, o := range want[:len(b.tokens)] {
							deleted = deleted || rules.DeleteApplies(o, keep)
						}
						if c.Delivery.Found && messageExists(t, s, q, id) == deleted {
							t.Errorf("%s: %s deleted = %v, one by one %v", name, d.name, !messageExists(t, s, q, id), deleted)
						}
						if messageExists(t, s, q, other) {
							t.Errorf("%s: the other message's current receipt did not delete it", name)
						}
					}
				}
			}
		}
	}
}

// Every statement that decides retention (in SQL, or on a cutoff from Go)
// agrees with rules.Retained: a probe sees the message iff it is retained.
func TestSQLPinRetention(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	type probe struct {
		name     string
		inFlight bool // else the message is visible
		fifo     []bool
		sees     func(t *testing.T, q *stores.Queue, id string, now time.Time) bool
	}
	both := []bool{false, true}
	// receive runs a one-statement receive: whether it claimed a
	// message, and, when it got nothing, its NextChange.
	receive := func(sql string, args ...any) (claimed bool, next *time.Time) {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			if v[1] != "" {
				claimed = true
			} else if at, ok := v[18].(time.Time); ok {
				next = &at
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return claimed, next
	}
	claims := func(sql string, args ...any) bool {
		claimed, _ := receive(sql, args...)
		return claimed
	}
	// next runs sluice_fifo_next or sluice_standard_next_from (after seq
	// from) as the general claim path does, on the cutoff from Go.
	next := func(t *testing.T, sql string, q *stores.Queue, now time.Time, from ...any) (*time.Time, bool) {
		var retention int64
		if err := s.pool.QueryRow(ctx, `SELECT retention_us FROM queues WHERE id = $1`, q.ID).Scan(&retention); err != nil {
			t.Fatal(err)
		}
		var at *time.Time
		var receivable bool
		cut := sentAfter(rules.RetentionCutoff(time.Duration(retention)*time.Microsecond, now))
		dest := []any{&at, &receivable}
		if len(from) > 0 {
			dest = append(dest, new(int64), new(int64))
		}
		if err := s.pool.QueryRow(ctx, sql, append([]any{q.ID, now, cut}, from...)...).Scan(dest...); err != nil {
			t.Fatal(err)
		}
		return at, receivable
	}
	probes := []probe{
		{"sluice_delete", true, both, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			return sqlDeleteBatch(t, s, q, []string{id}, []string{"tok"}, false, now)[0] != stores.ReceiptGone
		}},
		{"MessageDelete", true, both, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			return storeDelete(t, s, q, []string{id}, []string{"tok"}, false, now)[0] != stores.ReceiptGone
		}},
		{"MessageChangeVisibility", true, both, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			res, err := s.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: q.Name, QueueID: q.ID,
				MessageID: id, Token: "tok", Timeout: time.Minute, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return res.Outcome != stores.ReceiptGone
		}},
		{"standardReceiveSQL", false, []bool{false}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			return claims(standardReceiveSQLs[0], q.ID, now, q.Name, 10, int64(60e6), "new", math.MaxInt32, []string{})
		}},
		{"standardReceiveSQL, after a front hint", false, []bool{false}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			return claims(standardReceiveSQLs[1], q.ID, now, q.Name, 10, int64(60e6), "new", math.MaxInt32, []string{}, int64(1))
		}},
		{"standardReceiveSQL, nothing to claim", true, []bool{false}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			claimed, next := receive(standardReceiveSQLs[0], q.ID, now, q.Name, 10, int64(60e6), "new", math.MaxInt32, []string{})
			return claimed || next != nil
		}},
		{"fifoReceiveSQL", false, []bool{true}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			return claims(fifoReceiveSQL, q.ID, now, q.Name, 10, int64(60e6), "new", false)
		}},
		{"fifoReceiveSQL, sweeping", false, []bool{true}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			return claims(fifoReceiveSQL, q.ID, now, q.Name, 10, int64(60e6), "new", true) && messageExists(t, s, q, id)
		}},
		{"MessageClaim", false, both, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			// No QueueID: the general path, which sweeps and claims on a
			// cutoff from Go.
			res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, Max: 10,
				VisibilityTimeout: time.Minute, Token: "new", Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return len(res.Messages) > 0
		}},
		{"sluice_standard_next_from", true, []bool{false}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			at, _ := next(t, standardNextSQL, q, now, int64(0))
			return at != nil
		}},
		{"sluice_standard_next_from, receivable now", false, []bool{false}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			_, receivable := next(t, standardNextSQL, q, now, int64(0))
			return receivable
		}},
		{"sluice_standard_next_from, after a front hint", false, []bool{false}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			_, receivable := next(t, standardNextSQL, q, now, int64(1))
			return receivable
		}},
		{"sluice_fifo_next, receivable now", false, []bool{true}, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			_, receivable := next(t, fifoNextSQL, q, now)
			return receivable
		}},
		{"QueueStats", false, both, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return st.Visible > 0
		}},
		{"MessageMove", false, both, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			dst := pinQueue(t, s, q.FIFO, 0)
			res, err := s.MessageMove(ctx, &stores.MessageMoveParams{NewID: uuid.NewString, FromName: q.Name, FromID: q.ID, ToName: dst.Name, Max: 10, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return res.Moved > 0
		}},
		{"Maintain", false, both, func(t *testing.T, q *stores.Queue, id string, now time.Time) bool {
			if err := s.Maintain(ctx, &stores.MaintainParams{Now: now}); err != nil {
				t.Fatal(err)
			}
			return messageExists(t, s, q, id)
		}},
	}
	for _, p := range probes {
		for _, fifo := range p.fifo {
			for _, c := range rulestest.RetentionCases() {
				q := pinQueue(t, s, fifo, c.Retention)
				id := pinMessage(t, s, q, c.SentAt)
				d := rules.Delivery{VisibleAt: c.Now.Add(-time.Second)}
				if p.inFlight {
					d = rules.Delivery{Token: "tok", VisibleAt: c.Now.Add(time.Minute)}
				}
				setDelivery(t, s, q, id, d)
				want := rules.Retained(c.SentAt, c.Retention, c.Now)
				if got := p.sees(t, q, id, c.Now); got != want {
					t.Errorf("%s (fifo %v), %s: sees the message = %v, rules.Retained %v", p.name, fifo, c.Name, got, want)
				}
			}
		}
	}
}

// sendFIFOSQL's dedup lookup is rules.Duplicate, and the SequenceNumber a
// duplicate echoes (made in SQL from seqBaseSQL) is the original's.
func TestSQLPinDedup(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	send := func(q *stores.Queue, window time.Duration, now time.Time) stores.SendResult {
		t.Helper()
		res, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{newMsg("b", "g", "dedup")}, DedupWindow: window, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return res.Results[0]
	}
	for _, c := range rulestest.WindowCases() {
		q := pinQueue(t, s, true, 0)
		first := send(q, time.Hour, c.Start) // the marker, made at Start
		var seq int64
		if err := s.pool.QueryRow(ctx, `SELECT seq FROM messages WHERE queue_id = $1 AND message_id = $2`, q.ID, first.MessageID).Scan(&seq); err != nil {
			t.Fatal(err)
		}
		if first.SequenceNumber != rules.SequenceNumber(uint64(seq)) {
			t.Errorf("%s: SequenceNumber %s, want rules.SequenceNumber(%d) = %s", c.Name, first.SequenceNumber, seq, rules.SequenceNumber(uint64(seq)))
		}
		again := send(q, c.Window, c.Now)
		want := rules.Duplicate(c.Start, c.Window, c.Now)
		if again.Duplicate != want {
			t.Errorf("%s: sendFIFOSQL says duplicate = %v, rules.Duplicate %v", c.Name, again.Duplicate, want)
		}
		if want && (again.MessageID != first.MessageID || again.SequenceNumber != first.SequenceNumber) {
			t.Errorf("%s: the duplicate echoes %+v, want %+v", c.Name, again, first)
		}
	}
}

// The claims' receive-count comparison (standardClaimSQL,
// sluice_fifo_claim and the one-statement receives) is rules.Redrives.
func TestSQLPinRedrive(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for _, fifo := range []bool{false, true} {
		for _, c := range rulestest.RedriveCases() {
			src := pinQueue(t, s, fifo, 0)
			dlqName := randomName("pin-gone-")
			if c.DLQExists {
				dlqName = pinQueue(t, s, fifo, 0).Name
			}
			var r *stores.Redrive
			if c.Redrive != nil {
				r = &stores.Redrive{MaxReceiveCount: c.Redrive.MaxReceiveCount, QueueName: dlqName}
				if c.Redrive.QueueName == c.Queue {
					r.QueueName = src.Name
				}
			}
			id := pinMessage(t, s, src, rulestest.T0)
			if _, err := s.pool.Exec(ctx, `UPDATE messages SET receive_count = $2 WHERE message_id = $1`, id, c.Received); err != nil {
				t.Fatal(err)
			}
			res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: src.Name, QueueID: src.ID, Max: 1,
				VisibilityTimeout: time.Minute, Token: "new", Redrive: r, Now: rulestest.T0.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			want := rules.Redrives(r, src.Name, c.DLQExists, c.Received)
			if got := res.Redriven == 1; got != want || len(res.Messages) == 1 == want {
				t.Errorf("%s (fifo %v): redriven %d, delivered %d; rules.Redrives %v", c.Name, fifo, res.Redriven, len(res.Messages), want)
			}
		}
	}
}

// The partial unique index move_tasks_active, which keeps concurrent
// creates to one active task per source, and MoveTaskCreate's check are
// rules.MoveTaskActive.
func TestSQLPinActiveMoveTask(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	task := func(source, status string) *stores.MoveTask {
		return &stores.MoveTask{Handle: randomName("h-"), SourceName: "q", SourceArn: source, Status: status,
			StartedAt: rulestest.T0, UpdatedAt: rulestest.T0, PacedTo: rulestest.T0}
	}
	for status := range rulestest.MoveTaskStatuses() {
		want := rules.MoveTaskActive(status)
		source := randomName("arn-")
		for range 2 { // straight into the table: only the index can refuse
			_, err := s.pool.Exec(ctx, `INSERT INTO move_tasks (`+taskCols+`, version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1)`,
				taskArgs(task(source, status))...)
			if err != nil && !isUniqueViolation(err) {
				t.Fatal(err)
			}
		}
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM move_tasks WHERE source_arn = $1`, source).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if got := n == 1; got != want {
			t.Errorf("status %q: %d tasks stored for one source; rules.MoveTaskActive %v", status, n, want)
		}
		// MoveTaskCreate's own check, before the index.
		source = randomName("arn-")
		if err := s.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: task(source, status)}); err != nil {
			t.Fatal(err)
		}
		err := s.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: task(source, stores.MoveTaskRunning)})
		if got := errors.Is(err, stores.ErrMoveTaskRunning); got != want {
			t.Errorf("status %q: MoveTaskCreate after it: %v; rules.MoveTaskActive %v", status, err, want)
		}
	}
}

// Maintain's tombstone statement is rules.TombstoneKept.
func TestSQLPinTombstones(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for _, c := range rulestest.TombstoneCases() {
		q := pinQueue(t, s, false, 0)
		if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name, ID: q.ID, Now: c.Start}); err != nil {
			t.Fatal(err)
		}
		if err := s.Maintain(ctx, &stores.MaintainParams{Now: c.Now}); err != nil {
			t.Fatal(err)
		}
		var kept bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queue_tombstones WHERE name = $1)`, q.Name).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if want := rules.TombstoneKept(c.Start, c.Now); kept != want {
			t.Errorf("%s: Maintain kept the tombstone = %v, rules.TombstoneKept %v", c.Name, kept, want)
		}
	}
}

// A claim repeated with an attempt id reads the stored attempt and
// messages right for rules.AttemptReplays.
func TestReplayFollowsTheRule(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for _, c := range rulestest.AttemptCases() {
		q := pinQueue(t, s, true, 0)
		ids := make([]string, len(c.Deliveries))
		for i, d := range c.Deliveries {
			m := newMsg("b", fmt.Sprintf("g%d", i), "")
			if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
				Messages: []stores.NewMessage{m}, Now: c.CreatedAt.Add(-time.Hour)}); err != nil {
				t.Fatal(err)
			}
			ids[i] = m.ID
			if !d.Found {
				if _, err := s.pool.Exec(ctx, `DELETE FROM messages WHERE message_id = $1`, m.ID); err != nil {
					t.Fatal(err)
				}
				continue
			}
			received := 0
			if d.Token != "" {
				received = 1
			}
			if _, err := s.pool.Exec(ctx, `UPDATE messages SET token = $2, visible_at = $3, receive_count = $4 WHERE message_id = $1`,
				m.ID, d.Token, d.VisibleAt, received); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO receive_attempts (queue_id, attempt_id, token, message_ids, created_at, expires_at, visible_until)
			VALUES ($1, 'attempt', $2, $3, $4, $5, $6)`, q.ID, c.Token, ids, c.CreatedAt, c.CreatedAt.Add(c.Window), c.Left); err != nil {
			t.Fatal(err)
		}
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
			VisibilityTimeout: time.Minute, Token: "new", AttemptID: "attempt", AttemptWindow: c.Window, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		replayed := len(res.Messages) > 0 && res.Messages[0].Token == c.Token
		if want := rules.AttemptReplays(c.CreatedAt, c.Window, c.Token, c.Left, c.Deliveries, c.Now); replayed != want {
			t.Errorf("%s: replayed = %v (%d messages), rules.AttemptReplays %v", c.Name, replayed, len(res.Messages), want)
		}
		if replayed && len(res.Messages) != len(ids) {
			t.Errorf("%s: replayed %d messages, want %d", c.Name, len(res.Messages), len(ids))
		}
	}
}
