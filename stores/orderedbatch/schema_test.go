package orderedbatch_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// writeBook is what the checkers of one test noted.
type writeBook struct {
	mu     sync.Mutex
	writes int
	bad    map[string]bool
}

// checker notes every write that strays from orderedbatch.Schema.
type checker struct {
	docstore.Store
	*writeBook
}

func (c *checker) check(k docstore.Key, f docstore.Fields) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	var tab *docstore.Table
	for _, t := range orderedbatch.Schema() {
		if t.Collection == k.Collection {
			tab = &t
		}
	}
	if tab == nil {
		c.bad[fmt.Sprintf("collection %q is not declared", k.Collection)] = true
		return
	}
	for name, v := range f {
		var want docstore.Type
		for _, col := range tab.Fields {
			if col.Name == name {
				want = col.Type
			}
		}
		var got docstore.Type
		switch v.(type) {
		case string:
			got = docstore.String
		case int64:
			got = docstore.Int64
		case bool:
			got = docstore.Bool
		case time.Time:
			got = docstore.Time
		case []byte:
			got = docstore.Bytes
		}
		if want == 0 || got != want {
			c.bad[fmt.Sprintf("%s.%s: wrote %T, declared %v", k.Collection, name, v, want)] = true
		}
	}
}

func (c *checker) RunTx(ctx context.Context, fn func(ctx context.Context, tx docstore.Tx) error) error {
	return c.Store.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error { return fn(ctx, checkTx{tx, c}) })
}

type checkTx struct {
	docstore.Tx
	c *checker
}

func (t checkTx) Set(k docstore.Key, f docstore.Fields) error {
	t.c.check(k, f)
	return t.Tx.Set(k, f)
}

func (t checkTx) Create(k docstore.Key, f docstore.Fields) error {
	t.c.check(k, f)
	return t.Tx.Create(k, f)
}

// TestWritesKeepSchema runs much of the conformance suite (and Maintain)
// on a backend that checks every write against orderedbatch.Schema, so
// that a field added without its declaration fails here rather than on
// Spanner, whose tables have a column per declared field.
func TestWritesKeepSchema(t *testing.T) {
	b := &writeBook{bad: map[string]bool{}}
	t.Run("suite", func(t *testing.T) {
		conformance.Run(t, conformance.Harness{
			Areas: []string{"Queues", "Messages", "Visibility", "Retention", "FIFO", "Deduplication", "DeadLetter", "MoveTasks", "Purge"},
			NewStore: func(t *testing.T) stores.Store {
				return orderedbatch.New(&checker{Store: memdocs.New(), writeBook: b}, orderedbatch.Options{})
			},
		})
		st := orderedbatch.New(&checker{Store: memdocs.New(), writeBook: b}, orderedbatch.Options{})
		if err := st.Maintain(context.Background(), &stores.MaintainParams{}); err != nil {
			t.Fatal(err)
		}
	})
	var bad []string
	for s := range b.bad {
		bad = append(bad, s)
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("writes that stray from orderedbatch.Schema:\n%s", strings.Join(bad, "\n"))
	}
	if b.writes < 100 {
		t.Errorf("only %d writes checked: the checker is not in the path", b.writes)
	}
	t.Logf("%d writes checked", b.writes)
}
