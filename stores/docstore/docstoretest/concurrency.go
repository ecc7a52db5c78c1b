package docstoretest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/stores/docstore"
)

var concurrencyTests = []testCase{
	{"Counter", testCounter},
	{"CreateOnce", testCreateOnce},
	{"CreateRace", testCreateRace},
	{"WriteSkew", testWriteSkew},
	{"Move", testMove},
}

// together runs n workers, all let go at once so that they overlap.
func together(n int, work func(w int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			<-start
			work(w)
		})
	}
	close(start)
	wg.Wait()
}

func createRounds(o Options) int { return max(2, o.Rounds/5) }

// intField reads an int64 field of a document read in a transaction.
func intField(d *docstore.Doc, name string) (int64, error) {
	if d == nil {
		return 0, fmt.Errorf("document missing")
	}
	n, ok := d.Fields[name].(int64)
	if !ok {
		return 0, fmt.Errorf("%v: field %q is %s, want an int64", d.Key, name, show(d.Fields[name]))
	}
	return n, nil
}

// testCounter has every worker increment one document, Rounds times each,
// read-modify-write in a transaction: the total is exact or an update was
// lost (or applied twice).
func testCounter(t *testing.T, e *env) {
	k := key("counter", "c")
	var ok atomic.Int64
	together(e.o.Workers, func(w int) {
		for range e.o.Rounds {
			err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
				docs, err := tx.Get(ctx, k)
				if err != nil {
					return err
				}
				n := int64(0)
				if docs[0] != nil {
					if n, err = intField(docs[0], "n"); err != nil {
						return err
					}
				}
				return tx.Set(k, fields{"n": n + 1})
			})
			if err != nil {
				t.Errorf("worker %d: %v", w, err)
				return
			}
			ok.Add(1)
		}
	})
	d := e.get(k)[0]
	got, err := intField(d, "n")
	if err != nil {
		t.Fatal(err)
	}
	if want := ok.Load(); got != want {
		t.Errorf("counter = %d after %d committed increments (%d workers x %d): updates lost or doubled", got, want, e.o.Workers, e.o.Rounds)
	}
}

// testCreateOnce has every worker read a missing document and create it,
// with its own name, when it finds it missing: exactly one may believe it
// created it, and the document names that one.
func testCreateOnce(t *testing.T, e *env) {
	for r := range createRounds(e.o) {
		k := key("once", fmt.Sprintf("k%03d", r))
		var mu sync.Mutex
		var creators []string
		together(e.o.Workers, func(w int) {
			name := fmt.Sprintf("worker-%d", w)
			var created bool
			err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
				created = false // the committed attempt's belief counts
				docs, err := tx.Get(ctx, k)
				if err != nil || docs[0] != nil {
					return err
				}
				created = true
				return tx.Set(k, fields{"owner": name})
			})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			if created {
				mu.Lock()
				creators = append(creators, name)
				mu.Unlock()
			}
		})
		if len(creators) != 1 {
			t.Errorf("round %d: %d workers believe they created %v (%v), want exactly one", r, len(creators), k, creators)
			continue
		}
		if d := e.get(k)[0]; d == nil || !sameValue(creators[0], d.Fields["owner"]) {
			t.Errorf("round %d: %v is %v, want owner %q", r, k, d, creators[0])
		}
	}
}

// testCreateRace has every worker Create the same document, with its own
// name and without reading it: exactly one commits, the others fail with
// ErrExists, and the document names the one that committed.
func testCreateRace(t *testing.T, e *env) {
	for r := range createRounds(e.o) {
		k := key("race", fmt.Sprintf("k%03d", r))
		var mu sync.Mutex
		var winners []string
		together(e.o.Workers, func(w int) {
			name := fmt.Sprintf("worker-%d", w)
			err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
				return tx.Create(k, fields{"owner": name})
			})
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, name)
				mu.Unlock()
			case !errors.Is(err, docstore.ErrExists):
				t.Errorf("%s: %v, want success or ErrExists", name, err)
			}
		})
		if len(winners) != 1 {
			t.Errorf("round %d: %d Creates of %v committed (%v), want exactly one", r, len(winners), k, winners)
			continue
		}
		if d := e.get(k)[0]; d == nil || !sameValue(winners[0], d.Fields["owner"]) {
			t.Errorf("round %d: %v is %v, want owner %q", r, k, d, winners[0])
		}
	}
}

// testWriteSkew has workers read two missing documents and, when both are
// missing, create one of them (half the workers one, half the other). The
// rule "at most one of the pair exists" holds only if a transaction that
// read a missing document is guarded against its creation: snapshot
// isolation alone lets two workers each create their own.
func testWriteSkew(t *testing.T, e *env) {
	for r := range createRounds(e.o) {
		pair := []docstore.Key{key("skew", fmt.Sprintf("r%03d-a", r)), key("skew", fmt.Sprintf("r%03d-b", r))}
		var claims atomic.Int64
		together(e.o.Workers, func(w int) {
			mine := pair[w%2]
			var claimed bool
			err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
				claimed = false
				docs, err := tx.Get(ctx, pair...)
				if err != nil || docs[0] != nil || docs[1] != nil {
					return err
				}
				claimed = true
				return tx.Set(mine, fields{"by": int64(w)})
			})
			if err != nil {
				t.Errorf("worker %d: %v", w, err)
				return
			}
			if claimed {
				claims.Add(1)
			}
		})
		docs := e.get(pair...)
		exist := 0
		for _, d := range docs {
			if d != nil {
				exist++
			}
		}
		if exist != 1 || claims.Load() != 1 {
			t.Errorf("round %d: %d of the pair exist and %d workers claimed one, want exactly 1 and 1 (write skew)", r, exist, claims.Load())
		}
	}
}

// testMove moves amounts between two documents while a reader checks,
// inside transactions and with strong Gets, that their sum never changes;
// at the end each balance is the start plus every committed move.
func testMove(t *testing.T, e *env) {
	const start, sum = 500, 1000
	a, b := key("move", "a"), key("move", "b")
	e.put(doc("move", "a", fields{"bal": int64(start)}), doc("move", "b", fields{"bal": int64(sum - start)}))

	movers := max(2, e.o.Workers/2)
	var moved atomic.Int64 // committed net amount from a to b
	var done atomic.Bool
	var txChecks, getChecks int
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for i := 0; ; i++ {
			stop := done.Load() // read first, so a check runs after the last move
			var ba, bb int64
			// Two reads, so that a transaction that sees a torn state
			// cannot hide it in one batch.
			err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
				da, err := tx.Get(ctx, a)
				if err != nil {
					return err
				}
				db, err := tx.Get(ctx, b)
				if err != nil {
					return err
				}
				if ba, err = intField(da[0], "bal"); err != nil {
					return err
				}
				bb, err = intField(db[0], "bal")
				return err
			})
			if err != nil {
				t.Errorf("reader transaction: %v", err)
				return
			}
			txChecks++
			if ba+bb != sum {
				t.Errorf("a reader transaction committed having read a=%d b=%d, sum %d, want %d", ba, bb, ba+bb, sum)
				return
			}
			docs, err := e.st.Get(e.ctx, a, b)
			if err != nil {
				t.Errorf("reader Get: %v", err)
				return
			}
			ga, err1 := intField(docs[0], "bal")
			gb, err2 := intField(docs[1], "bal")
			if err := errors.Join(err1, err2); err != nil {
				t.Errorf("reader Get: %v", err)
				return
			}
			getChecks++
			if ga+gb != sum {
				t.Errorf("a strong Get read a=%d b=%d, sum %d, want %d", ga, gb, ga+gb, sum)
				return
			}
			if stop {
				return
			}
		}
	}()

	together(movers, func(w int) {
		for i := range e.o.Rounds {
			amount := int64(1 + rand.IntN(10))
			if rand.IntN(2) == 0 {
				amount = -amount
			}
			err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
				var docs []*docstore.Doc
				if i%2 == 0 {
					var err error
					if docs, err = tx.Get(ctx, a, b); err != nil {
						return err
					}
				} else { // one key at a time, the other order
					db, err := tx.Get(ctx, b)
					if err != nil {
						return err
					}
					da, err := tx.Get(ctx, a)
					if err != nil {
						return err
					}
					docs = []*docstore.Doc{da[0], db[0]}
				}
				ba, err := intField(docs[0], "bal")
				if err != nil {
					return err
				}
				bb, err := intField(docs[1], "bal")
				if err != nil {
					return err
				}
				if err := tx.Set(a, fields{"bal": ba - amount}); err != nil {
					return err
				}
				return tx.Set(b, fields{"bal": bb + amount})
			})
			if err != nil {
				t.Errorf("mover %d: %v", w, err)
				return
			}
			moved.Add(amount)
		}
	})
	done.Store(true)
	<-readerDone

	docs := e.get(a, b)
	ga, err1 := intField(docs[0], "bal")
	gb, err2 := intField(docs[1], "bal")
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if m := moved.Load(); ga != start-m || gb != sum-start+m {
		t.Errorf("balances a=%d b=%d after moving %d from a to b in all, want a=%d b=%d: a move was lost or doubled", ga, gb, m, start-m, sum-start+m)
	}
	if txChecks == 0 || getChecks == 0 {
		t.Errorf("the reader checked %d transactions and %d Gets, want some of each", txChecks, getChecks)
	}
	t.Logf("%d movers x %d moves; the reader checked %d transactions and %d Gets", movers, e.o.Rounds, txChecks, getChecks)
}
