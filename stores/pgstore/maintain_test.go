package pgstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

// Maintain drops what expired by the given time, and only that; the fake
// clock (params.Now) decides every comparison.
func TestMaintainWithFakeClock(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) // far from the database's clock
	res, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{
		Name: "m.fifo", ID: "inc-1", FIFO: true, Attributes: map[string]string{}, Retention: time.Hour,
	}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	q := res.Queue
	if !q.CreatedAt.Equal(t0) {
		t.Errorf("CreatedAt = %v, want %v", q.CreatedAt, t0)
	}
	send := func(now time.Time, body string) stores.SendResult {
		r, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{newMsg(body, "g", "dedup-"+body)}, DedupWindow: 5 * time.Minute, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return r.Results[0]
	}
	first := send(t0, "a")
	if len(first.SequenceNumber) != 20 || first.SequenceNumber[0] != '1' {
		t.Errorf("first SequenceNumber = %s, want 20 digits", first.SequenceNumber)
	}
	if dup := send(t0.Add(4*time.Minute), "a"); !dup.Duplicate || dup.MessageID != first.MessageID {
		t.Errorf("send within the window = %+v, want a duplicate of %+v", dup, first)
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	count := func(sql string) int {
		var n int
		if err := s.pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM dedup"); n != 0 {
		t.Errorf("dedup markers after the window = %d, want 0", n)
	}
	if n := count("SELECT count(*) FROM messages"); n != 1 {
		t.Errorf("messages within retention = %d, want 1", n)
	}
	st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID, Now: t0.Add(59 * time.Minute)})
	if err != nil || st.Visible != 1 {
		t.Errorf("stats before retention ends = %+v, %v; want 1 visible", st, err)
	}
	st, err = s.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID, Now: t0.Add(time.Hour)})
	if err != nil || st.Visible != 0 {
		t.Errorf("stats at retention's end = %+v, %v; want 0 visible", st, err)
	}
	if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name, ID: q.ID, Now: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(2*time.Hour + rules.TombstoneTTL - time.Second)}); err != nil {
		t.Fatal(err)
	}
	if n := count("SELECT count(*) FROM queue_tombstones"); n != 1 {
		t.Errorf("tombstones before TTL = %d, want 1", n)
	}
	_, err = s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: q.Name, ID: "inc-2", FIFO: true},
		RecreateCooldown: time.Minute, Now: t0.Add(2*time.Hour + 30*time.Second)})
	if !errors.Is(err, stores.ErrQueueDeletedRecently) {
		t.Errorf("recreate within the cooldown: %v, want ErrQueueDeletedRecently", err)
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(2*time.Hour + rules.TombstoneTTL)}); err != nil {
		t.Fatal(err)
	}
	if n := count("SELECT count(*) FROM queue_tombstones"); n != 0 {
		t.Errorf("tombstones after TTL = %d, want 0", n)
	}
	if n := count("SELECT count(*) FROM messages"); n != 0 {
		t.Errorf("messages after delete = %d, want 0", n)
	}
}

// Deleting a queue is one short transaction: its rows stay behind, out of
// reach, until Maintain removes them a page at a time; a queue created again
// under the name never sees them, and the record of the deleted incarnation
// goes once nothing is left and the deletion is old enough.
func TestQueueDeleteLeavesRowsToMaintain(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	q := createQueue(t, s, "big.fifo", true)
	const n = remainsPage*2 + 5 // more than one page
	for i := 0; i < n; i += 10 {
		var msgs []stores.NewMessage
		for j := i; j < min(i+10, n); j++ {
			msgs = append(msgs, newMsg("m", "g"+strconv.Itoa(j%7), "d"+strconv.Itoa(j)))
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs,
			DedupWindow: 5 * time.Minute, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		var c int
		if err := s.pool.QueryRow(ctx, sql, args...).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name, ID: q.ID, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if c := count("SELECT count(*) FROM messages WHERE queue_id = $1", q.ID); c != n {
		t.Fatalf("right after the deletion %d messages are stored, want all %d (removed later)", c, n)
	}
	again := createQueue(t, s, "big.fifo", true)
	if again.ID == q.ID {
		t.Fatal("the new incarnation has the old id")
	}
	res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: again.Name, QueueID: again.ID, Max: 10,
		VisibilityTimeout: time.Minute, Token: "t"})
	if err != nil || len(res.Messages) != 0 {
		t.Fatalf("the new incarnation claimed %d messages (err %v), want none", len(res.Messages), err)
	}
	if _, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
		VisibilityTimeout: time.Minute, Token: "t"}); !errors.Is(err, stores.ErrQueueNotFound) {
		t.Fatalf("a claim on the deleted incarnation: %v, want ErrQueueNotFound", err)
	}

	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"messages", "fifo_groups", "dedup"} {
		if c := count("SELECT count(*) FROM "+table+" WHERE queue_id = $1", q.ID); c != 0 {
			t.Errorf("after Maintain %d rows of the deleted incarnation are left in %s", c, table)
		}
	}
	if c := count("SELECT count(*) FROM queue_remains WHERE queue_id = $1", q.ID); c != 1 {
		t.Errorf("the deleted incarnation's record went after a minute (%d left); it stays remainsKept", c)
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if c := count("SELECT count(*) FROM queue_remains WHERE queue_id = $1", q.ID); c != 0 {
		t.Errorf("the deleted incarnation's record is still there after two hours")
	}
}

// Migration 0005 lists, once, the incarnations whose rows outlived their
// queue before it existed (found by skipping through the indexes).
func TestRemainsFromBeforeTheMigrationAreListed(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "live", false)
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{newMsg("m", "", "")}}); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO messages (queue_id, message_id, seq, group_id, body, sent_at, visible_at)
			VALUES ('gone-1', 'orphan-1', nextval('message_seq'), '', 'b', now(), now())`,
		`INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at) VALUES ('gone-2', 'g', 1, now())`,
		`INSERT INTO dedup (queue_id, scope, dedup_id, message_id, seq, created_at, expires_at)
			VALUES ('gone-3', '', 'd', 'x', '1', now(), now())`,
	} {
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	body := ms[4].sql
	i := strings.Index(body, "INSERT INTO queue_remains")
	if ms[4].version != 5 || i < 0 {
		t.Fatal("migration 0005 has no INSERT INTO queue_remains")
	}
	if _, err := s.pool.Exec(ctx, body[i:]); err != nil {
		t.Fatal(err)
	}
	got := columnStrings(t, s, "SELECT queue_id FROM queue_remains ORDER BY 1")
	if strings.Join(got, ",") != "gone-1,gone-2,gone-3" {
		t.Errorf("listed remains = %v, want the three dead incarnations and not the live queue", got)
	}
}

// Queues created and deleted all day: one pass drops the entries of every
// drained incarnation past remainsKept, however many (each used to cost a
// statement per table, 200 a pass: 50 incarnations).
func TestOnePassRetiresEveryDrainedIncarnation(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	const n = 120
	ids := make([]string, n)
	for i := range n {
		q := createQueue(t, s, "gone-"+strconv.Itoa(i), i%2 == 1)
		ids[i] = q.ID
		if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name, ID: q.ID, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(remainsKept + time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM queue_remains WHERE queue_id = ANY($1)", ids).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left > 0 {
		t.Errorf("one pass left %d of %d drained incarnations in queue_remains", left, n)
	}
}

// Many small queues deleted with messages in them: a page spans
// incarnations, so one pass drains and retires them all (a page per table
// and incarnation was 50 incarnations a pass).
func TestOnePassDrainsManyDeletedIncarnations(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	const n = 120
	ids := make([]string, n)
	for i := range n {
		fifo := i%2 == 1
		name := "full-" + strconv.Itoa(i)
		if fifo {
			name += ".fifo"
		}
		q := createQueue(t, s, name, fifo)
		ids[i] = q.ID
		var msgs []stores.NewMessage
		for j := range 3 {
			if fifo {
				msgs = append(msgs, newMsg("m", "g", "d"+strconv.Itoa(j)))
			} else {
				msgs = append(msgs, newMsg("m", "", ""))
			}
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs,
			DedupWindow: 5 * time.Minute, Now: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name, ID: q.ID, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(remainsKept + time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"messages", "fifo_groups", "dedup", "queue_remains"} {
		var left int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE queue_id = ANY($1)", ids).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left > 0 {
			t.Errorf("one pass left %d rows of %d deleted incarnations in %s", left, n, table)
		}
	}
}

// A deleted queue's incarnation leaves nothing in the instance that
// deleted it, and incarnations deleted elsewhere are bounded.
func TestPerIncarnationStateIsReleased(t *testing.T) {
	dsn, schema := newSchema(t)
	s := openSchema(t, dsn, schema)
	ctx := context.Background()
	size := func(m *sync.Map) int {
		n := 0
		m.Range(func(any, any) bool { n++; return true })
		return n
	}
	// churn creates n queues, receives from each here and deletes each
	// through deleter.
	churn := func(prefix string, n int, deleter *Store) {
		t.Helper()
		for i := range n {
			q := createQueue(t, s, prefix+strconv.Itoa(i), i%2 == 1)
			if _, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
				VisibilityTimeout: time.Minute, Token: "t"}); err != nil {
				t.Fatal(err)
			}
			if err := deleter.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name, ID: q.ID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	churn("churn-", 50, s)
	if f, w := size(&s.fifoByID), size(&s.lastSweep); f != 0 || w != 0 {
		t.Errorf("after 50 queues deleted here: %d incarnations' kinds and %d last sweeps kept, want none", f, w)
	}

	defer func(old int64) { perIncarnationLimit = old }(perIncarnationLimit)
	perIncarnationLimit = 10
	churn("elsewhere-", 30, openSchema(t, dsn, schema)) // deleted through another instance
	if f, w := size(&s.fifoByID), size(&s.lastSweep); f > 10 || w > 10 {
		t.Errorf("30 queues deleted elsewhere left %d kinds and %d last sweeps here, past the limit of 10", f, w)
	}
}
