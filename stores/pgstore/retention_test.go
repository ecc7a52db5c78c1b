package pgstore

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
)

// A Standard dead letter keeps its SentAt, so it can expire behind younger
// messages of its dead-letter queue; Maintain deletes it there all the same,
// and only once it is due. A FIFO dead letter is enqueued anew
// (rules.DeadLettered): it is due an hour after the move.
func TestMaintainSweepsDeadLettersBehindYoungerOnes(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, fifo := range []bool{false, true} {
		create := func(prefix string, retention time.Duration) *stores.Queue {
			name := randomName(prefix)
			if fifo {
				name += ".fifo"
			}
			res, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{
				Name: name, ID: randomName("id-"), FIFO: fifo, Attributes: map[string]string{}, Retention: retention,
			}, Now: t0.Add(-time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			return res.Queue
		}
		src, dlq := create("src-", 0), create("dlq-", time.Hour)
		old := pinMessage(t, s, src, t0)
		young := pinMessage(t, s, dlq, t0.Add(50*time.Minute))
		for i, at := range []time.Duration{54 * time.Minute, 55 * time.Minute} { // received once, then moved
			res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: src.Name, QueueID: src.ID, Max: 1, Token: "t" + strconv.Itoa(i),
				Redrive: &stores.Redrive{MaxReceiveCount: 1, QueueName: dlq.Name}, Now: t0.Add(at)})
			if err != nil {
				t.Fatal(err)
			}
			if moved := i == 1; res.Redriven != btoi(moved) {
				t.Fatalf("fifo %v: claim %d redrove %d", fifo, i, res.Redriven)
			}
		}
		maintain := func(at time.Duration) {
			if err := s.Maintain(ctx, &stores.MaintainParams{Now: t0.Add(at)}); err != nil {
				t.Fatal(err)
			}
		}
		maintain(59 * time.Minute)
		if !messageExists(t, s, dlq, old) || !messageExists(t, s, dlq, young) {
			t.Errorf("fifo %v: Maintain before the dead letter is due deleted a message", fifo)
		}
		maintain(61 * time.Minute) // a Standard dead letter is due; the younger message is not
		if kept := messageExists(t, s, dlq, old); kept != fifo {
			t.Errorf("fifo %v: at 61 min the dead letter is kept: %v, want %v", fifo, kept, fifo)
		}
		if !messageExists(t, s, dlq, young) {
			t.Errorf("fifo %v: Maintain deleted the younger message, which is not due", fifo)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Maintain's sweeps read what is due, not the queues: beside a 20,000
// message backlog per queue, with a few due messages at each front and 50
// due moved ones behind (on the FIFO queue each in a group of its own, as
// in a dead-letter queue), no plan node reads more than a few hundred rows
// or buffers, no statement passes over more than a few rows it does not
// delete, and exactly the due messages go.
func TestMaintainReadsWhatIsDue(t *testing.T) {
	a := openAudited(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const backlog, due, moved = 20000, 5, 50
	exec := func(sql string, args ...any) { t.Helper(); a.exec(t, ctx, sql, args...) }
	for _, q := range []*stores.Queue{a.std, a.fifo} {
		group := "''"
		if q.FIFO {
			group = "'g' || (i % 100)"
		}
		exec(`INSERT INTO messages (queue_id, message_id, seq, group_id, body, sent_at, visible_at)
			SELECT $1, 'b-' || $1 || '-' || i, nextval('message_seq'), `+group+`, 'backlog', now(), now()
			FROM generate_series(1, $2::int) i`, q.ID, backlog)
		movedGroup := "''"
		if q.FIFO {
			movedGroup = "'dead-' || i"
		}
		exec(`INSERT INTO messages (queue_id, message_id, seq, group_id, body, sent_at, visible_at, moved)
			SELECT $1, 'moved-' || $1 || '-' || i, nextval('message_seq'), `+movedGroup+`, 'moved', now() - interval '5 days', now(), true
			FROM generate_series(1, $2::int) i`, q.ID, moved)
		exec(`UPDATE messages SET sent_at = now() - interval '5 days', body = 'front' WHERE message_id IN (
			SELECT message_id FROM messages WHERE queue_id = $1 ORDER BY seq LIMIT $2)`, q.ID, due)
	}
	exec(`INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
		SELECT queue_id, group_id, min(seq), now() FROM messages WHERE queue_id = $1 GROUP BY 1, 2`, a.fifo.ID)
	exec("ANALYZE messages")
	exec("ANALYZE fifo_groups")

	a.recording.Store(true)
	if err := a.s.Maintain(ctx, &stores.MaintainParams{}); err != nil {
		t.Fatal(err)
	}
	a.recording.Store(false)
	a.check(t, nil)
	// A delete that looks up rows of other groups and filters them out
	// reads as few rows per node as the rest, but one pass of them grows
	// with groups × moved messages.
	filtered := 0
	for _, m := range regexp.MustCompile(`Rows Removed by Filter: (\d+)`).FindAllStringSubmatch(strings.Join(a.plans, "\n"), -1) {
		n, _ := strconv.Atoi(m[1])
		filtered += n
	}
	if filtered > moved {
		t.Errorf("Maintain's statements filtered out %d rows, more than the %d moved messages", filtered, moved)
	}

	for _, q := range []*stores.Queue{a.std, a.fifo} {
		rows, err := a.s.pool.Query(ctx, `SELECT body, count(*) FROM messages WHERE queue_id = $1 GROUP BY 1 ORDER BY 1`, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		type tally struct {
			Body  string
			Count int
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[tally])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Body != "backlog" || got[0].Count != backlog-due {
			t.Errorf("fifo %v: left %+v, want only the %d retained backlog messages", q.FIFO, got, backlog-due)
		}
	}
}

// Migration 20 marks the stored messages that are older than a message
// before them in their queue (moved before the column existed), and only
// those.
func TestMigrationMarksMessagesOutOfOrder(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "order", false)
	other := createQueue(t, s, "other", false)
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	// In seq order: sent at 0, 10, 5 (behind 10), 10 (a tie), 20, 1
	// (behind all); the other queue's message at 0 does not count.
	var want []string
	for i, minute := range []int{0, 10, 5, 10, 20, 1} {
		id := pinMessage(t, s, q, t0.Add(time.Duration(minute)*time.Minute))
		if i == 2 || i == 5 {
			want = append(want, id)
		}
		if i == 3 {
			pinMessage(t, s, other, t0)
		}
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	body := ms[19].sql
	i := strings.Index(body, "UPDATE messages m SET moved = true")
	if ms[19].version != 20 || i < 0 {
		t.Fatal("migration 0020 has no UPDATE messages m SET moved = true")
	}
	j := strings.Index(body[i:], ";")
	if _, err := s.pool.Exec(ctx, body[i:i+j]); err != nil {
		t.Fatal(err)
	}
	got := columnStrings(t, s, "SELECT message_id FROM messages WHERE moved ORDER BY seq")
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("marked %v, want %v (the third and sixth of the queue)", got, want)
	}
}

// A sweep run in passing reads about its limit, however long the due front:
// beside 3,000 due messages at the front of each queue, a sweep with a
// limit of 100 deletes 100 of them and no plan node reads more than a few
// hundred rows.
func TestSweepsInPassingReadTheirLimit(t *testing.T) {
	a := openAudited(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const dueFront, fresh, limit = 3000, 100, 100
	exec := func(sql string, args ...any) { t.Helper(); a.exec(t, ctx, sql, args...) }
	for _, q := range []*stores.Queue{a.std, a.fifo} {
		group := "''"
		if q.FIFO {
			group = "'g' || (i % 10)"
		}
		exec(`INSERT INTO messages (queue_id, message_id, seq, group_id, body, sent_at, visible_at)
			SELECT $1, 'b-' || $1 || '-' || i, nextval('message_seq'), `+group+`, 'b',
				CASE WHEN i <= $2 THEN now() - interval '5 days' ELSE now() END, now()
			FROM generate_series(1, $2::int + $3::int) i`, q.ID, dueFront, fresh)
	}
	exec(`INSERT INTO fifo_groups (queue_id, group_id, head_seq, avail_at)
		SELECT queue_id, group_id, min(seq), now() FROM messages WHERE queue_id = $1 GROUP BY 1, 2`, a.fifo.ID)
	exec("ANALYZE messages")
	exec("ANALYZE fifo_groups")

	cut := time.Now().Add(-4 * 24 * time.Hour)
	a.recording.Store(true)
	exec(`SELECT sluice_standard_sweep($1, $2, $3)`, a.std.ID, cut, limit)
	exec(`SELECT sluice_fifo_sweep($1, $2, $3)`, a.fifo.ID, cut, limit)
	a.recording.Store(false)
	a.check(t, nil)
	for _, q := range []*stores.Queue{a.std, a.fifo} {
		var left int
		if err := a.s.pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE queue_id = $1 AND sent_at <= $2`, q.ID, cut).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left != dueFront-limit {
			t.Errorf("fifo %v: %d due messages left, want %d", q.FIFO, left, dueFront-limit)
		}
	}
}
