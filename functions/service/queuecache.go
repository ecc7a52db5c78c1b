package service

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// queueCache keeps recently read queue records so that a message action
// costs one store call instead of two. It is safe to lose and safe to be
// stale for its short TTL:
//   - every store call is guarded by the queue's incarnation ID, so a queue
//     deleted elsewhere makes the call fail with QueueDoesNotExist;
//   - a deleted name cannot be re-created for 60 seconds (the
//     QueueDeletedRecently rule), far longer than the TTL, so a cached ID
//     never stands for a newer queue of the same name;
//   - attribute changes made through another instance show after at most
//     the TTL (AWS documents up to 60 s); changes made through this
//     instance invalidate the entry at once.
type queueCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]cachedQueue
}

type cachedQueue struct {
	q       *stores.Queue
	fetched time.Time
}

// maxCachedQueues bounds the cache; past it the cache starts over.
const maxCachedQueues = 10000

func newQueueCache(ttl time.Duration) *queueCache {
	return &queueCache{ttl: ttl, entries: map[string]cachedQueue{}}
}

func (c *queueCache) get(name string) *stores.Queue {
	if c.ttl <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[name]
	if !ok || time.Since(e.fetched) > c.ttl {
		return nil
	}
	return e.q
}

func (c *queueCache) put(q *stores.Queue) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedQueues {
		c.entries = map[string]cachedQueue{}
	}
	c.entries[q.Name] = cachedQueue{q: q, fetched: time.Now()}
}

func (c *queueCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, name)
}
