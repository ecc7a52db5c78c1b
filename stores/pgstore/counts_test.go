package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/countcache"
)

// A deep queue's count is reused for as long as countcache.ReuseFor gives
// it, on the callers' clock; a queue below countcache.From is counted every
// time; a purge through another instance is seen at once.
func TestDeepQueueCountsAreReused(t *testing.T) {
	dsn, schema := newSchema(t)
	s, other := openSchema(t, dsn, schema), openSchema(t, dsn, schema)
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

	deep := queue(randomName("deep-"), countcache.From)
	reuse := countcache.ReuseFor(&stores.QueueStats{Visible: countcache.From})
	if want := time.Duration(countcache.From) * countcache.PerMessage; reuse != want || reuse <= 0 {
		t.Fatalf("countcache.ReuseFor(%d messages) = %v, want %v", countcache.From, reuse, want)
	}
	if n := count(deep, t0); n != countcache.From {
		t.Fatalf("first count = %d, want %d", n, countcache.From)
	}
	sendOne(deep, t0)
	if n := count(deep, t0.Add(reuse-time.Millisecond)); n != countcache.From {
		t.Errorf("count within %v of the last = %d, want it reused (%d)", reuse, n, countcache.From)
	}
	if n := count(deep, t0.Add(reuse)); n != countcache.From+1 {
		t.Errorf("count %v after the first = %d, want a new count (%d)", reuse, n, countcache.From+1)
	}
	// Before the count's instant (a clock behind it): counted again, the
	// message sent at t0 as delayed.
	at := t0.Add(-time.Millisecond)
	if n := count(deep, at); n != countcache.From+1 {
		t.Errorf("count before the last one's instant = %d, want a new count (%d)", n, countcache.From+1)
	}
	sendOne(deep, t0)
	reuse = countcache.ReuseFor(&stores.QueueStats{Delayed: countcache.From + 1})
	if n := count(deep, at.Add(reuse)); n != countcache.From+2 {
		t.Errorf("count %v after the last = %d, want a new count (%d)", reuse, n, countcache.From+2)
	}
	// Within that count's reuse, a purge through another instance.
	if err := other.QueuePurge(ctx, &stores.QueuePurgeParams{Name: deep.Name, ID: deep.ID, Now: at.Add(reuse)}); err != nil {
		t.Fatal(err)
	}
	if n := count(deep, at.Add(reuse+time.Millisecond)); n != 0 {
		t.Errorf("count right after a purge through another instance = %d, want 0", n)
	}

	shallow := queue(randomName("shallow-"), countcache.From-1)
	if n := count(shallow, t0); n != countcache.From-1 {
		t.Fatalf("first count = %d, want %d", n, countcache.From-1)
	}
	sendOne(shallow, t0)
	if n := count(shallow, t0); n != countcache.From {
		t.Errorf("count of a queue of %d messages at the same instant = %d, want a new count (%d)", countcache.From-1, n, countcache.From)
	}
}
