package memdocs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/docstoretest"
)

var modes = []Mode{Optimistic, Pessimistic}

func k(id string) docstore.Key { return docstore.Key{Collection: "c", ID: id} }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func set(ctx context.Context, s *Store, key docstore.Key, f docstore.Fields) error {
	return s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error { return tx.Set(key, f) })
}

func mustSet(t *testing.T, s *Store, key docstore.Key, f docstore.Fields) {
	t.Helper()
	if err := set(testCtx(t), s, key, f); err != nil {
		t.Fatalf("Set %v: %v", key, err)
	}
}

func getOne(t *testing.T, s *Store, key docstore.Key) *docstore.Doc {
	t.Helper()
	docs, err := s.Get(testCtx(t), key)
	if err != nil {
		t.Fatalf("Get %v: %v", key, err)
	}
	return docs[0]
}

func TestDefaultLimits(t *testing.T) {
	want := docstore.Limits{MaxDocBytes: 1048576, MaxTxWrites: 500, MaxTxBytes: 10 << 20, MaxBatchGets: 1000}
	if got := New().Limits(); got != want {
		t.Errorf("Limits() = %+v, want Firestore's %+v", got, want)
	}
}

func TestDocSize(t *testing.T) {
	f := docstore.Fields{
		"s": "hello", "i": int64(1), "b": true, "t": time.Now(), "x": []byte{1, 2}, "n": nil,
	}
	// id 3 + 32, then name+value: s 1+5, i 1+8, b 1+1, t 1+8, x 1+2, n 1+1.
	if got, want := DocSize(k("abc"), f), 3+32+6+9+2+9+3+2; got != want {
		t.Errorf("DocSize = %d, want %d", got, want)
	}
}

// TestLimitsEnforced checks each limit at its boundary: at the limit
// commits, one over fails the commit with ErrLimit and writes nothing.
func TestLimitsEnforced(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			ctx := testCtx(t)
			s := New(WithMode(m), WithLimits(docstore.Limits{MaxDocBytes: 100, MaxTxWrites: 3, MaxTxBytes: 250, MaxBatchGets: 4}))
			// A document of id "d" (1) + 32 + field "b" (1) + n bytes.
			docOf := func(size int) docstore.Fields { return docstore.Fields{"b": make([]byte, size-34)} }
			write := func(docs map[string]int) error {
				return s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
					for id, size := range docs {
						if err := tx.Set(k(id), docOf(size)); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if DocSize(k("d"), docOf(100)) != 100 {
				t.Fatal("docOf is wrong")
			}
			if err := write(map[string]int{"a": 100}); err != nil {
				t.Errorf("a document of MaxDocBytes: %v", err)
			}
			err := write(map[string]int{"b": 101})
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxDocBytes") {
				t.Errorf("a document over MaxDocBytes: %v, want ErrLimit naming MaxDocBytes", err)
			}
			if err := write(map[string]int{"c": 50, "d": 50, "e": 50}); err != nil {
				t.Errorf("MaxTxWrites writes: %v", err)
			}
			err = write(map[string]int{"f": 40, "g": 40, "h": 40, "i": 40})
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxTxWrites") {
				t.Errorf("writes over MaxTxWrites: %v, want ErrLimit naming MaxTxWrites", err)
			}
			if err := write(map[string]int{"j": 100, "k": 100, "l": 50}); err != nil {
				t.Errorf("MaxTxBytes of writes: %v", err)
			}
			err = write(map[string]int{"m": 100, "n": 100, "o": 51})
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "MaxTxBytes") {
				t.Errorf("writes over MaxTxBytes: %v, want ErrLimit naming MaxTxBytes", err)
			}
			n, err := s.Count(ctx, docstore.Query{Collection: "c"})
			if want := int64(7); err != nil || n != want {
				t.Errorf("Count = %d, %v; want %d (only the transactions within the limits wrote)", n, err, want)
			}

			keys := []docstore.Key{k("1"), k("2"), k("3"), k("4"), k("5")}
			if _, err := s.Get(ctx, keys[:4]...); err != nil {
				t.Errorf("Get of MaxBatchGets keys: %v", err)
			}
			if _, err := s.Get(ctx, keys...); !errors.Is(err, ErrLimit) {
				t.Errorf("Get over MaxBatchGets: %v, want ErrLimit", err)
			}
			err = s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
				_, err := tx.Get(ctx, keys...)
				return err
			})
			if !errors.Is(err, ErrLimit) {
				t.Errorf("Tx.Get over MaxBatchGets: %v, want ErrLimit", err)
			}
		})
	}
}

// TestValuesCopied checks that neither what a caller wrote nor what it
// read aliases what is stored.
func TestValuesCopied(t *testing.T) {
	ctx := testCtx(t)
	s := New()
	in := []byte{1, 2, 3}
	f := docstore.Fields{"b": in}
	err := s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		err := tx.Set(k("x"), f)
		in[0] = 9 // before the commit
		f["extra"] = "added"
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	in[1] = 9 // after it
	d := getOne(t, s, k("x"))
	if got := d.Fields["b"].([]byte); string(got) != "\x01\x02\x03" || len(d.Fields) != 1 {
		t.Fatalf("stored %v, want only b=[1 2 3]", d.Fields)
	}
	d.Fields["b"].([]byte)[2] = 9
	d.Fields["new"] = true
	qs, err := s.Query(ctx, docstore.Query{Collection: "c"})
	if err != nil {
		t.Fatal(err)
	}
	qs[0].Fields["b"].([]byte)[0] = 8
	var inTx docstore.Fields
	err = s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		docs, err := tx.Get(ctx, k("x"))
		if err == nil {
			inTx = docs[0].Fields
			inTx["b"].([]byte)[1] = 7
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := getOne(t, s, k("x")).Fields; string(got["b"].([]byte)) != "\x01\x02\x03" || len(got) != 1 {
		t.Errorf("after callers changed what they read: stored %v, want only b=[1 2 3]", got)
	}
}

func TestInvalidKeysAndValues(t *testing.T) {
	ctx := testCtx(t)
	s := New()
	for _, key := range []docstore.Key{
		{Collection: "c", ID: ""},
		{Collection: "", ID: "x"},
		{Collection: "c", ID: "a/b"},
		{Collection: "c", ID: "tab\there"},
		{Collection: "c", ID: "é"},
		{Collection: "c", ID: strings.Repeat("x", 701)},
	} {
		if err := set(ctx, s, key, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("Set %q: %v, want ErrInvalid", key, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, ErrInvalid) {
			t.Errorf("Get %q: %v, want ErrInvalid", key, err)
		}
	}
	if err := set(ctx, s, k(strings.Repeat("x", 700)), nil); err != nil {
		t.Errorf("an id of 700 bytes: %v", err)
	}
	for _, v := range []any{1, int32(1), 1.5, map[string]any{}, []any{}, "\xff", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), struct{}{}} {
		if err := set(ctx, s, k("v"), docstore.Fields{"v": v}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Set of %T %v: %v, want ErrInvalid", v, v, err)
		}
	}
	if err := set(ctx, s, k("v"), docstore.Fields{"": "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an empty field name: %v, want ErrInvalid", err)
	}
	// A Set whose error fn ignores still fails the commit.
	err := s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		_ = tx.Set(k("ignored"), docstore.Fields{"v": 1})
		return tx.Set(k("fine"), docstore.Fields{"v": int64(1)})
	})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("commit after an ignored bad Set: %v, want ErrInvalid", err)
	}
	if d := getOne(t, s, k("fine")); d != nil {
		t.Error("the transaction with a bad Set wrote its other document")
	}
}

func TestInvalidQueries(t *testing.T) {
	ctx := testCtx(t)
	s := New()
	f := func(field string, op docstore.Op, v any) docstore.Filter {
		return docstore.Filter{Field: field, Op: op, Value: v}
	}
	many := make([]any, 31)
	for i := range many {
		many[i] = int64(i)
	}
	for name, q := range map[string]docstore.Query{
		"no collection":         {},
		"two range fields":      {Collection: "c", Filters: []docstore.Filter{f("a", docstore.Gt, int64(1)), f("b", docstore.Lt, int64(1))}, Order: []docstore.Order{{Field: "a"}}},
		"range without order":   {Collection: "c", Filters: []docstore.Filter{f("a", docstore.Gt, int64(1))}},
		"order not range first": {Collection: "c", Filters: []docstore.Filter{f("a", docstore.Gt, int64(1))}, Order: []docstore.Order{{Field: "b"}, {Field: "a"}}},
		"range on nil":          {Collection: "c", Filters: []docstore.Filter{f("a", docstore.Ge, nil)}, Order: []docstore.Order{{Field: "a"}}},
		"In of 31":              {Collection: "c", Filters: []docstore.Filter{f("a", docstore.In, many)}},
		"In of none":            {Collection: "c", Filters: []docstore.Filter{f("a", docstore.In, []any{})}},
		"In not a list":         {Collection: "c", Filters: []docstore.Filter{f("a", docstore.In, []string{"x"})}},
		"unknown op":            {Collection: "c", Filters: []docstore.Filter{f("a", docstore.Op(99), int64(1))}},
		"bad value":             {Collection: "c", Filters: []docstore.Filter{f("a", docstore.Eq, 1)}},
		"empty field":           {Collection: "c", Filters: []docstore.Filter{f("", docstore.Eq, int64(1))}},
		"negative limit":        {Collection: "c", Limit: -1},
	} {
		if _, err := s.Query(ctx, q); !errors.Is(err, ErrInvalid) {
			t.Errorf("Query (%s): %v, want ErrInvalid", name, err)
		}
	}
	if _, err := s.Count(ctx, docstore.Query{Collection: "c", Limit: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Count with a Limit: %v, want ErrInvalid", err)
	}
	if _, err := s.Count(ctx, docstore.Query{Collection: "c", StartAfter: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Count with StartAfter: %v, want ErrInvalid", err)
	}
	// A count need not order by its range field.
	if _, err := s.Count(ctx, docstore.Query{Collection: "c", Filters: []docstore.Filter{f("a", docstore.Gt, int64(1))}}); err != nil {
		t.Errorf("Count with a range filter and no order: %v", err)
	}
}

// TestReadAfterWriteIgnored: a transaction whose fn ignores the error still
// fails, so a protocol bug cannot slip through.
func TestReadAfterWriteIgnored(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			s := New(WithMode(m))
			err := s.RunTx(testCtx(t), func(ctx context.Context, tx docstore.Tx) error {
				if err := tx.Set(k("a"), nil); err != nil {
					return err
				}
				_, _ = tx.Get(ctx, k("b"))
				return nil
			})
			if !errors.Is(err, docstore.ErrReadAfterWrite) {
				t.Errorf("RunTx: %v, want ErrReadAfterWrite", err)
			}
			if getOne(t, s, k("a")) != nil {
				t.Error("the transaction wrote")
			}
		})
	}
}

// TestOptimisticRetry makes an optimistic attempt's read stale on purpose
// and checks that fn runs again, on a fresh read, and that Stats count it.
func TestOptimisticRetry(t *testing.T) {
	ctx := testCtx(t)
	s := New(WithMode(Optimistic))
	mustSet(t, s, k("x"), docstore.Fields{"n": int64(1)})
	var reads []int64
	err := s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		docs, err := tx.Get(ctx, k("x"))
		if err != nil {
			return err
		}
		n := docs[0].Fields["n"].(int64)
		reads = append(reads, n)
		if len(reads) == 1 { // another transaction commits in between
			if err := set(ctx, s, k("x"), docstore.Fields{"n": int64(100)}); err != nil {
				return err
			}
		}
		return tx.Set(k("x"), docstore.Fields{"n": n + 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(reads) != "[1 100]" {
		t.Errorf("attempts read %v, want [1 100]", reads)
	}
	if got := getOne(t, s, k("x")).Fields["n"]; got != int64(101) {
		t.Errorf("n = %v, want 101", got)
	}
	st := s.Stats()
	if st.Transactions != 3 || st.Attempts != 4 || st.Commits != 3 || st.Conflicts != 1 || st.Retries != 1 || st.Contention != 0 {
		t.Errorf("Stats %+v, want 3 transactions, 4 attempts, 3 commits, 1 conflict, 1 retry", st)
	}
}

// TestOptimisticMissingGuarded: a read of a missing document conflicts
// with its creation.
func TestOptimisticMissingGuarded(t *testing.T) {
	ctx := testCtx(t)
	s := New(WithMode(Optimistic))
	attempts := 0
	err := s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		attempts++
		docs, err := tx.Get(ctx, k("x"))
		if err != nil || docs[0] != nil {
			return err
		}
		if attempts == 1 {
			if err := set(ctx, s, k("x"), docstore.Fields{"by": "other"}); err != nil {
				return err
			}
		}
		return tx.Set(k("x"), docstore.Fields{"by": "me"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := getOne(t, s, k("x")).Fields["by"]; attempts != 2 || got != "other" {
		t.Errorf("%d attempts, by=%v; want 2 attempts, the second finding the other's document", attempts, got)
	}
}

// TestContention: conflicts on every attempt end in ErrContention after
// MaxAttempts runs, with nothing of fn's written.
func TestContention(t *testing.T) {
	ctx := testCtx(t)
	s := New(WithMode(Optimistic), WithMaxAttempts(3))
	runs := 0
	err := s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		runs++
		if _, err := tx.Get(ctx, k("x")); err != nil {
			return err
		}
		if err := set(ctx, s, k("x"), docstore.Fields{"n": int64(runs)}); err != nil {
			return err
		}
		return tx.Set(k("mine"), nil)
	})
	if !errors.Is(err, docstore.ErrContention) {
		t.Fatalf("RunTx: %v, want ErrContention", err)
	}
	if runs != 3 {
		t.Errorf("fn ran %d times, want MaxAttempts 3", runs)
	}
	if getOne(t, s, k("mine")) != nil {
		t.Error("the transaction that ran out of retries wrote")
	}
	if st := s.Stats(); st.Contention != 1 || st.Retries != 2 {
		t.Errorf("Stats %+v, want 1 contention, 2 retries", st)
	}
}

// TestPessimisticDeadlock has two transactions read two keys in opposite
// orders (shared locks, which both get) and then write both: each commit
// needs the keys exclusively while the other still holds them shared.
// Wound-wait must make one retry, and both commit.
func TestPessimisticDeadlock(t *testing.T) {
	ctx := testCtx(t)
	s := New(WithMode(Pessimistic), WithLockTimeout(time.Minute)) // only wound-wait can end it
	var onceA, onceB sync.Once
	readA, readB := make(chan struct{}), make(chan struct{})
	move := func(first, second docstore.Key, once *sync.Once, mine, theirs chan struct{}) error {
		return s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
			if _, err := tx.Get(ctx, first, second); err != nil {
				return err
			}
			ran := false
			once.Do(func() { ran = true; close(mine) })
			if ran {
				<-theirs // the first attempts each hold both keys shared
			}
			if err := tx.Set(first, docstore.Fields{"by": first.ID}); err != nil {
				return err
			}
			return tx.Set(second, docstore.Fields{"by": first.ID})
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- move(k("a"), k("b"), &onceA, readA, readB) }()
	<-readA // so that the a-first transaction is the older
	go func() { errs <- move(k("b"), k("a"), &onceB, readB, readA) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("RunTx: %v", err)
		}
	}
	if st := s.Stats(); st.Wounds < 1 || st.Commits != 2 || st.LockTimeouts != 0 {
		t.Errorf("Stats %+v, want a wound, 2 commits, no lock timeouts", st)
	}
}

// hold has a transaction read key and hold its lock until release is
// called; release returns the transaction's error.
func hold(t *testing.T, s *Store, key docstore.Key) (release func() error) {
	holding, done := make(chan struct{}), make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- s.RunTx(testCtx(t), func(ctx context.Context, tx docstore.Tx) error {
			if _, err := tx.Get(ctx, key); err != nil {
				return err
			}
			close(holding)
			<-done
			return tx.Set(key, docstore.Fields{"by": "holder"})
		})
	}()
	<-holding
	return func() error { close(done); return <-result }
}

// writeTx reads key and writes it: its commit needs the key's lock
// exclusively, so it waits while another transaction holds it, even shared.
func writeTx(ctx context.Context, s *Store, key docstore.Key) error {
	return s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		if _, err := tx.Get(ctx, key); err != nil {
			return err
		}
		return tx.Set(key, docstore.Fields{"by": "writer"})
	})
}

// readTx only reads key: a shared lock, which other readers share.
func readTx(ctx context.Context, s *Store, key docstore.Key) error {
	return s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		_, err := tx.Get(ctx, key)
		return err
	})
}

// TestPessimisticLockTimeout: a read holds its key shared until the
// attempt ends: another read shares it, and another transaction's write
// waits, each attempt up to the lock timeout, and then gives up with
// ErrContention.
func TestPessimisticLockTimeout(t *testing.T) {
	ctx := testCtx(t)
	s := New(WithMode(Pessimistic), WithLockTimeout(50*time.Millisecond), WithMaxAttempts(2))
	release := hold(t, s, k("x"))
	if err := readTx(ctx, s, k("x")); err != nil {
		t.Errorf("a read while another transaction read the key: %v, want it to share the lock", err)
	}
	if err := writeTx(ctx, s, k("x")); !errors.Is(err, docstore.ErrContention) {
		t.Errorf("a write while another holds the key: %v, want ErrContention once the waits time out", err)
	}
	if st := s.Stats(); st.LockTimeouts != 2 {
		t.Errorf("Stats %+v, want 2 lock timeouts", st)
	}
	// A strong Get outside transactions does not wait for locks.
	if _, err := s.Get(ctx, k("x")); err != nil {
		t.Errorf("Get while a transaction holds the key: %v", err)
	}
	if err := release(); err != nil {
		t.Errorf("holder: %v", err)
	}
	if err := readTx(ctx, s, k("x")); err != nil {
		t.Errorf("a read once the lock is free: %v", err)
	}
}

// TestPessimisticWaitCanceled: a canceled context ends a wait for a lock.
func TestPessimisticWaitCanceled(t *testing.T) {
	s := New(WithMode(Pessimistic), WithLockTimeout(time.Minute))
	release := hold(t, s, k("x"))
	defer release()
	ctx, cancel := context.WithCancel(testCtx(t))
	waiting := make(chan error, 1)
	go func() { waiting <- writeTx(ctx, s, k("x")) }()
	for s.Stats().LockWaits == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-waiting:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a write waiting for a lock, canceled: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("canceling the context did not end the wait for a lock")
	}
}

// TestConsistentAttempts: every attempt, even one that will retry, sees
// its reads as of one instant, so fn never decides on a torn state.
func TestConsistentAttempts(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			ctx := testCtx(t)
			s := New(WithMode(m), WithJitter(50*time.Microsecond))
			mustSet(t, s, k("a"), docstore.Fields{"n": int64(50)})
			mustSet(t, s, k("b"), docstore.Fields{"n": int64(50)})
			var torn, seen atomic.Int64
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Go(func() {
					for i := range 30 {
						err := s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
							da, err := tx.Get(ctx, k("a"))
							if err != nil {
								return err
							}
							db, err := tx.Get(ctx, k("b"))
							if err != nil {
								return err
							}
							a, b := da[0].Fields["n"].(int64), db[0].Fields["n"].(int64)
							seen.Add(1)
							if a+b != 100 {
								torn.Add(1)
							}
							if w%2 == 0 { // a reader
								return nil
							}
							d := int64(i%7 - 3)
							if err := tx.Set(k("a"), docstore.Fields{"n": a - d}); err != nil {
								return err
							}
							return tx.Set(k("b"), docstore.Fields{"n": b + d})
						})
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if torn.Load() != 0 {
				t.Errorf("%d of %d attempts read a torn pair", torn.Load(), seen.Load())
			}
			t.Logf("%+v", s.Stats())
		})
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := New()
	ran := false
	err := s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Errorf("RunTx on a canceled context: %v, fn ran: %v; want context.Canceled, not run", err, ran)
	}
	if _, err := s.Get(ctx, k("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Get on a canceled context: %v", err)
	}
}

func TestTxUsedAfterItsAttempt(t *testing.T) {
	ctx := testCtx(t)
	s := New()
	var kept docstore.Tx
	if err := s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error { kept = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Get(ctx, k("x")); err == nil {
		t.Error("Get on a Tx after its attempt: nil error")
	}
	if err := kept.Set(k("x"), nil); err == nil {
		t.Error("Set on a Tx after its attempt: nil error")
	}
	if getOne(t, s, k("x")) != nil {
		t.Error("a Set after the attempt wrote")
	}
}

func TestClosed(t *testing.T) {
	ctx := testCtx(t)
	s := New()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, k("x")); !errors.Is(err, docstore.ErrUnavailable) {
		t.Errorf("Get after Close: %v, want ErrUnavailable", err)
	}
	if _, err := s.Query(ctx, docstore.Query{Collection: "c"}); !errors.Is(err, docstore.ErrUnavailable) {
		t.Errorf("Query after Close: %v, want ErrUnavailable", err)
	}
	if err := set(ctx, s, k("x"), nil); !errors.Is(err, docstore.ErrUnavailable) {
		t.Errorf("RunTx after Close: %v, want ErrUnavailable", err)
	}
}

func TestStatsCountCalls(t *testing.T) {
	ctx := testCtx(t)
	s := New()
	_, _ = s.Get(ctx, k("x"))
	_, _ = s.Query(ctx, docstore.Query{Collection: "c"})
	_, _ = s.Query(ctx, docstore.Query{Collection: "c"})
	_, _ = s.Count(ctx, docstore.Query{Collection: "c"})
	_ = s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error { return errors.New("no") })
	want := Stats{Gets: 1, Queries: 2, Counts: 1, Transactions: 1, Attempts: 1, Aborts: 1}
	if got := s.Stats(); got != want {
		t.Errorf("Stats %+v, want %+v", got, want)
	}
}

// withoutValidation turns the optimistic checks off: a backend that loses
// updates, for TestSuiteCatchesLostUpdates.
func withoutValidation() Option { return func(o *options) { o.noValidate = true } }

// TestSuiteCatchesLostUpdates runs the conformance suite's transaction and
// concurrency tests against a backend without concurrency control, in a
// child process, and checks that they fail: the suite can tell.
func TestSuiteCatchesLostUpdates(t *testing.T) {
	if os.Getenv("MEMDOCS_BROKEN_CHILD") == "1" {
		docstoretest.Run(t, func(t *testing.T) docstore.Store {
			return New(withoutValidation(), WithJitter(200*time.Microsecond))
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteCatchesLostUpdates$/^(Tx|Concurrency)$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "MEMDOCS_BROKEN_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed a backend without concurrency control:\n%s", out)
	}
	for _, name := range []string{"Concurrency/Counter", "Concurrency/CreateOnce", "Concurrency/WriteSkew", "Concurrency/Move", "Tx/FreshReadsOnRetry"} {
		if !strings.Contains(string(out), "--- FAIL: TestSuiteCatchesLostUpdates/"+name+" ") {
			t.Errorf("%s did not fail without concurrency control", name)
		}
	}
	for _, name := range []string{"Tx/ReadAfterWrite", "Tx/WritesAtCommit", "Tx/FnErrorAborts"} {
		if !strings.Contains(string(out), "--- PASS: TestSuiteCatchesLostUpdates/"+name+" ") {
			t.Errorf("%s failed for a reason other than concurrency control", name)
		}
	}
	if t.Failed() {
		t.Logf("child output:\n%s", out)
	}
}

// TestPessimisticWriterNotStarved: readers that keep reading a key must not
// keep an older transaction that waits to write it from ever getting the
// lock (new readers queue behind it), so the writer commits while they
// go on, in its first attempt.
func TestPessimisticWriterNotStarved(t *testing.T) {
	ctx := testCtx(t)
	s := New(WithMode(Pessimistic), WithLockTimeout(time.Minute))
	mustSet(t, s, k("x"), docstore.Fields{"n": int64(0)})
	stop := make(chan struct{})
	var readers sync.WaitGroup
	read := func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
				_, err := tx.Get(ctx, k("x"))
				time.Sleep(2 * time.Millisecond) // hold the shared lock a moment
				return err
			})
		}
	}
	// Readers overlap, so that some always holds the key shared.
	readers.Add(6)
	for range 3 {
		go read() // they hold the key before the writer starts
	}
	time.Sleep(5 * time.Millisecond)
	attempts := 0
	done := make(chan error, 1)
	go func() {
		done <- s.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
			attempts++
			if _, err := tx.Get(ctx, k("x")); err != nil {
				return err
			}
			return tx.Set(k("x"), docstore.Fields{"n": int64(1)})
		})
	}()
	for range 3 {
		go read()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the writer: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the writer got no exclusive lock in 5 s while readers went on")
	}
	close(stop)
	readers.Wait()
	if attempts != 1 {
		t.Errorf("the writer ran %d times, want 1 (it is older than every reader after it)", attempts)
	}
}
