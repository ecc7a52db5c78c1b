package firestore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/stores/docstore"
)

func key(c, id string) docstore.Key { return docstore.Key{Collection: c, ID: id} }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, d *Docs, docs ...docstore.Doc) {
	t.Helper()
	err := d.RunTx(ctxT(t), func(ctx context.Context, tx docstore.Tx) error {
		for _, doc := range docs {
			if err := tx.Set(doc.Key, doc.Fields); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("put: %v", err)
	}
}

func ids(docs []*docstore.Doc) []string {
	out := []string{}
	for _, d := range docs {
		out = append(out, d.Key.ID)
	}
	return out
}

// The values as Firestore holds them: the client decodes integers as
// int64 and timestamps in UTC, bytes never nil.
func TestValuesAsFirestoreStoresThem(t *testing.T) {
	d := openTest(t, DocsConfig{})
	zone := time.FixedZone("Z+0530", 5*3600+1800)
	in := docstore.Fields{
		"int":     int64(math.MinInt64),
		"str":     "ü ✓",
		"bool":    true,
		"time":    time.Date(2024, 5, 6, 7, 8, 9, 123456789, zone),
		"bytes":   []byte{0, 0xff},
		"nilb":    []byte(nil),
		"nil":     nil,
		"a.b c":   "a field name with a dot and a space is one name",
		"zerotim": time.Time{},
	}
	k := key("v", "x")
	put(t, d, docstore.Doc{Key: k, Fields: in})

	// What the database holds, read with the client directly.
	snap, err := d.client.Collection("v").Doc("x").Get(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	raw := snap.Data()
	if _, ok := raw["int"].(int64); !ok {
		t.Errorf("int stored as %T, want an integer", raw["int"])
	}
	if tm, ok := raw["time"].(time.Time); !ok || !tm.Equal(time.Date(2024, 5, 6, 1, 38, 9, 123456000, time.UTC)) {
		t.Errorf("time stored as %v, want it cut to the microsecond", raw["time"])
	}
	if _, ok := raw["a.b c"]; !ok {
		t.Errorf("field %q not stored under its own name: %v", "a.b c", raw)
	}

	got, err := d.Get(ctxT(t), k)
	if err != nil || got[0] == nil {
		t.Fatalf("Get: %v, %v", got, err)
	}
	f := got[0].Fields
	if tm := f["time"].(time.Time); tm.Location() != time.UTC || tm.Nanosecond() != 123456000 {
		t.Errorf("time read back as %v, want UTC, to the microsecond", tm)
	}
	if b, ok := f["nilb"].([]byte); !ok || b == nil || len(b) != 0 {
		t.Errorf("nil bytes read back as %#v, want empty bytes", f["nilb"])
	}
	if v, ok := f["nil"]; !ok || v != nil {
		t.Errorf("nil read back as %#v (present %v)", v, ok)
	}
	if tm := f["zerotim"].(time.Time); !tm.IsZero() {
		t.Errorf("zero time read back as %v", tm)
	}
	if f["int"] != int64(math.MinInt64) || f["str"] != "ü ✓" || f["bool"] != true {
		t.Errorf("read back %v", f)
	}
}

func TestRefusesOtherValueTypes(t *testing.T) {
	d := openTest(t, DocsConfig{})
	for _, v := range []any{1, 1.5, int32(1), []string{"a"}, map[string]any{}} {
		err := d.RunTx(ctxT(t), func(ctx context.Context, tx docstore.Tx) error {
			return tx.Set(key("v", "bad"), docstore.Fields{"v": v})
		})
		if err == nil {
			t.Errorf("Set of a %T succeeded", v)
		}
	}
	if got, _ := d.Get(ctxT(t), key("v", "bad")); got[0] != nil {
		t.Errorf("a refused Set left %v", got[0].Fields)
	}
}

// Ids that Firestore reserves round trip, keep key id order in queries and
// page by StartAfter.
func TestReservedIDs(t *testing.T) {
	d := openTest(t, DocsConfig{})
	var docs []docstore.Doc
	for _, id := range edgeIDs {
		docs = append(docs, docstore.Doc{Key: key("ids", id), Fields: docstore.Fields{"id": id}})
	}
	put(t, d, docs...)
	var keys []docstore.Key
	for _, id := range edgeIDs {
		keys = append(keys, key("ids", id))
	}
	got, err := d.Get(ctxT(t), keys...)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if g == nil || g.Fields["id"] != edgeIDs[i] {
			t.Errorf("Get %q: %v", edgeIDs[i], g)
		}
	}
	want := slices.Sorted(slices.Values(edgeIDs))
	all, err := d.Query(ctxT(t), docstore.Query{Collection: "ids"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(all), want) {
		t.Errorf("query order %q, want %q", ids(all), want)
	}
	for i, id := range want {
		rest, err := d.Query(ctxT(t), docstore.Query{Collection: "ids", StartAfter: id})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(rest), want[i+1:]) {
			t.Errorf("StartAfter %q: %q, want %q", id, ids(rest), want[i+1:])
		}
	}
	// What Firestore holds under the reserved ones.
	if s, err := d.client.Collection("ids").Doc("__x__\x01").Get(ctxT(t)); err != nil || s.Data()["id"] != "__x__" {
		t.Errorf("__x__ not stored as %q: %v", "__x__\x01", err)
	}
}

// A range filter without Order is ordered by its field (Firestore cannot
// serve it in key order), then by key id.
func TestRangeWithoutOrder(t *testing.T) {
	d := openTest(t, DocsConfig{})
	put(t, d,
		docstore.Doc{Key: key("r", "a"), Fields: docstore.Fields{"n": int64(3)}},
		docstore.Doc{Key: key("r", "b"), Fields: docstore.Fields{"n": int64(1)}},
		docstore.Doc{Key: key("r", "c"), Fields: docstore.Fields{"n": int64(3)}},
		docstore.Doc{Key: key("r", "d"), Fields: docstore.Fields{"n": int64(0)}},
	)
	got, err := d.Query(ctxT(t), docstore.Query{Collection: "r", Filters: []docstore.Filter{{Field: "n", Op: docstore.Ge, Value: int64(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b", "a", "c"}; !slices.Equal(ids(got), want) {
		t.Errorf("ids %q, want %q", ids(got), want)
	}
}

// Stores with different prefixes on one database see only their own.
func TestCollectionPrefix(t *testing.T) {
	project := newProject(t)
	a := openTest(t, DocsConfig{ProjectID: project, CollectionPrefix: "a_"})
	b := openTest(t, DocsConfig{ProjectID: project, CollectionPrefix: "b_"})
	put(t, a, docstore.Doc{Key: key("c", "x"), Fields: docstore.Fields{"who": "a"}})
	put(t, b, docstore.Doc{Key: key("c", "y"), Fields: docstore.Fields{"who": "b"}})
	if got, _ := a.Query(ctxT(t), docstore.Query{Collection: "c"}); !slices.Equal(ids(got), []string{"x"}) {
		t.Errorf("store a queries %q", ids(got))
	}
	if n, _ := b.Count(ctxT(t), docstore.Query{Collection: "c"}); n != 1 {
		t.Errorf("store b counts %d", n)
	}
	if got, _ := b.Get(ctxT(t), key("c", "x")); got[0] != nil {
		t.Errorf("store b reads a's document")
	}
	if s, err := a.client.Collection("a_c").Doc("x").Get(ctxT(t)); err != nil || !s.Exists() {
		t.Errorf("a's document not in collection a_c: %v", err)
	}
}

func TestNamedDatabase(t *testing.T) {
	project := newProject(t)
	def := openTest(t, DocsConfig{ProjectID: project})
	other := openTest(t, DocsConfig{ProjectID: project, DatabaseID: "other"})
	put(t, other, docstore.Doc{Key: key("c", "x"), Fields: docstore.Fields{}})
	if got, _ := other.Get(ctxT(t), key("c", "x")); got[0] == nil {
		t.Errorf("document missing in its database")
	}
	if got, _ := def.Get(ctxT(t), key("c", "x")); got[0] != nil {
		t.Errorf("document of database %q visible in (default)", "other")
	}
}

// fn that drops Get's ErrReadAfterWrite still fails, and nothing commits.
func TestReadAfterWriteIgnored(t *testing.T) {
	d := openTest(t, DocsConfig{})
	err := d.RunTx(ctxT(t), func(ctx context.Context, tx docstore.Tx) error {
		if err := tx.Set(key("c", "x"), docstore.Fields{}); err != nil {
			return err
		}
		if _, err := tx.Get(ctx, key("c", "y")); !errors.Is(err, docstore.ErrReadAfterWrite) {
			t.Errorf("Get after Set: %v, want ErrReadAfterWrite", err)
		}
		return nil
	})
	if !errors.Is(err, docstore.ErrReadAfterWrite) {
		t.Errorf("RunTx: %v, want ErrReadAfterWrite", err)
	}
	if got, _ := d.Get(ctxT(t), key("c", "x")); got[0] != nil {
		t.Errorf("the write of a failed transaction committed")
	}
}

// Two transactions that read the same document and write it, with no
// retries: they cannot both commit, and the one that does not gets
// ErrContention.
func TestContention(t *testing.T) {
	project := newProject(t)
	k := key("c", "n")
	put(t, openTest(t, DocsConfig{ProjectID: project}), docstore.Doc{Key: k, Fields: docstore.Fields{"n": int64(0)}})
	var read sync.WaitGroup
	read.Add(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		d := openTest(t, DocsConfig{ProjectID: project, MaxAttempts: 1})
		wg.Go(func() {
			errs[i] = d.RunTx(ctxT(t), func(ctx context.Context, tx docstore.Tx) error {
				got, err := tx.Get(ctx, k)
				read.Done()
				if err != nil {
					return err
				}
				read.Wait() // both have read n before either writes
				return tx.Set(k, docstore.Fields{"n": got[0].Fields["n"].(int64) + 1})
			})
		})
	}
	wg.Wait()
	committed := 0
	for _, err := range errs {
		switch {
		case err == nil:
			committed++
		case !errors.Is(err, docstore.ErrContention):
			t.Errorf("RunTx: %v, want nil or ErrContention", err)
		}
	}
	if committed > 1 {
		t.Fatalf("both committed on the same read: an update was lost")
	}
	got, _ := openTest(t, DocsConfig{ProjectID: project}).Get(ctxT(t), k)
	if n := got[0].Fields["n"].(int64); n != int64(committed) {
		t.Errorf("n = %d after %d commits", n, committed)
	}
	t.Logf("errors: %v", errs)
}

func TestBilled(t *testing.T) {
	d := openTest(t, DocsConfig{})
	ctx := ctxT(t)
	check := func(what string, want Billed) {
		t.Helper()
		if got := d.Billed(); got != want {
			t.Errorf("after %s: billed %+v, want %+v", what, got, want)
		}
	}
	check("nothing", Billed{})
	put(t, d,
		docstore.Doc{Key: key("c", "a"), Fields: docstore.Fields{"g": int64(1)}},
		docstore.Doc{Key: key("c", "b"), Fields: docstore.Fields{"g": int64(1)}},
		docstore.Doc{Key: key("c", "c"), Fields: docstore.Fields{"g": int64(2)}})
	check("3 sets", Billed{Writes: 3})
	if _, err := d.Get(ctx, key("c", "a"), key("c", "missing"), key("c", "a")); err != nil {
		t.Fatal(err)
	}
	check("Get of a, missing, a", Billed{Reads: 2, Writes: 3})
	if _, err := d.Query(ctx, docstore.Query{Collection: "c", Filters: []docstore.Filter{{Field: "g", Op: docstore.Eq, Value: int64(9)}}}); err != nil {
		t.Fatal(err)
	}
	check("a query returning none", Billed{Reads: 3, Writes: 3})
	if _, err := d.Query(ctx, docstore.Query{Collection: "c", Limit: 2}); err != nil {
		t.Fatal(err)
	}
	check("a query returning 2", Billed{Reads: 5, Writes: 3})
	if _, err := d.Count(ctx, docstore.Query{Collection: "c"}); err != nil {
		t.Fatal(err)
	}
	check("a count of 3", Billed{Reads: 6, Writes: 3})
	err := d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		if _, err := tx.Get(ctx, key("c", "a"), key("c", "zz")); err != nil {
			return err
		}
		if err := tx.Set(key("c", "d"), docstore.Fields{}); err != nil {
			return err
		}
		if err := tx.Delete(key("c", "a")); err != nil {
			return err
		}
		return tx.Delete(key("c", "never"))
	})
	if err != nil {
		t.Fatal(err)
	}
	check("a transaction reading 2, setting 1, deleting 2", Billed{Reads: 8, Writes: 4, Deletes: 2})
	boom := errors.New("boom")
	err = d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		if _, err := tx.Get(ctx, key("c", "b")); err != nil {
			return err
		}
		if err := tx.Set(key("c", "e"), docstore.Fields{}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("RunTx: %v, want fn's error as is", err)
	}
	check("a transaction that read 1 and failed", Billed{Reads: 9, Writes: 4, Deletes: 2})
}

// Reads of attempts that conflicted and ran again are billed, writes only
// once per commit: after concurrent increments, reads are the attempts
// that read and writes the increments.
func TestBilledRetries(t *testing.T) {
	d := openTest(t, DocsConfig{})
	k := key("c", "n")
	const workers, rounds = 6, 4
	var readAttempts atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				err := d.RunTx(ctxT(t), func(ctx context.Context, tx docstore.Tx) error {
					got, err := tx.Get(ctx, k)
					if err != nil {
						return err
					}
					readAttempts.Add(1)
					n := int64(0)
					if got[0] != nil {
						n = got[0].Fields["n"].(int64)
					}
					return tx.Set(k, docstore.Fields{"n": n + 1})
				})
				if err != nil {
					t.Errorf("RunTx: %v", err)
				}
			}
		})
	}
	wg.Wait()
	got, err := d.Get(ctxT(t), k)
	if err != nil {
		t.Fatal(err)
	}
	if n := got[0].Fields["n"].(int64); n != workers*rounds {
		t.Errorf("n = %d after %d increments: an update was lost or doubled", n, workers*rounds)
	}
	b := d.Billed()
	if want := readAttempts.Load() + 1; b.Reads != want {
		t.Errorf("billed reads %d, want %d (%d transaction attempts, one Get)", b.Reads, want, readAttempts.Load())
	}
	if b.Writes != workers*rounds {
		t.Errorf("billed writes %d, want %d", b.Writes, workers*rounds)
	}
	t.Logf("%d increments took %d attempts", workers*rounds, readAttempts.Load())
}

func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		ctx         context.Context
		code        codes.Code
		unavailable bool
	}{
		{ctx, codes.Unavailable, true},
		{ctx, codes.DeadlineExceeded, true},
		{ctx, codes.Aborted, false},
		{ctx, codes.InvalidArgument, false},
		{canceled, codes.Unavailable, false}, // the caller's own end
	} {
		err := readErr(c.ctx, fmt.Errorf("wrapped: %w", status.Error(c.code, "x")))
		if errors.Is(err, docstore.ErrUnavailable) != c.unavailable {
			t.Errorf("readErr(%v, ctx err %v) = %v, want unavailable=%v", c.code, c.ctx.Err(), err, c.unavailable)
		}
		if status.Code(err) != c.code {
			t.Errorf("readErr lost the status: %v", err)
		}
	}
}
