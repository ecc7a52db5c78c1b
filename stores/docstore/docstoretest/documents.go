package docstoretest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

var documentTests = []testCase{
	{"RoundTrip", testRoundTrip},
	{"AllTypesInOneDocument", testAllTypes},
	{"SetReplaces", testSetReplaces},
	{"EmptyDocument", testEmptyDocument},
	{"Delete", testDelete},
	{"GetMissing", testGetMissing},
	{"GetOrder", testGetOrder},
	{"GetMaxBatch", testGetMaxBatch},
	{"KeyIDs", testKeyIDs},
	{"Collections", testCollections},
}

// randomBytes returns n bytes that are the same on every run.
func randomBytes(n int, seed uint64) []byte {
	var key [32]byte
	key[0] = byte(seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails
	return b
}

// valueCases are values of every type a document holds, with the edges of
// each.
func valueCases() []struct {
	name string
	v    any
} {
	return []struct {
		name string
		v    any
	}{
		{"string/empty", ""},
		{"string/plain", "hello"},
		{"string/unicode", "héllo, wörld ✓ 日本"},
		{"string/long", strings.Repeat("abcdefghij", 1000)},
		{"int64/zero", int64(0)},
		{"int64/negative", int64(-1)},
		{"int64/max", int64(math.MaxInt64)},
		{"int64/min", int64(math.MinInt64)},
		{"bool/true", true},
		{"bool/false", false},
		// Kept to the microsecond, in UTC, whatever the zone written.
		{"time/nanos-in-zone", time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 5*3600+1800))},
		{"time/before-1970", time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{"time/unix-zero-local", time.Unix(0, 0)},
		{"time/zero", time.Time{}},
		{"time/micro", docstore.Micro(time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC))},
		{"bytes/empty", []byte{}},
		{"bytes/small", []byte{0, 1, 0x7f, 0x80, 0xff}},
		{"bytes/256KiB", randomBytes(256<<10, 1)},
		{"nil", nil},
	}
}

func testRoundTrip(t *testing.T, e *env) {
	for i, c := range valueCases() {
		t.Run(c.name, func(t *testing.T) {
			e := e.with(t)
			k := key("values", fmt.Sprintf("v%02d", i))
			want := docstore.Fields{"v": c.v}
			e.put(&docstore.Doc{Key: k, Fields: docstore.Fields{"v": c.v}})
			got := e.get(k)[0]
			if got == nil {
				t.Fatalf("Get %v after Set: missing", k)
			}
			if d := fieldsDiff(want, got.Fields); d != "" {
				t.Errorf("Get: %s", d)
			}
			// A transaction reads the same.
			var inTx docstore.Fields
			err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
				docs, err := tx.Get(ctx, k)
				if err != nil {
					return err
				}
				checkGetShape(t, "Tx.Get", []docstore.Key{k}, docs)
				if docs[0] == nil {
					return fmt.Errorf("Tx.Get %v: missing", k)
				}
				inTx = docs[0].Fields
				return nil
			})
			if err != nil {
				t.Fatalf("RunTx: %v", err)
			}
			if d := fieldsDiff(want, inTx); d != "" {
				t.Errorf("Tx.Get: %s", d)
			}
		})
	}
}

func testAllTypes(t *testing.T, e *env) {
	want := docstore.Fields{}
	for i, c := range valueCases() {
		want[fmt.Sprintf("f%02d", i)] = c.v
	}
	k := key("values", "all")
	e.put(&docstore.Doc{Key: k, Fields: want})
	got := e.get(k)[0]
	if got == nil {
		t.Fatalf("Get %v after Set: missing", k)
	}
	if d := fieldsDiff(want, got.Fields); d != "" {
		t.Errorf("Get: %s", d)
	}
}

func testSetReplaces(t *testing.T, e *env) {
	k := key("docs", "x")
	e.put(doc("docs", "x", docstore.Fields{"a": int64(1), "b": "two"}))
	e.put(doc("docs", "x", docstore.Fields{"c": true}))
	got := e.get(k)[0]
	if got == nil {
		t.Fatal("document missing after the second Set")
	}
	if d := fieldsDiff(docstore.Fields{"c": true}, got.Fields); d != "" {
		t.Errorf("Set must replace the whole document: %s", d)
	}
}

func testEmptyDocument(t *testing.T, e *env) {
	k := key("docs", "empty")
	e.put(doc("docs", "empty", docstore.Fields{}))
	got := e.get(k)[0]
	if got == nil {
		t.Fatal("a document without fields reads as missing")
	}
	if len(got.Fields) != 0 {
		t.Errorf("fields %v, want none", got.Fields)
	}
}

func testDelete(t *testing.T, e *env) {
	k, keep := key("docs", "gone"), key("docs", "kept")
	e.put(doc("docs", "gone", docstore.Fields{"v": int64(1)}), doc("docs", "kept", docstore.Fields{"v": int64(2)}))
	del := func(keys ...docstore.Key) error {
		return e.tx(func(ctx context.Context, tx docstore.Tx) error {
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := del(k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	docs := e.get(k, keep)
	if docs[0] != nil {
		t.Errorf("deleted document still reads as %v", docs[0].Fields)
	}
	if docs[1] == nil {
		t.Errorf("Delete of %v removed %v too", k, keep)
	}
	if err := del(k, key("docs", "never")); err != nil {
		t.Errorf("Delete of missing documents: %v, want nothing to happen", err)
	}
	e.put(doc("docs", "gone", docstore.Fields{"v": int64(3)}))
	if got := e.get(k)[0]; got == nil || !sameValue(int64(3), got.Fields["v"]) {
		t.Errorf("document set again after its delete reads %v, want v=3", got)
	}
}

func testGetMissing(t *testing.T, e *env) {
	e.put(doc("docs", "a", docstore.Fields{"v": "a"}), doc("docs", "c", docstore.Fields{"v": "c"}))
	keys := []docstore.Key{key("docs", "a"), key("docs", "b"), key("docs", "c"), key("nowhere", "a")}
	docs := e.get(keys...)
	for i, want := range []string{"a", "", "c", ""} {
		switch {
		case want == "" && docs[i] != nil:
			t.Errorf("Get %v: %v, want nil (missing)", keys[i], docs[i].Fields)
		case want != "" && docs[i] == nil:
			t.Errorf("Get %v: nil, want the document", keys[i])
		case want != "" && !sameValue(want, docs[i].Fields["v"]):
			t.Errorf("Get %v: v=%s, want %q", keys[i], show(docs[i].Fields["v"]), want)
		}
	}
	if docs := e.get(); len(docs) != 0 {
		t.Errorf("Get of no keys returned %d results", len(docs))
	}
}

func testGetOrder(t *testing.T, e *env) {
	var put []*docstore.Doc
	var keys []docstore.Key
	for i := range 20 {
		coll := []string{"order", "order2"}[i%2]
		id := fmt.Sprintf("d%02d", i)
		put = append(put, doc(coll, id, docstore.Fields{"n": int64(i)}))
		keys = append(keys, key(coll, id), key(coll, id+"-missing"))
	}
	e.put(put...)
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	docs := e.get(keys...)
	for i, k := range keys {
		missing := strings.HasSuffix(k.ID, "-missing")
		switch {
		case missing && docs[i] != nil:
			t.Errorf("result %d for %v: %v, want nil", i, k, docs[i].Fields)
		case !missing && docs[i] == nil:
			t.Errorf("result %d for %v: nil, want the document", i, k)
		case !missing:
			var n int
			fmt.Sscanf(k.ID, "d%d", &n)
			if !sameValue(int64(n), docs[i].Fields["n"]) {
				t.Errorf("result %d for %v: n=%s, want %d", i, k, show(docs[i].Fields["n"]), n)
			}
		}
	}
}

func testGetMaxBatch(t *testing.T, e *env) {
	n := e.st.Limits().MaxBatchGets
	var put []*docstore.Doc
	keys := make([]docstore.Key, n)
	for i := range keys {
		keys[i] = key("batch", fmt.Sprintf("k%06d", i))
		if i%50 == 7 {
			put = append(put, doc("batch", keys[i].ID, docstore.Fields{"i": int64(i)}))
		}
	}
	e.put(put...)
	docs := e.get(keys...) // a Get of MaxBatchGets keys is allowed
	for i, d := range docs {
		if exists := i%50 == 7; exists != (d != nil) {
			t.Errorf("result %d for %v: present=%v, want %v", i, keys[i], d != nil, exists)
		} else if exists && !sameValue(int64(i), d.Fields["i"]) {
			t.Errorf("result %d: i=%s, want %d", i, show(d.Fields["i"]), i)
		}
	}
}

// keyIDs are ids with every kind of printable ASCII the contract allows.
var keyIDs = []string{
	"plain", "with space", "UPPER", "upper", "0", "-", "a.b", "~tilde",
	"punct!\"#$%&'()*+,-.:;<=>?@[\\]^_`{|}~",
	strings.Repeat("x", 700), // the longest id
}

func testKeyIDs(t *testing.T, e *env) {
	var put []*docstore.Doc
	var keys []docstore.Key
	for _, id := range keyIDs {
		put = append(put, doc("ids", id, docstore.Fields{"id": id}))
		keys = append(keys, key("ids", id))
	}
	e.put(put...)
	for i, d := range e.get(keys...) {
		if d == nil || !sameValue(keyIDs[i], d.Fields["id"]) {
			t.Errorf("Get %q: %v, want the document written under that id", keyIDs[i], d)
		}
	}
	// With no Order a query answers in key id order: byte order, for ASCII.
	want := slices.Sorted(slices.Values(keyIDs))
	got, err := e.st.Query(e.ctx, docstore.Query{Collection: "ids"})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if ids := idsOf(got); !slices.Equal(ids, want) {
		t.Errorf("Query without Order: ids %q, want key id order %q", ids, want)
	}
}

func testCollections(t *testing.T, e *env) {
	e.put(doc("one", "same", docstore.Fields{"c": "one"}), doc("two", "same", docstore.Fields{"c": "two"}))
	docs := e.get(key("one", "same"), key("two", "same"))
	for i, want := range []string{"one", "two"} {
		if docs[i] == nil || !sameValue(want, docs[i].Fields["c"]) {
			t.Errorf("%v: %v, want c=%q: collections keep their documents apart", key(want, "same"), docs[i], want)
		}
	}
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error { return tx.Delete(key("one", "same")) })
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if docs := e.get(key("one", "same"), key("two", "same")); docs[0] != nil || docs[1] == nil {
		t.Errorf("after deleting one/same: one/same present=%v, two/same present=%v; want false, true", docs[0] != nil, docs[1] != nil)
	}
}

func idsOf(docs []*docstore.Doc) []string {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.Key.ID
	}
	return ids
}
