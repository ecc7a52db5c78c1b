package orderedbatch_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// QueueFootprint names every collection that keeps documents per queue,
// and matches all of a queue's documents in them.
func TestQueueFootprint(t *testing.T) {
	docs := memdocs.New()
	e := newInstance(t, docs, orderedbatch.Options{Name: "memdocs"})
	e.send(e.a, "g")
	e.send(e.a, "h")
	e.claim(e.a)
	fp := orderedbatch.QueueFootprint(e.q.Name, e.q.ID)
	var covered []string
	for _, q := range fp {
		covered = append(covered, q.Collection)
	}
	for _, tb := range orderedbatch.Schema() {
		if slices.ContainsFunc(tb.Fields, func(c docstore.Column) bool { return c.Name == "inc" }) && !slices.Contains(covered, tb.Collection) {
			t.Errorf("%s keeps documents per queue (an inc field) but is not in the footprint", tb.Collection)
		}
	}
	for _, q := range fp {
		got, err := docs.Query(e.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		all, err := docs.Query(e.ctx, docstore.Query{Collection: q.Collection})
		if err != nil {
			t.Fatal(err)
		}
		// The only queue: every document of these collections is its own.
		if len(got) != len(all) {
			t.Errorf("%s: the footprint matches %d documents of the queue's %d", q.Collection, len(got), len(all))
		}
		if len(got) == 0 && slices.Contains([]string{"queues", "groups", "messages", "dedup"}, q.Collection) {
			t.Errorf("%s: the footprint matches nothing after two sends and a receive", q.Collection)
		}
	}
}
