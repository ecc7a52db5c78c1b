// Package countcache keeps a deep queue's message counts for reuse, for
// the stores whose count reads every message: PostgreSQL reads every page
// the queue's messages are on (about 1.2 µs of its time per message, 1.1-1.2
// s for a million messages of 1 KiB), Firestore bills a read per 1,000
// index entries an aggregation counts, Spanner scans the index range. A
// count of a deep queue is reused for a while in proportion to its size, so
// that polling a deep queue's counts (autoscalers, dashboards) costs each
// instance a bounded share of the backend however often it is asked. SQS
// documents that its own counts may not settle until a minute after
// producers stop; a reused count is never older than that.
package countcache

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores"
)

const (
	// From is the smallest count reused: a smaller queue is counted every
	// time, so its counts are exact.
	From = 10_000
	// PerMessage is how long a count is reused per message counted: 50
	// times what PostgreSQL takes to count one, so that counting one queue
	// however often it is asked takes about 2 % of a PostgreSQL CPU.
	PerMessage = 60 * time.Microsecond
	// Max bounds the reuse: SQS's counts settle within a minute.
	Max = time.Minute
)

// ReuseFor is how long a count may be reused: 0 below From messages, then
// PerMessage per message, up to Max.
func ReuseFor(st *stores.QueueStats) time.Duration {
	n := st.Visible + st.InFlight + st.Delayed
	if n < From {
		return 0
	}
	return min(time.Duration(n)*PerMessage, Max)
}

// Cache holds an instance's reusable counts, by queue (see Put). Times
// are the callers' (QueueStatsParams.Now), so a count made at t is reused by
// calls whose now lies in [t, t+ReuseFor). The zero Cache is ready; it is
// safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	byQueue map[string]entry
}

type entry struct {
	stats     stores.QueueStats
	at, until time.Time
}

// Get returns the count of the queue key to reuse at now, if any.
func (c *Cache) Get(key string, now time.Time) (*stores.QueueStats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byQueue[key]
	if !ok || now.Before(e.at) || !now.Before(e.until) {
		return nil, false
	}
	st := e.stats
	return &st, true
}

// Put keeps a count of the queue key made at now when it is worth reusing,
// and drops the entries that have run out. A store's key names what a
// count holds for: the queue's incarnation and its last purge, so that a
// purge through any instance is counted at once.
func (c *Cache) Put(key string, now time.Time, st *stores.QueueStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.byQueue {
		if !now.Before(e.until) {
			delete(c.byQueue, k)
		}
	}
	d := ReuseFor(st)
	if d <= 0 {
		delete(c.byQueue, key)
		return
	}
	if c.byQueue == nil {
		c.byQueue = map[string]entry{}
	}
	c.byQueue[key] = entry{stats: *st, at: now, until: now.Add(d)}
}
