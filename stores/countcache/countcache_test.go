package countcache

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

func TestReuseGrowsWithTheQueueUpToAMinute(t *testing.T) {
	for _, c := range []struct {
		messages int64
		want     time.Duration
	}{
		{0, 0},
		{From - 1, 0},
		{From, 600 * time.Millisecond},
		{100_000, 6 * time.Second},
		{1_000_000, time.Minute},
		{50_000_000, time.Minute},
	} {
		// Every state counts toward the size.
		st := &stores.QueueStats{Visible: c.messages / 2, InFlight: c.messages / 4, Delayed: c.messages - c.messages/2 - c.messages/4}
		if got := ReuseFor(st); got != c.want {
			t.Errorf("ReuseFor(%d messages) = %v, want %v", c.messages, got, c.want)
		}
	}
}

func TestCacheReusesWithinItsWindowOnly(t *testing.T) {
	var c Cache
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	deep := &stores.QueueStats{Visible: 100_000}
	c.Put("inc-1", t0, deep)
	c.Put("inc-2", t0, &stores.QueueStats{Visible: From - 1})
	for _, g := range []struct {
		id   string
		at   time.Time
		want bool
	}{
		{"inc-1", t0, true},
		{"inc-1", t0.Add(6*time.Second - time.Nanosecond), true},
		{"inc-1", t0.Add(6 * time.Second), false},
		{"inc-1", t0.Add(-time.Nanosecond), false}, // a clock behind the count's
		{"inc-2", t0, false},                       // too small to keep
		{"inc-3", t0, false},
	} {
		st, ok := c.Get(g.id, g.at)
		if ok != g.want || (ok && *st != *deep) {
			t.Errorf("Get(%s, t0%+v) = %+v, %v; want reused %v", g.id, g.at.Sub(t0), st, ok, g.want)
		}
	}
	// A count below From replaces a deep one: the queue is counted again.
	c.Put("inc-1", t0.Add(time.Second), &stores.QueueStats{Visible: 5})
	if _, ok := c.Get("inc-1", t0.Add(2*time.Second)); ok {
		t.Error("a deep count was reused after a count below From replaced it")
	}
	c.Put("inc-1", t0, deep)
	c.Put("inc-4", t0, deep)
	// Entries that ran out go at the next Put.
	c.Put("inc-6", t0.Add(time.Hour), deep)
	if n := len(c.byQueue); n != 1 {
		t.Errorf("entries kept after every other ran out = %d, want 1", n)
	}
}
