package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// A deep queue's count is reused for as long as countReuse gives it, on
// the callers' clock; a queue below countReuseFrom is counted every time;
// a purge here is seen at once.
func TestDeepQueueCountsAreReused(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	queue := func(name string, messages int) *stores.Queue {
		t.Helper()
		res, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{
			Name: name, ID: randomName("id-"), Attributes: map[string]string{}, Retention: 4 * 24 * time.Hour,
		}, Now: t0.Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO messages (queue_id, message_id, seq, body, sent_at, visible_at)
			SELECT $1, 'm-' || i, nextval('message_seq'), 'deep', $2, $2 FROM generate_series(1, $3::int) i`,
			res.Queue.ID, t0.Add(-time.Minute), messages); err != nil {
			t.Fatal(err)
		}
		return res.Queue
	}
	// The messages counted, whatever their state.
	count := func(q *stores.Queue, now time.Time) int64 {
		t.Helper()
		st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return st.Visible + st.InFlight + st.Delayed
	}
	sendOne := func(q *stores.Queue, now time.Time) {
		t.Helper()
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: []stores.NewMessage{newMsg("one more", "", "")}, Now: now}); err != nil {
			t.Fatal(err)
		}
	}

	deep := queue(randomName("deep-"), countReuseFrom)
	reuse := countReuse(&stores.QueueStats{Visible: countReuseFrom})
	if want := time.Duration(countReuseFrom) * countReusePerMsg; reuse != want || reuse <= 0 {
		t.Fatalf("countReuse(%d messages) = %v, want %v", countReuseFrom, reuse, want)
	}
	if n := count(deep, t0); n != countReuseFrom {
		t.Fatalf("first count = %d, want %d", n, countReuseFrom)
	}
	sendOne(deep, t0)
	if n := count(deep, t0.Add(reuse-time.Millisecond)); n != countReuseFrom {
		t.Errorf("count within %v of the last = %d, want it reused (%d)", reuse, n, countReuseFrom)
	}
	if n := count(deep, t0.Add(reuse)); n != countReuseFrom+1 {
		t.Errorf("count %v after the last = %d, want a new count (%d)", reuse, n, countReuseFrom+1)
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM messages WHERE queue_id = $1 AND message_id = 'm-1'", deep.ID); err != nil {
		t.Fatal(err)
	}
	if n := count(deep, t0.Add(-time.Millisecond)); n != countReuseFrom {
		t.Errorf("count before the last one's instant = %d, want a new count (%d)", n, countReuseFrom)
	}
	if err := s.QueuePurge(ctx, &stores.QueuePurgeParams{Name: deep.Name, ID: deep.ID, Now: t0.Add(reuse)}); err != nil {
		t.Fatal(err)
	}
	if n := count(deep, t0.Add(reuse+time.Millisecond)); n != 0 {
		t.Errorf("count right after a purge = %d, want 0", n)
	}

	shallow := queue(randomName("shallow-"), countReuseFrom-1)
	if n := count(shallow, t0); n != countReuseFrom-1 {
		t.Fatalf("first count = %d, want %d", n, countReuseFrom-1)
	}
	sendOne(shallow, t0)
	if n := count(shallow, t0); n != countReuseFrom {
		t.Errorf("count of a queue of %d messages at the same instant = %d, want a new count (%d)", countReuseFrom-1, n, countReuseFrom)
	}
}

func TestCountReuseGrowsWithTheQueueUpToAMinute(t *testing.T) {
	for _, c := range []struct {
		messages int64
		want     time.Duration
	}{
		{0, 0},
		{countReuseFrom - 1, 0},
		{100_000, 6 * time.Second},
		{1_000_000, time.Minute},
		{50_000_000, time.Minute},
	} {
		if got := countReuse(&stores.QueueStats{Visible: c.messages / 2, InFlight: c.messages / 4, Delayed: c.messages - c.messages/2 - c.messages/4}); got != c.want {
			t.Errorf("countReuse(%d messages) = %v, want %v", c.messages, got, c.want)
		}
	}
}
