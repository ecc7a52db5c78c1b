package pgstore

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// Counting a queue's messages reads every page they are on (their state is
// in columns no index holds, so that claims stay HOT updates): about 1.2 µs
// of PostgreSQL's time per message, 1.1-1.2 s for a million messages of
// 1 KiB. A count of a deep queue is therefore reused for a while in
// proportion to its size, so that polling the counts of a deep queue
// (autoscalers, dashboards) costs each instance at most a few per cent of
// one PostgreSQL CPU per queue, however often it is asked. SQS documents
// that its own counts may not settle until a minute after producers stop;
// a reused count is never older than that.
const (
	countReuseFrom   = 10_000                // messages; a smaller queue is counted every time
	countReusePerMsg = 60 * time.Microsecond // 50 times the count's cost per message
	countReuseMax    = time.Minute
)

// countReuse is how long a count may be reused: 0 below countReuseFrom
// messages, then countReusePerMsg per message, up to countReuseMax.
func countReuse(st *stores.QueueStats) time.Duration {
	n := st.Visible + st.InFlight + st.Delayed
	if n < countReuseFrom {
		return 0
	}
	return min(time.Duration(n)*countReusePerMsg, countReuseMax)
}

// countCache holds this instance's reusable counts of deep queues, by
// queue incarnation. Times are the callers' (QueueStatsParams.Now), so a
// count is reused only by calls whose now lies in [at, until).
type countCache struct {
	mu      sync.Mutex
	byQueue map[string]countEntry
}

type countEntry struct {
	name      string
	stats     stores.QueueStats
	at, until time.Time
}

func (c *countCache) get(id string, now time.Time) (*stores.QueueStats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byQueue[id]
	if !ok || now.Before(e.at) || !now.Before(e.until) {
		return nil, false
	}
	st := e.stats
	return &st, true
}

// put keeps a count made at now when it is worth reusing, and drops the
// entries that have run out.
func (c *countCache) put(id, name string, now time.Time, st *stores.QueueStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.byQueue {
		if !now.Before(e.until) {
			delete(c.byQueue, k)
		}
	}
	d := countReuse(st)
	if d <= 0 {
		delete(c.byQueue, id)
		return
	}
	if c.byQueue == nil {
		c.byQueue = map[string]countEntry{}
	}
	c.byQueue[id] = countEntry{name: name, stats: *st, at: now, until: now.Add(d)}
}

// forget drops the counts of the queue called name (a purge or a deletion
// here makes them wrong at once, and the caller may look right after).
func (c *countCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.byQueue {
		if e.name == name {
			delete(c.byQueue, k)
		}
	}
}
