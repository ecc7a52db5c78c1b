// Package docstoretest is the conformance suite every docstore.Store
// backend passes, in one line from its own tests:
//
//	func TestDocstore(t *testing.T) {
//		docstoretest.Run(t, func(t *testing.T) docstore.Store { return memdocs.New() })
//	}
//
// Each test opens a fresh, empty store, which the suite closes when the
// test ends. The suite holds a backend to every promise of the docstore
// contract: values kept as written (times to the microsecond in UTC), reads
// by key in key order with nil for what is missing, the filters, orderings,
// limits and paging of queries, counts, the read-before-write rule,
// all-or-none commits, fn's errors returned as they are, fresh reads on
// each attempt, and serializable transactions under concurrency: no lost
// update, exactly one creator of a missing document, no write skew between
// two missing documents, and an invariant across two documents that every
// reader sees hold.
//
// Against a network emulator, RunWith lowers the concurrency tests' load.
package docstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

// Options tune the suite's mechanics; every expectation stays the same.
type Options struct {
	// Workers is how many goroutines each concurrency test runs at once
	// (default 16).
	Workers int
	// Rounds is how many transactions each worker of the counter and move
	// tests runs (default 25); the create and write-skew tests run
	// max(2, Rounds/5) rounds of Workers each.
	Rounds int
	// Timeout bounds each test (default 60s), so that a backend that hangs
	// fails one test clearly. It is a hang guard, never a speed
	// expectation.
	Timeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.Rounds <= 0 {
		o.Rounds = 25
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	return o
}

// Run runs the suite with the default Options. Each call of open returns a
// fresh, empty store that no other test sees.
func Run(t *testing.T, open func(t *testing.T) docstore.Store) {
	RunWith(t, open, Options{})
}

// RunWith runs the suite with o.
func RunWith(t *testing.T, open func(t *testing.T) docstore.Store, o Options) {
	o = o.withDefaults()
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.run(t, newEnv(t, open, o))
				})
			}
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, e *env)
}

type group struct {
	name  string
	cases []testCase
}

// groups is every test of the suite, by area.
var groups = []group{
	{"Documents", documentTests},
	{"Query", queryTests},
	{"Count", countTests},
	{"Tx", txTests},
	{"Concurrency", concurrencyTests},
	{"Limits", []testCase{{"Positive", testLimitsPositive}}},
}

// env is one test's store and context.
type env struct {
	t   *testing.T
	st  docstore.Store
	ctx context.Context
	o   Options
}

func newEnv(t *testing.T, open func(t *testing.T) docstore.Store, o Options) *env {
	st := open(t)
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	t.Cleanup(cancel)
	return &env{t: t, st: st, ctx: ctx, o: o}
}

// with returns e for a subtest of e's test.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// maxContention is how many times the suite runs a transaction again when
// the backend gives up with ErrContention, which the contract allows (and
// which means nothing committed); only a lost or doubled update is wrong.
const maxContention = 100

// tx runs fn in a transaction, again when it ends in ErrContention.
func (e *env) tx(fn func(ctx context.Context, tx docstore.Tx) error) error {
	var err error
	for range maxContention {
		if err = e.st.RunTx(e.ctx, fn); !errors.Is(err, docstore.ErrContention) {
			return err
		}
	}
	return err
}

// put writes docs in one transaction.
func (e *env) put(docs ...*docstore.Doc) {
	e.t.Helper()
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
		for _, d := range docs {
			if err := tx.Set(d.Key, d.Fields); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("writing %d documents: %v", len(docs), err)
	}
}

// get reads keys outside a transaction and checks the answer's shape.
func (e *env) get(keys ...docstore.Key) []*docstore.Doc {
	e.t.Helper()
	docs, err := e.st.Get(e.ctx, keys...)
	if err != nil {
		e.t.Fatalf("Get %v: %v", keys, err)
	}
	checkGetShape(e.t, "Get", keys, docs)
	return docs
}

// checkGetShape checks one result per key, in order, each with its key.
func checkGetShape(t *testing.T, what string, keys []docstore.Key, docs []*docstore.Doc) {
	t.Helper()
	if len(docs) != len(keys) {
		t.Fatalf("%s of %d keys returned %d results", what, len(keys), len(docs))
	}
	for i, d := range docs {
		if d != nil && d.Key != keys[i] {
			t.Fatalf("%s result %d has key %v, want %v (one result per key, in order)", what, i, d.Key, keys[i])
		}
		if d != nil && d.Fields == nil {
			t.Fatalf("%s result %d (%v) has nil Fields", what, i, d.Key)
		}
	}
}

func doc(coll, id string, f docstore.Fields) *docstore.Doc {
	return &docstore.Doc{Key: docstore.Key{Collection: coll, ID: id}, Fields: f}
}

func key(coll, id string) docstore.Key { return docstore.Key{Collection: coll, ID: id} }

// sameValue says whether got is want as a document keeps it.
func sameValue(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case string:
		g, ok := got.(string)
		return ok && g == w
	case int64:
		g, ok := got.(int64)
		return ok && g == w
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case time.Time:
		g, ok := got.(time.Time)
		return ok && g.Equal(docstore.Micro(w)) && g.Location() == time.UTC
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(g, w)
	}
	return false
}

// fieldsDiff describes how got differs from want, "" when it does not.
func fieldsDiff(want, got docstore.Fields) string {
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("field %q missing, want %s", name, show(w)))
		case !sameValue(w, g):
			diffs = append(diffs, fmt.Sprintf("field %q is %s, want %s", name, show(g), show(w)))
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra field %q = %s", name, show(g)))
		}
	}
	return strings.Join(diffs, "; ")
}

// show prints a value with its type, long byte slices by length.
func show(v any) string {
	switch x := v.(type) {
	case []byte:
		if len(x) > 16 {
			return fmt.Sprintf("[]byte(len %d)", len(x))
		}
		return fmt.Sprintf("[]byte(%x)", x)
	case time.Time:
		return fmt.Sprintf("time.Time(%s)", x.Format(time.RFC3339Nano+" MST"))
	case nil:
		return "nil"
	}
	return fmt.Sprintf("%T(%q)", v, fmt.Sprint(v))
}

func testLimitsPositive(t *testing.T, e *env) {
	l := e.st.Limits()
	for name, v := range map[string]int{
		"MaxDocBytes": l.MaxDocBytes, "MaxTxWrites": l.MaxTxWrites,
		"MaxTxBytes": l.MaxTxBytes, "MaxBatchGets": l.MaxBatchGets,
	} {
		if v <= 0 {
			t.Errorf("Limits().%s = %d, want > 0", name, v)
		}
	}
}
