package docstoretest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

var txTests = []testCase{
	{"ReadAfterWrite", testReadAfterWrite},
	{"Create", testCreate},
	{"WritesAtCommit", testWritesAtCommit},
	{"FnErrorAborts", testFnErrorAborts},
	{"GetMissing", testTxGetMissing},
	{"MaxWrites", testTxMaxWrites},
	{"LargeWrites", testTxLargeWrites},
	{"FreshReadsOnRetry", testFreshReadsOnRetry},
	{"CanceledContext", testTxCanceled},
}

func testReadAfterWrite(t *testing.T, e *env) {
	for _, c := range []struct {
		name  string
		write func(tx docstore.Tx) error
	}{
		{"Set", func(tx docstore.Tx) error { return tx.Set(key("raw", "new"), fields{"v": int64(1)}) }},
		{"Delete", func(tx docstore.Tx) error { return tx.Delete(key("raw", "old")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.with(t)
			e.put(doc("raw", "old", fields{"v": int64(0)}))
			var getErr error
			err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
				getErr = nil
				if _, err := tx.Get(ctx, key("raw", "old")); err != nil {
					return fmt.Errorf("a read before any write: %w", err)
				}
				if err := c.write(tx); err != nil {
					return err
				}
				_, getErr = tx.Get(ctx, key("raw", "other"))
				return getErr
			})
			if !errors.Is(getErr, docstore.ErrReadAfterWrite) {
				t.Errorf("Get after %s: %v, want ErrReadAfterWrite", c.name, getErr)
			}
			if !errors.Is(err, docstore.ErrReadAfterWrite) {
				t.Errorf("RunTx: %v, want ErrReadAfterWrite as fn returned it", err)
			}
			docs := e.get(key("raw", "new"), key("raw", "old"))
			if docs[0] != nil || docs[1] == nil {
				t.Errorf("the failed transaction wrote: new present=%v, old present=%v; want false, true", docs[0] != nil, docs[1] != nil)
			}
		})
	}
}

// testWritesAtCommit checks that writes are buffered until the commit and
// then applied together.
func testWritesAtCommit(t *testing.T, e *env) {
	a, b, c := key("commit", "a"), key("commit", "b"), key("commit", "c")
	e.put(doc("commit", "c", fields{"v": "old"}))
	var during []*docstore.Doc
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
		if _, err := tx.Get(ctx, a, b, c); err != nil {
			return err
		}
		for _, err := range []error{tx.Set(a, fields{"v": int64(1)}), tx.Set(b, fields{"v": int64(2)}), tx.Delete(c)} {
			if err != nil {
				return err
			}
		}
		var err error
		during, err = e.st.Get(ctx, a, b, c) // outside the transaction
		return err
	})
	if err != nil {
		t.Fatalf("RunTx: %v", err)
	}
	if len(during) != 3 || during[0] != nil || during[1] != nil || during[2] == nil {
		t.Errorf("before the commit, another reader saw the transaction's writes: %v", during)
	}
	docs := e.get(a, b, c)
	if docs[0] == nil || !sameValue(int64(1), docs[0].Fields["v"]) || docs[1] == nil || !sameValue(int64(2), docs[1].Fields["v"]) || docs[2] != nil {
		t.Errorf("after the commit: a=%v b=%v c=%v; want a v=1, b v=2, c deleted", docs[0], docs[1], docs[2])
	}
}

type fnError struct{ code int }

func (e *fnError) Error() string { return fmt.Sprintf("docstoretest: fn failed with %d", e.code) }

var errFn = errors.New("docstoretest: fn gave up")

func testFnErrorAborts(t *testing.T, e *env) {
	a, c := key("abort", "a"), key("abort", "c")
	e.put(doc("abort", "c", fields{"v": "keep"}))
	for _, c2 := range []struct {
		name string
		err  error
		is   func(error) bool
	}{
		{"Sentinel", fmt.Errorf("wrapped: %w", errFn), func(err error) bool { return errors.Is(err, errFn) }},
		{"Type", &fnError{code: 7}, func(err error) bool {
			var fe *fnError
			return errors.As(err, &fe) && fe.code == 7
		}},
	} {
		t.Run(c2.name, func(t *testing.T) {
			e := e.with(t)
			calls := 0
			err := e.st.RunTx(e.ctx, func(ctx context.Context, tx docstore.Tx) error {
				calls++
				if _, err := tx.Get(ctx, a, c); err != nil {
					return err
				}
				if err := tx.Set(a, fields{"v": "new"}); err != nil {
					return err
				}
				if err := tx.Delete(c); err != nil {
					return err
				}
				return c2.err
			})
			if !c2.is(err) {
				t.Errorf("RunTx: %v, want fn's error %v as it is", err, c2.err)
			}
			if calls != 1 {
				t.Errorf("fn ran %d times; an error from fn aborts, it is not retried", calls)
			}
			docs := e.get(a, c)
			if docs[0] != nil || docs[1] == nil {
				t.Errorf("the aborted transaction wrote: a present=%v, c present=%v; want false, true", docs[0] != nil, docs[1] != nil)
			}
		})
	}
}

func testTxGetMissing(t *testing.T, e *env) {
	e.put(doc("txget", "a", fields{"v": "a"}), doc("txget", "c", fields{"v": "c"}))
	keys := []docstore.Key{key("txget", "c"), key("txget", "b"), key("txget", "a"), key("elsewhere", "a")}
	var got []*docstore.Doc
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
		var err error
		got, err = tx.Get(ctx, keys...)
		return err
	})
	if err != nil {
		t.Fatalf("RunTx: %v", err)
	}
	checkGetShape(t, "Tx.Get", keys, got)
	for i, want := range []string{"c", "", "a", ""} {
		if (want == "") != (got[i] == nil) || (want != "" && !sameValue(want, got[i].Fields["v"])) {
			t.Errorf("Tx.Get result %d for %v: %v, want v=%q (empty: missing)", i, keys[i], got[i], want)
		}
	}
}

// testTxMaxWrites commits a transaction of exactly MaxTxWrites writes.
func testTxMaxWrites(t *testing.T, e *env) {
	n := e.st.Limits().MaxTxWrites
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
		for i := range n {
			if err := tx.Set(key("many", fmt.Sprintf("w%06d", i)), fields{"i": int64(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a transaction of MaxTxWrites (%d) writes: %v", n, err)
	}
	got, err := e.st.Count(e.ctx, query{Collection: "many"})
	if err != nil || got != int64(n) {
		t.Errorf("Count after %d writes = %d, %v", n, got, err)
	}
}

// testTxLargeWrites commits documents of half MaxDocBytes, up to half
// MaxTxBytes of them, and reads them back.
func testTxLargeWrites(t *testing.T, e *env) {
	l := e.st.Limits()
	size := l.MaxDocBytes / 2
	n := max(1, min(10, l.MaxTxWrites, l.MaxTxBytes/2/size))
	var put []*docstore.Doc
	var keys []docstore.Key
	for i := range n {
		put = append(put, doc("large", fmt.Sprintf("l%02d", i), fields{"b": randomBytes(size, uint64(i)+10)}))
		keys = append(keys, put[i].Key)
	}
	e.put(put...)
	for i, d := range e.get(keys...) {
		if d == nil {
			t.Errorf("%v missing", keys[i])
		} else if diff := fieldsDiff(put[i].Fields, d.Fields); diff != "" {
			t.Errorf("%v: %s", keys[i], diff)
		}
	}
}

// testFreshReadsOnRetry has another transaction write a document that a
// first attempt has read. Whichever way the backend orders the two, the
// outcome must be serializable: either the attempt that committed read the
// other's write, or the other's write came last. A backend that lets the
// first attempt commit on its stale read loses the other's update.
func testFreshReadsOnRetry(t *testing.T, e *env) {
	k := key("fresh", "x")
	e.put(doc("fresh", "x", fields{"n": int64(1)}))
	var reads []int64
	other := make(chan error, 1)
	started := false
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
		docs, err := tx.Get(ctx, k)
		if err != nil {
			return err
		}
		if docs[0] == nil {
			return errors.New("fresh/x missing")
		}
		n, _ := docs[0].Fields["n"].(int64)
		reads = append(reads, n)
		if !started {
			started = true
			go func() {
				other <- e.tx(func(ctx context.Context, tx docstore.Tx) error { return tx.Set(k, fields{"n": int64(100)}) })
			}()
			// Give the other time to commit; a backend that locks what
			// was read keeps it waiting instead.
			select {
			case err := <-other:
				other <- err
			case <-time.After(250 * time.Millisecond):
			}
		}
		return tx.Set(k, fields{"n": n + 10})
	})
	if err != nil {
		t.Fatalf("RunTx: %v", err)
	}
	if err := <-other; err != nil {
		t.Fatalf("the other transaction: %v", err)
	}
	final := e.get(k)[0]
	if final == nil {
		t.Fatal("fresh/x missing")
	}
	got, _ := final.Fields["n"].(int64)
	last := reads[len(reads)-1]
	t.Logf("attempts read %v; final n=%d", reads, got)
	switch {
	case last == 1 && got == 100: // ours, then the other's write
	case last == 100 && got == 110: // the other's, then ours on a fresh read
	default:
		t.Errorf("final n=%d after the committed attempt read %d: not serializable (want 100 after reading 1, or 110 after reading 100)", got, last)
	}
}

func testTxCanceled(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	k := key("canceled", "x")
	err := e.st.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		return tx.Set(k, fields{"v": true})
	})
	if err == nil {
		t.Error("RunTx with a canceled context: nil error")
	}
	if d := e.get(k)[0]; d != nil {
		t.Errorf("RunTx with a canceled context wrote %v", d.Fields)
	}
}

// testCreate: a Create of a missing document writes it; a Create of an
// existing one fails the commit with ErrExists, writes none of the
// transaction's other writes and does not run fn again.
func testCreate(t *testing.T, e *env) {
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
		return tx.Create(key("create", "new"), fields{"v": int64(1)})
	})
	if err != nil {
		t.Fatalf("Create of a missing document: %v", err)
	}
	if d := e.get(key("create", "new"))[0]; d == nil || !sameValue(int64(1), d.Fields["v"]) {
		t.Errorf("after Create: %v, want v=1", d)
	}

	runs := 0
	err = e.tx(func(ctx context.Context, tx docstore.Tx) error {
		runs++
		if err := tx.Set(key("create", "beside"), fields{"v": int64(2)}); err != nil {
			return err
		}
		return tx.Create(key("create", "new"), fields{"v": int64(3)})
	})
	if !errors.Is(err, docstore.ErrExists) {
		t.Errorf("Create of an existing document: %v, want ErrExists", err)
	}
	if runs != 1 {
		t.Errorf("fn ran %d times, want once: a failed Create is not a conflict to retry", runs)
	}
	docs := e.get(key("create", "new"), key("create", "beside"))
	if docs[0] == nil || !sameValue(int64(1), docs[0].Fields["v"]) {
		t.Errorf("the existing document is %v, want v=1 unchanged", docs[0])
	}
	if docs[1] != nil {
		t.Errorf("the failed transaction's Set was written: %v", docs[1])
	}

	// A Create after the document was deleted writes it again.
	if err := e.tx(func(ctx context.Context, tx docstore.Tx) error { return tx.Delete(key("create", "new")) }); err != nil {
		t.Fatal(err)
	}
	err = e.tx(func(ctx context.Context, tx docstore.Tx) error {
		return tx.Create(key("create", "new"), fields{"v": int64(4)})
	})
	if err != nil {
		t.Errorf("Create of a deleted document: %v", err)
	}
}
