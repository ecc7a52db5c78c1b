package orderedbatch_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// recorder notes the shape of every query the protocol runs.
type recorder struct {
	docstore.Store
	book *book
}

// book is what the recorders of one test noted.
type book struct {
	mu     sync.Mutex
	shapes map[string]noted
}

// noted is a query and, for a sum, the field it adds up (which Firestore
// wants in the index, after the others).
type noted struct {
	q   docstore.Query
	sum string
}

func (r *recorder) note(q docstore.Query, sum string) {
	r.book.mu.Lock()
	defer r.book.mu.Unlock()
	r.book.shapes[shape(q)+" sum="+sum] = noted{q, sum}
}

func (r *recorder) Query(ctx context.Context, q docstore.Query) ([]*docstore.Doc, error) {
	r.note(q, "")
	return r.Store.Query(ctx, q)
}

func (r *recorder) Count(ctx context.Context, q docstore.Query) (int64, error) {
	r.note(q, "")
	return r.Store.Count(ctx, q)
}

func (r *recorder) Sum(ctx context.Context, q docstore.Query, f string) (int64, error) {
	r.note(q, f)
	return r.Store.Sum(ctx, q, f)
}

// shape is a query without its values: collection, equality fields, range
// field, order.
func shape(q docstore.Query) string {
	var eq []string
	rng := ""
	for _, f := range q.Filters {
		switch f.Op {
		case docstore.Eq, docstore.In:
			eq = append(eq, f.Field)
		default:
			rng = f.Field
		}
	}
	sort.Strings(eq)
	eq = slices.Compact(eq)
	var ord []string
	for _, o := range q.Order {
		ord = append(ord, fmt.Sprintf("%s:%v", o.Field, o.Desc))
	}
	return fmt.Sprintf("%s eq=%v range=%s order=%v", q.Collection, eq, rng, ord)
}

// covered says whether Firestore can serve q: from single-field indexes
// when it involves one field, or from a declared composite index whose
// fields are q's equality fields (in any order) followed by its range or
// order field.
func covered(q docstore.Query, sum string, idx []docstore.Index) bool {
	fields := map[string]bool{}
	var eq []string
	var tail []docstore.Order
	for _, f := range q.Filters {
		fields[f.Field] = true
		if f.Op == docstore.Eq || f.Op == docstore.In {
			if !slices.Contains(eq, f.Field) {
				eq = append(eq, f.Field)
			}
		}
	}
	for _, o := range q.Order {
		fields[o.Field] = true
		tail = append(tail, o)
	}
	for _, f := range q.Filters {
		if f.Op != docstore.Eq && f.Op != docstore.In && len(tail) == 0 {
			tail = append(tail, docstore.Order{Field: f.Field})
		}
	}
	if sum != "" {
		fields[sum] = true
		tail = append(tail, docstore.Order{Field: sum})
	}
	if len(fields) <= 1 {
		return true
	}
	for _, ix := range idx {
		if ix.Collection != q.Collection || len(ix.Fields) != len(eq)+len(tail) {
			continue
		}
		ok := true
		for i, f := range ix.Fields {
			if i < len(eq) {
				ok = ok && slices.Contains(eq, f.Field) && !slices.ContainsFunc(tail, func(o docstore.Order) bool { return o.Field == f.Field })
			} else {
				ok = ok && f == tail[i-len(eq)]
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestQueriesCovered runs the conformance suite (with its Maintain passes)
// on a backend that records every query, and checks each against
// orderedbatch.Indexes, so that a query added without its index fails
// here rather than on Firestore in production.
func TestQueriesCovered(t *testing.T) {
	b := &book{shapes: map[string]noted{}}
	t.Run("suite", func(t *testing.T) {
		conformance.Run(t, conformance.Harness{
			Areas: []string{"Queues", "Messages", "Visibility", "Retention", "FIFO", "DeadLetter", "MoveTasks", "Purge", "Differential"},
			NewStore: func(t *testing.T) stores.Store {
				return orderedbatch.New(&recorder{Store: memdocs.New(), book: b}, orderedbatch.Options{})
			},
		})
		// Maintain runs every housekeeping query.
		st := orderedbatch.New(&recorder{Store: memdocs.New(), book: b}, orderedbatch.Options{})
		if err := st.Maintain(context.Background(), &stores.MaintainParams{}); err != nil {
			t.Fatal(err)
		}
	})
	var missing []string
	for s, n := range b.shapes {
		if !covered(n.q, n.sum, orderedbatch.Indexes()) {
			missing = append(missing, s)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("queries no declared index covers:\n%s", strings.Join(missing, "\n"))
	}
	if len(b.shapes) < 10 {
		t.Errorf("only %d query shapes recorded: the recorder is not in the path", len(b.shapes))
	}
	t.Logf("%d query shapes", len(b.shapes))
}
