package orderedbatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/countcache"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// A deep queue's counts are reused for as long as countcache gives them,
// without an aggregation query, and a purge (a new generation) is counted
// at once; a queue below countcache.From is counted every time.
func TestDeepQueueCountsAreReused(t *testing.T) {
	ctx := context.Background()
	o := &ops{Store: memdocs.New()}
	s := orderedbatch.New(o, orderedbatch.Options{Name: "memdocs"})
	t0 := time.Now()
	queue := func(name string, messages int) *stores.Queue {
		t.Helper()
		res, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Now: t0.Add(-time.Minute),
			Queue: &stores.Queue{Name: name, ID: name + "-0123456789", Attributes: map[string]string{}}})
		if err != nil {
			t.Fatal(err)
		}
		q := res.Queue
		for i := 0; i < messages; i += 10 {
			var ms []stores.NewMessage
			for j := i; j < min(i+10, messages); j++ {
				ms = append(ms, stores.NewMessage{ID: fmt.Sprintf("00000000-0000-0000-0000-%012d", j), Body: "deep"})
			}
			if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: ms, Now: t0.Add(-time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		return q
	}
	// count gives the messages counted, whatever their state, and the
	// aggregation queries it took.
	count := func(q *stores.Queue, now time.Time) (n int64, aggregations int) {
		t.Helper()
		o.takeAggregations()
		st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return st.Visible + st.InFlight + st.Delayed, o.takeAggregations()
	}
	deep := queue("deep", countcache.From)
	reuse := countcache.ReuseFor(&stores.QueueStats{Visible: countcache.From})
	if n, aggs := count(deep, t0); n != countcache.From || aggs == 0 {
		t.Fatalf("first count = %d in %d aggregations, want %d from the backend", n, aggs, countcache.From)
	}
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: deep.Name, QueueID: deep.ID, Now: t0,
		Messages: []stores.NewMessage{{ID: "00000000-0000-0000-0001-000000000000", Body: "one more"}}}); err != nil {
		t.Fatal(err)
	}
	if n, aggs := count(deep, t0.Add(reuse-time.Millisecond)); n != countcache.From || aggs != 0 {
		t.Errorf("count within %v of the last = %d in %d aggregations, want %d reused, no aggregation", reuse, n, aggs, countcache.From)
	}
	if n, aggs := count(deep, t0.Add(reuse)); n != countcache.From+1 || aggs == 0 {
		t.Errorf("count %v after the last = %d in %d aggregations, want a new count (%d)", reuse, n, aggs, countcache.From+1)
	}
	if err := s.QueuePurge(ctx, &stores.QueuePurgeParams{Name: deep.Name, ID: deep.ID, Now: t0.Add(reuse)}); err != nil {
		t.Fatal(err)
	}
	if n, _ := count(deep, t0.Add(reuse+time.Millisecond)); n != 0 {
		t.Errorf("count right after a purge = %d, want 0", n)
	}

	shallow := queue("shallow", countcache.From-1)
	count(shallow, t0)
	if n, aggs := count(shallow, t0); n != countcache.From-1 || aggs == 0 {
		t.Errorf("second count of a queue of %d messages = %d in %d aggregations, want a new count", countcache.From-1, n, aggs)
	}
}
