package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/stores"
)

// The statistics of a queue's tables often say "empty": autoanalyze looks
// at a drained queue, and a backlog arrives before it looks again. Every
// index on messages starts with queue_id, so on such statistics the
// estimates of the candidate plans tie at one row, and a plan that walks the
// whole queue can win. This test builds that state (a 20,000-message
// backlog per queue, in 2,000 groups on the FIFO queue, behind statistics
// of empty tables, autovacuum off),
// runs each hot operation once with auto_explain (ANALYZE) on, and fails
// when any plan node of any statement, nested ones included, reads more
// than a few hundred rows: each operation touches at most ten messages and
// their groups.
func TestHotStatementsStaySmallOnDrainedStatistics(t *testing.T) {
	a := openAudited(t, 4)
	s, std, fifo := a.s, a.std, a.fifo
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const backlog = 20000
	exec := func(sql string, args ...any) { t.Helper(); a.exec(t, ctx, sql, args...) }
	fill := func(groups int) {
		for _, q := range []*stores.Queue{std, fifo} {
			group := "''"
			if q.FIFO {
				group = "'g' || (i % " + strconv.Itoa(groups) + ")"
			}
			exec(`INSERT INTO messages (queue_id, message_id, seq, group_id, body, sent_at, visible_at)
				SELECT $1, 'b-' || $1 || '-' || i, nextval('message_seq'), `+group+`, 'backlog', now(), now()
				FROM generate_series(1, $2::int) i`, q.ID, backlog)
		}
		exec(`INSERT INTO dedup (queue_id, scope, dedup_id, message_id, seq, created_at, expires_at)
			SELECT queue_id, '', 'd-' || message_id, message_id, seq::text, now(), now() + interval '5 minutes'
			FROM messages WHERE queue_id = $1`, fifo.ID)
		exec(`INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
			SELECT queue_id, group_id, min(seq), now() FROM messages WHERE queue_id = $1 GROUP BY 1, 2`, fifo.ID)
	}
	// Full tables, drained, analyzed empty; then the backlog comes back.
	// The first fill puts the FIFO queue's messages in the three groups the
	// operations below use, so that each of those groups has 6,667 dead
	// index entries before its head (deleted, not vacuumed), as a busy
	// group has between two vacuums.
	fill(3)
	exec("DELETE FROM messages")
	exec("DELETE FROM fifo_groups")
	exec("DELETE FROM dedup")
	exec("ANALYZE messages")
	exec("ANALYZE fifo_groups")
	exec("ANALYZE dedup")
	fill(2000)
	// A few messages past retention at the front of each queue and at the
	// head of group g1, for the sweeps that run in passing.
	for _, q := range []*stores.Queue{std, fifo} {
		exec(`UPDATE messages SET sent_at = now() - interval '5 days' WHERE message_id IN (
			SELECT message_id FROM messages WHERE queue_id = $1 AND group_id IN ('', 'g1') ORDER BY seq LIMIT 5)`, q.ID)
	}

	a.recording.Store(true)
	hotOperations(t, s, std, fifo)
	a.emptyClaimBehindHeldHeads(t)
	a.recording.Store(false)
	a.check(t, frontWalk)
}

// The planner keeps a statement's plan until the statistics of its tables
// change, and plans for the table it sees: a plan made while a table was
// tiny (autovacuum had just truncated a drained queue's table to no
// pages) was a sequential scan, which, once a backlog came back, read the
// whole table on every call until the next autoanalyze: 950 buffers per
// Standard delete and 2x PostgreSQL's CPU per lifecycle on the bench. This
// test makes every hot statement's plan on one connection while the tables
// hold a few rows, then grows them to a 20,000-message backlog per queue
// (no ANALYZE, so the plans stay) and audits the plans as above.
func TestHotStatementsStaySmallAfterPlansOnTinyTables(t *testing.T) {
	a := openAudited(t, 1)
	s, std, fifo := a.s, a.std, a.fifo
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	exec := func(sql string, args ...any) { t.Helper(); a.exec(t, ctx, sql, args...) }
	fill := func(prefix string, n, groups int) {
		for _, q := range []*stores.Queue{std, fifo} {
			group := "''"
			if q.FIFO {
				group = "'g' || (i % " + strconv.Itoa(groups) + ")"
			}
			exec(`INSERT INTO messages (queue_id, message_id, seq, group_id, body, sent_at, visible_at)
				SELECT $1, $3 || $1 || '-' || i, nextval('message_seq'), `+group+`, 'backlog', now(), now()
				FROM generate_series(1, $2::int) i`, q.ID, n, prefix)
		}
		exec(`INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
			SELECT queue_id, group_id, min(seq), now() FROM messages WHERE queue_id = $1 GROUP BY 1, 2
			ON CONFLICT (queue_id, group_id) DO UPDATE SET head_seq = least(fifo_groups.head_seq, excluded.head_seq)`, fifo.ID)
	}
	fill("tiny-", 30, 3)
	for _, table := range []string{"messages", "fifo_groups", "dedup"} {
		exec("VACUUM ANALYZE " + table)
	}
	hotOperations(t, s, std, fifo) // the plans, made on tables of a page or two
	a.emptyClaimBehindHeldHeads(t)
	fill("backlog-", 20000, 2000)
	exec(`INSERT INTO dedup (queue_id, scope, dedup_id, message_id, seq, created_at, expires_at)
		SELECT queue_id, '', 'd-' || message_id, message_id, seq::text, now(), now() + interval '5 minutes'
		FROM messages WHERE queue_id = $1`, fifo.ID)
	a.recording.Store(true)
	hotOperations(t, s, std, fifo)
	a.emptyClaimBehindHeldHeads(t)
	a.recording.Store(false)
	a.check(t, frontWalk)
}

// audited is a store whose sessions send every plan, nested statements
// included, with its rows and buffers (auto_explain), while recording.
type audited struct {
	s         *Store
	std, fifo *stores.Queue // a Standard and a FIFO queue, empty
	recording atomic.Bool
	mu        sync.Mutex
	plans     []string
}

func openAudited(t *testing.T, conns int32) *audited {
	t.Helper()
	a := &audited{}
	dsn, schema := newSchema(t)
	dsn = withParams(dsn, "session_preload_libraries=auto_explain&auto_explain.log_min_duration=0"+
		"&auto_explain.log_nested_statements=on&auto_explain.log_analyze=on&auto_explain.log_timing=off"+
		"&auto_explain.log_buffers=on"+
		"&client_min_messages=log")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Open(ctx, dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: conns, VacuumInterval: -1,
		OnNotice: func(n *pgconn.Notice) {
			if a.recording.Load() && strings.Contains(n.Message, "plan:") {
				a.mu.Lock()
				a.plans = append(a.plans, n.Message)
				a.mu.Unlock()
			}
		}})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" && os.Getenv("CI") != "true" {
		// Loading auto_explain per session takes a superuser (the
		// throwaway server of make test is one).
		t.Skipf("DATABASE_URL's user may not load auto_explain (%v): the plan audit needs a superuser", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	a.s = s
	a.std, a.fifo = createQueue(t, s, "audit", false), createQueue(t, s, "audit.fifo", true)
	for _, table := range []string{"messages", "fifo_groups", "dedup"} {
		a.exec(t, context.Background(), "ALTER TABLE "+table+" SET (autovacuum_enabled = false)")
	}
	return a
}

func (a *audited) exec(t *testing.T, ctx context.Context, sql string, args ...any) {
	t.Helper()
	if _, err := a.s.pool.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// hotOperations runs each hot operation once on std and fifo, which hold a
// backlog: sends, short-poll receives, receives with a redrive policy and
// with an attempt id, visibility changes, single and batch deletes,
// message moves, a receive that gets nothing and a send into a new group.
func hotOperations(t *testing.T, s *Store, std, fifo *stores.Queue) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dlqs := map[*stores.Queue]*stores.Queue{}
	for _, q := range []*stores.Queue{std, fifo} {
		group := ""
		if q.FIFO {
			group = "g1"
		}
		var batch []stores.NewMessage
		for i := range 10 {
			m := newMsg("new", group, "")
			if q.FIFO {
				m.DedupID = randomName("d")
				m.GroupID = fmt.Sprintf("g%d", i%3)
			}
			batch = append(batch, m)
		}
		for _, msgs := range [][]stores.NewMessage{batch[:1], batch[1:]} {
			if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
				Messages: msgs, DedupWindow: 5 * time.Minute}); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
		claim, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
			VisibilityTimeout: time.Minute, Token: randomName("t")})
		if err != nil || len(claim.Messages) == 0 {
			t.Fatalf("claim: %d messages, %v", len(claim.Messages), err)
		}
		// The claim's other paths: with a redrive policy, and with a
		// receive attempt id (FIFO) repeated.
		dlq := createQueue(t, s, randomName("dlq")+map[bool]string{true: ".fifo"}[q.FIFO], q.FIFO)
		dlqs[q] = dlq
		more := &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
			VisibilityTimeout: time.Minute, Token: randomName("t"),
			Redrive: &stores.Redrive{MaxReceiveCount: 5, QueueName: dlq.Name}}
		if q.FIFO {
			more.AttemptID, more.AttemptWindow = "attempt", 5*time.Minute
		}
		for range 2 {
			if c, err := s.MessageClaim(ctx, more); err != nil || len(c.Messages) == 0 {
				t.Fatalf("claim with a redrive: %d messages, %v", len(c.Messages), err)
			}
		}
		first := claim.Messages[0]
		if _, err := s.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: q.Name,
			QueueID: q.ID, MessageID: first.ID, Token: first.Token, Timeout: 2 * time.Minute,
			MaxSinceReceive: 12 * time.Hour}); err != nil {
			t.Fatalf("change visibility: %v", err)
		}
		var receipts []stores.Receipt
		for _, m := range claim.Messages {
			receipts = append(receipts, stores.Receipt{MessageID: m.ID, Token: m.Token})
		}
		for _, rs := range [][]stores.Receipt{receipts[:1], receipts[1:]} {
			if len(rs) == 0 {
				continue
			}
			if _, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
				Receipts: rs}); err != nil {
				t.Fatalf("delete: %v", err)
			}
		}
	}
	// Message moves: ten of the backlog to the dead-letter queue and back.
	for _, q := range []*stores.Queue{std, fifo} {
		dlq := dlqs[q]
		for _, mv := range []*stores.MessageMoveParams{
			{FromName: q.Name, FromID: q.ID, ToName: dlq.Name, Max: 10, NewID: uuid.NewString},
			{FromName: dlq.Name, FromID: dlq.ID, ToName: q.Name, Max: 10, NewID: uuid.NewString},
		} {
			res, err := s.MessageMove(ctx, mv)
			if err != nil || res.Moved != 10 {
				t.Fatalf("move %s → %s: %+v, %v", mv.FromName, mv.ToName, res, err)
			}
		}
		// One message, no sweep due (the first claim swept): FIFO's
		// single-group statement.
		if one, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
			VisibilityTimeout: time.Minute, Token: randomName("t")}); err != nil || len(one.Messages) != 1 {
			t.Fatalf("claim of one: %+v, %v", one, err)
		}
		// A receive that gets nothing (the dead-letter queue is empty
		// again), and a send into a group the queue has no row for.
		if none, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: dlq.Name, QueueID: dlq.ID, Max: 1,
			VisibilityTimeout: time.Minute, Token: randomName("t")}); err != nil || len(none.Messages) != 0 {
			t.Fatalf("claim on the empty queue: %+v, %v", none, err)
		}
		if q.FIFO {
			m := newMsg("new", randomName("group-"), randomName("d"))
			if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
				Messages: []stores.NewMessage{m}, DedupWindow: 5 * time.Minute}); err != nil {
				t.Fatalf("send into a new group: %v", err)
			}
		}
	}
}

// emptyClaimBehindHeldHeads runs a FIFO claim that gets nothing because
// every group's head is in flight: the claim then asks when the next
// message becomes visible and whether one is receivable (sluice_fifo_next),
// which must probe the groups, not walk the queue's messages behind them.
// Only the claim is recorded; the groups are put in flight and let go
// around it.
func (a *audited) emptyClaimBehindHeldHeads(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recording := a.recording.Swap(false)
	hold := func(until string) {
		t.Helper()
		a.exec(t, ctx, `UPDATE messages m SET visible_at = `+until+` FROM fifo_groups f
			WHERE f.queue_id = $1 AND m.queue_id = f.queue_id AND m.group_id = f.group_id AND m.seq = f.head_seq`, a.fifo.ID)
		a.exec(t, ctx, `UPDATE fifo_groups SET avail_at = `+until+` WHERE queue_id = $1`, a.fifo.ID)
	}
	hold("now() + interval '1 hour'")
	a.recording.Store(recording)
	none, err := a.s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: a.fifo.Name, QueueID: a.fifo.ID, Max: 1,
		VisibilityTimeout: time.Minute, Token: randomName("t")})
	a.recording.Store(false)
	if err != nil || len(none.Messages) != 0 || none.NextChange.IsZero() {
		t.Fatalf("claim beside held heads: %d messages, next change %v, %v", len(none.Messages), none.NextChange, err)
	}
	hold("now()")
	a.recording.Store(recording)
}

// check fails when any plan recorded reads more than a few hundred rows
// or buffers in one node (each operation touches at most ten messages and
// their groups), or is compiled.
func (a *audited) check(t *testing.T, exempt *regexp.Regexp) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	plans := a.plans
	if len(plans) < 10 {
		t.Fatalf("auto_explain sent %d plans; is it installed?", len(plans))
	}
	rowsRe := regexp.MustCompile(`actual rows=(\d+) loops=(\d+)`)
	filterRe := regexp.MustCompile(`Rows Removed by Filter: (\d+)`)
	const most = 500
	for _, plan := range plans {
		if exempt != nil && exempt.MatchString(plan) {
			// Known, and left: the retention probes (once a second per
			// queue and instance) and a message move's last check (an
			// operator's task) start at the queue's front and step over the dead index
			// entries there; the first scan to meet a dead entry marks it,
			// so each costs one heap visit once. Standard sends do not
			// commit in sequence order, so no lower bound on the oldest
			// message's seq can be cached safely; a FIFO queue's lower bound
			// (its oldest head) would take an index of fifo_groups that
			// every change of a group's row writes to.
			continue
		}
		worst := 0
		for _, m := range rowsRe.FindAllStringSubmatch(plan, -1) {
			rows, _ := strconv.Atoi(m[1])
			loops, _ := strconv.Atoi(m[2])
			worst = max(worst, rows*loops)
		}
		for _, m := range filterRe.FindAllStringSubmatch(plan, -1) {
			n, _ := strconv.Atoi(m[1])
			worst = max(worst, n)
		}
		worst = max(worst, scanBuffers(plan))
		if worst > most {
			t.Errorf("a statement reads %d rows or buffers:\n%s", worst, plan)
		}
		// The store's sessions run with enable_seqscan off: a statement
		// left with a sequential scan costs so much on paper that
		// PostgreSQL compiles it (JIT) on every call, milliseconds each.
		if strings.Contains(plan, "JIT:") {
			t.Errorf("a statement is compiled (JIT) on every call:\n%s", plan)
		}
	}
	if testing.Verbose() && os.Getenv("SLUICE_SHOW_PLANS") != "" {
		t.Log(strings.Join(plans, "\n"))
	}
	t.Logf("%d plans checked", len(plans))
}

var buffersRe = regexp.MustCompile(`Buffers: shared hit=(\d+)(?: read=(\d+))?`)

// scanBuffers is the most buffers one scan of a table or index in the plan
// touched (the nodes above a scan, and a function's call, add up what is
// below them, so they are not counted). Dead index entries that a walk
// steps over show here, not in its rows.
func scanBuffers(plan string) int {
	worst, node := 0, ""
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "(cost=") {
			node = line
			continue
		}
		m := buffersRe.FindStringSubmatch(line)
		if m == nil || !strings.Contains(node, "Scan") || !strings.Contains(node, " on ") {
			continue
		}
		for _, other := range []string{"Function Scan", "CTE Scan", "Subquery Scan"} {
			if strings.Contains(node, other) {
				m = nil
				break
			}
		}
		if m != nil {
			hit, _ := strconv.Atoi(m[1])
			read, _ := strconv.Atoi(m[2])
			worst = max(worst, hit+read)
		}
	}
	return worst
}

// frontWalk matches the walks that start at a queue's front: the
// retention sweeps' probe of the oldest message (sluice_standard_sweep,
// sluice_fifo_sweep) and a message move's check that nothing is left
// (MessageMove). A move's
// batch (sluice_move_candidates) is audited: planned on tiny tables, it
// once sorted the whole backlog for every step.
var frontWalk = regexp.MustCompile(`Query Text: SELECT (1 FROM \(SELECT sent_at FROM messages WHERE queue_id = p_queue AND seq > 0\s+ORDER BY seq LIMIT 1\)|NOT EXISTS \(SELECT 1 FROM messages WHERE queue_id = \$1 AND seq > 0 AND visible_at)`)
