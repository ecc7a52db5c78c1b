package orderedbatch

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// A transaction that read the record before a purge or deletion made here
// may report it after that was remembered: the older state must not win.
func TestQueueCacheKeepsNewerState(t *testing.T) {
	var c queueCache
	rec := func(gen, version int64, live bool) *queueRec {
		return &queueRec{Queue: stores.Queue{Name: "q", ID: "inc", Version: version}, Gen: gen, Live: live}
	}
	now := time.Now()
	c.put(rec(1, 1, true), now)
	c.put(rec(0, 1, true), now) // read before the purge
	if q := c.get("q", "inc", queueFresh); q == nil || q.Gen != 1 {
		t.Fatalf("after a late report of generation 0: %+v, want generation 1", q)
	}
	c.put(rec(1, 2, true), now) // an attribute change
	c.put(rec(1, 1, true), now)
	if q := c.get("q", "inc", queueFresh); q == nil || q.Queue.Version != 2 {
		t.Fatalf("after a late report of version 1: %+v, want version 2", q)
	}
	c.put(rec(1, 2, false), now) // deleted here
	c.put(rec(1, 2, true), now)
	if q := c.get("q", "inc", queueFresh); q != nil {
		t.Fatalf("after a late report of the live queue over its deletion: %+v, want nothing", q)
	}
	c.put(&queueRec{Queue: stores.Queue{Name: "q", ID: "inc2", Version: 1}, Live: true}, now) // recreated
	if q := c.get("q", "inc2", queueFresh); q == nil {
		t.Fatal("the new incarnation is not remembered")
	}
	if q := c.get("q", "inc2", time.Nanosecond); q != nil {
		t.Errorf("a record older than fresh was returned: %+v", q)
	}
}
