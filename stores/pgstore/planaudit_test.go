package pgstore

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	dsn, schema := newSchema(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	dsn += sep + "session_preload_libraries=auto_explain&auto_explain.log_min_duration=0" +
		"&auto_explain.log_nested_statements=on&auto_explain.log_analyze=on&auto_explain.log_timing=off" +
		"&client_min_messages=log"
	var (
		recording atomic.Bool
		mu        sync.Mutex
		plans     []string
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Open(ctx, dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 4, VacuumInterval: -1,
		OnNotice: func(n *pgconn.Notice) {
			if recording.Load() && strings.Contains(n.Message, "plan:") {
				mu.Lock()
				plans = append(plans, n.Message)
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })

	std := createQueue(t, s, "audit", false)
	fifo := createQueue(t, s, "audit.fifo", true)
	const backlog = 20000
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, table := range []string{"messages", "fifo_groups", "dedup"} {
		exec("ALTER TABLE " + table + " SET (autovacuum_enabled = false)")
	}
	fill := func() {
		for _, q := range []*stores.Queue{std, fifo} {
			group := "''"
			if q.FIFO {
				group = "'g' || (i % 2000)"
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
	fill()
	exec("DELETE FROM messages")
	exec("DELETE FROM fifo_groups")
	exec("DELETE FROM dedup")
	exec("ANALYZE messages")
	exec("ANALYZE fifo_groups")
	exec("ANALYZE dedup")
	fill()

	recording.Store(true)
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
			MaxSinceFirstReceive: 12 * time.Hour}); err != nil {
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
	recording.Store(false)

	mu.Lock()
	defer mu.Unlock()
	if len(plans) < 10 {
		t.Fatalf("auto_explain sent %d plans; is it installed?", len(plans))
	}
	rowsRe := regexp.MustCompile(`actual rows=(\d+) loops=(\d+)`)
	filterRe := regexp.MustCompile(`Rows Removed by Filter: (\d+)`)
	const most = 500
	for _, plan := range plans {
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
		if worst > most {
			t.Errorf("a statement reads %d rows:\n%s", worst, plan)
		}
	}
	if testing.Verbose() && os.Getenv("SLUICE_SHOW_PLANS") != "" {
		t.Log(strings.Join(plans, "\n"))
	}
	t.Logf("%d plans checked", len(plans))
}
