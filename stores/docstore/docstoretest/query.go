package docstoretest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

// Short names, so that the tables below read as queries.
type (
	fields = docstore.Fields
	query  = docstore.Query
	filter = docstore.Filter
	order  = docstore.Order
)

const (
	eq = docstore.Eq
	lt = docstore.Lt
	le = docstore.Le
	gt = docstore.Gt
	ge = docstore.Ge
	in = docstore.In
)

// base is the fixture's time origin; t holds base plus some minutes.
var base = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func mins(n int) time.Time { return base.Add(time.Duration(n) * time.Minute) }

// The query fixture, collection "items" (and "other", which no query of
// "items" may answer with):
//
//	id  grp  n  t   flag   m        opt
//	a1  a    3  +3  true   3        -
//	a2  a    1  +1  false  1        "x"
//	a3  a    3  +5  true   "3"      -
//	a4  a    -  -   true   true     "y"
//	b1  b    2  +2  false  2        -
//	b2  b    5  +4  true   10       -
//	b3  b    3  +6  true   3        "z"
//	c1  c    1  +0  false  -        -
//	c2  c    4  +7  true   -1       -
//
// Orderings by n: asc a2 c1 b1 a1 a3 b3 c2 b2; desc b2 c2 a1 a3 b3 b1 a2 c1
// (ties by key id).
func fixture() []*docstore.Doc {
	f := func(grp string, n any, t any, flag bool, m any, opt any) fields {
		fs := fields{"grp": grp, "flag": flag}
		for name, v := range map[string]any{"n": n, "t": t, "m": m, "opt": opt} {
			if v != nil {
				fs[name] = v
			}
		}
		return fs
	}
	none := any(nil)
	return []*docstore.Doc{
		doc("items", "a1", f("a", int64(3), mins(3), true, int64(3), none)),
		doc("items", "a2", f("a", int64(1), mins(1), false, int64(1), "x")),
		doc("items", "a3", f("a", int64(3), mins(5), true, "3", none)),
		doc("items", "a4", f("a", none, none, true, true, "y")),
		doc("items", "b1", f("b", int64(2), mins(2), false, int64(2), none)),
		doc("items", "b2", f("b", int64(5), mins(4), true, int64(10), none)),
		doc("items", "b3", f("b", int64(3), mins(6), true, int64(3), "z")),
		doc("items", "c1", f("c", int64(1), mins(0), false, none, none)),
		doc("items", "c2", f("c", int64(4), mins(7), true, int64(-1), none)),
		doc("other", "a1", f("a", int64(3), mins(3), true, int64(3), "x")),
		doc("other", "x9", f("a", int64(1), mins(1), true, int64(1), "x")),
	}
}

type queryCase struct {
	name string
	q    query
	want []string
}

func items(filters []filter, orders ...order) query {
	return query{Collection: "items", Filters: filters, Order: orders}
}

func fl(field string, op docstore.Op, v any) filter { return filter{Field: field, Op: op, Value: v} }

var (
	byN     = order{Field: "n"}
	byNDesc = order{Field: "n", Desc: true}
	byT     = order{Field: "t"}
)

func withLimit(q query, n int) query      { q.Limit = n; return q }
func startAfter(q query, id string) query { q.StartAfter = id; return q }

var queryCases = []queryCase{
	{"All", items(nil), []string{"a1", "a2", "a3", "a4", "b1", "b2", "b3", "c1", "c2"}},
	{"OtherCollection", query{Collection: "other"}, []string{"a1", "x9"}},
	{"UnknownCollection", query{Collection: "nothing-here"}, nil},

	{"Eq/string", items([]filter{fl("grp", eq, "a")}), []string{"a1", "a2", "a3", "a4"}},
	{"Eq/int64", items([]filter{fl("n", eq, int64(3))}), []string{"a1", "a3", "b3"}},
	{"Eq/bool", items([]filter{fl("flag", eq, false)}), []string{"a2", "b1", "c1"}},
	{"Eq/time", items([]filter{fl("t", eq, mins(4))}), []string{"b2"}},
	{"Eq/none", items([]filter{fl("grp", eq, "zz")}), nil},

	{"Lt", items([]filter{fl("n", lt, int64(3))}, byN), []string{"a2", "c1", "b1"}},
	{"Le", items([]filter{fl("n", le, int64(3))}, byN), []string{"a2", "c1", "b1", "a1", "a3", "b3"}},
	{"Gt", items([]filter{fl("n", gt, int64(3))}, byN), []string{"c2", "b2"}},
	{"Ge", items([]filter{fl("n", ge, int64(3))}, byN), []string{"a1", "a3", "b3", "c2", "b2"}},
	{"Between", items([]filter{fl("n", gt, int64(1)), fl("n", lt, int64(5))}, byN), []string{"b1", "a1", "a3", "b3", "c2"}},
	{"Range/time", items([]filter{fl("t", ge, mins(2)), fl("t", lt, mins(6))}, byT), []string{"b1", "a1", "b2", "a3"}},
	{"Range/timeDesc", items([]filter{fl("t", le, mins(1))}, order{Field: "t", Desc: true}), []string{"a2", "c1"}},

	{"In/string", items([]filter{fl("grp", in, []any{"b", "c", "zz"})}), []string{"b1", "b2", "b3", "c1", "c2"}},
	{"In/int64", items([]filter{fl("n", in, []any{int64(1), int64(5), int64(99)})}), []string{"a2", "b2", "c1"}},
	{"In/ordered", items([]filter{fl("n", in, []any{int64(1), int64(5)})}, byNDesc), []string{"b2", "a2", "c1"}},

	{"Equalities+Range", items([]filter{fl("grp", eq, "a"), fl("flag", eq, true), fl("n", ge, int64(2))}, byN), []string{"a1", "a3"}},
	{"In+Eq+RangeDesc", items([]filter{fl("grp", in, []any{"a", "b"}), fl("flag", eq, true), fl("n", gt, int64(2))}, byNDesc), []string{"b2", "a1", "a3", "b3"}},

	// Ties are broken by key id.
	{"Order/asc", items(nil, byN), []string{"a2", "c1", "b1", "a1", "a3", "b3", "c2", "b2"}},
	{"Order/desc", items(nil, byNDesc), []string{"b2", "c2", "a1", "a3", "b3", "b1", "a2", "c1"}},
	{"Order/twoFields", items(nil, order{Field: "grp"}, byNDesc), []string{"a1", "a3", "a2", "b2", "b3", "b1", "c2", "c1"}},
	{"Order/withEq", items([]filter{fl("grp", eq, "b")}, byNDesc), []string{"b2", "b3", "b1"}},

	{"Limit/ordered", withLimit(items(nil, byN), 3), []string{"a2", "c1", "b1"}},
	{"Limit/one", withLimit(items(nil, byNDesc), 1), []string{"b2"}},
	{"Limit/filtered", withLimit(items([]filter{fl("grp", eq, "b")}), 2), []string{"b1", "b2"}},
	{"Limit/overAll", withLimit(items(nil, byN), 100), []string{"a2", "c1", "b1", "a1", "a3", "b3", "c2", "b2"}},

	{"StartAfter/id", startAfter(items(nil), "a3"), []string{"a4", "b1", "b2", "b3", "c1", "c2"}},
	{"StartAfter/between", startAfter(items(nil), "b"), []string{"b1", "b2", "b3", "c1", "c2"}},
	{"StartAfter/last", startAfter(items(nil), "c2"), nil},
	{"StartAfter/filtered", startAfter(items([]filter{fl("grp", eq, "a")}), "a2"), []string{"a3", "a4"}},
	{"StartAfter/limited", withLimit(startAfter(items([]filter{fl("flag", eq, true)}), "a1"), 3), []string{"a3", "a4", "b2"}},

	// A document without a filtered or ordered field does not match.
	{"Missing/ordered", items(nil, order{Field: "opt"}), []string{"a2", "a4", "b3"}},
	{"Missing/filtered", items([]filter{fl("opt", ge, "")}, order{Field: "opt"}), []string{"a2", "a4", "b3"}},
	{"Missing/never", items([]filter{fl("absent", eq, "x")}), nil},

	// Filters compare values of their own type only.
	{"Types/eqInt", items([]filter{fl("m", eq, int64(3))}), []string{"a1", "b3"}},
	{"Types/eqString", items([]filter{fl("m", eq, "3")}), []string{"a3"}},
	{"Types/eqBool", items([]filter{fl("m", eq, true)}), []string{"a4"}},
	{"Types/geInt", items([]filter{fl("m", ge, int64(0))}, order{Field: "m"}), []string{"a2", "b1", "a1", "b3", "b2"}},
	{"Types/ltInt", items([]filter{fl("m", lt, int64(5))}, order{Field: "m"}), []string{"c2", "a2", "b1", "a1", "b3"}},
	{"Types/geString", items([]filter{fl("m", ge, "")}, order{Field: "m"}), []string{"a3"}},
	{"Types/inMixed", items([]filter{fl("m", in, []any{int64(3), "3"})}), []string{"a1", "a3", "b3"}},
}

var queryTests = []testCase{
	{"Cases", testQueryCases},
	{"WholeDocuments", testQueryWholeDocuments},
	{"Paging", testQueryPaging},
	{"SeesCommits", testQuerySeesCommits},
}

func runQuery(t *testing.T, e *env, q query) []string {
	t.Helper()
	docs, err := e.st.Query(e.ctx, q)
	if err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	for _, d := range docs {
		if d == nil || d.Key.Collection != q.Collection {
			t.Fatalf("query of %q returned %v", q.Collection, d)
		}
	}
	return idsOf(docs)
}

func testQueryCases(t *testing.T, e *env) {
	e.put(fixture()...)
	for _, c := range queryCases {
		t.Run(c.name, func(t *testing.T) {
			if got := runQuery(t, e, c.q); !slices.Equal(got, c.want) {
				t.Errorf("query %+v:\n got ids %q\nwant ids %q", c.q, got, c.want)
			}
		})
	}
}

func testQueryWholeDocuments(t *testing.T, e *env) {
	fx := fixture()
	e.put(fx...)
	docs, err := e.st.Query(e.ctx, items([]filter{fl("grp", eq, "a")}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fields{}
	for _, d := range fx {
		if d.Key.Collection == "items" {
			want[d.Key.ID] = d.Fields
		}
	}
	if len(docs) != 4 {
		t.Fatalf("%d documents, want 4", len(docs))
	}
	for _, d := range docs {
		if diff := fieldsDiff(want[d.Key.ID], d.Fields); diff != "" {
			t.Errorf("%s: %s", d.Key.ID, diff)
		}
	}
}

// testQueryPaging pages through a collection by key id, as the contract
// says StartAfter with no Order does.
func testQueryPaging(t *testing.T, e *env) {
	var put []*docstore.Doc
	var all []string
	for i := range 23 {
		id := fmt.Sprintf("p%03d", i*7%23) // written out of order
		put = append(put, doc("pages", id, fields{"even": i*7%23%2 == 0}))
	}
	e.put(put...)
	for i := range 23 {
		all = append(all, fmt.Sprintf("p%03d", i))
	}
	for _, size := range []int{1, 5, 23, 50} {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatalf("page size %d: still paging after %d pages (got %q)", size, pages, got)
			}
			page := runQuery(t, e, query{Collection: "pages", StartAfter: after, Limit: size})
			if len(page) > size {
				t.Fatalf("page of %d, over Limit %d", len(page), size)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1]
		}
		if !slices.Equal(got, all) {
			t.Errorf("page size %d: paged ids %q, want %q", size, got, all)
		}
	}
	// Paging within an equality filter.
	var got []string
	after := ""
	for {
		page := runQuery(t, e, query{Collection: "pages", Filters: []filter{fl("even", eq, true)}, StartAfter: after, Limit: 4})
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1]
	}
	var want []string
	for i := 0; i < 23; i += 2 {
		want = append(want, fmt.Sprintf("p%03d", i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("paging even=true: ids %q, want %q", got, want)
	}
}

// testQuerySeesCommits checks that a query run after a commit returned
// answers with it: writes, replacements and deletes.
func testQuerySeesCommits(t *testing.T, e *env) {
	e.put(fixture()...)
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
		if err := tx.Delete(key("items", "a1")); err != nil {
			return err
		}
		if err := tx.Set(key("items", "a2"), fields{"grp": "b", "n": int64(9)}); err != nil {
			return err
		}
		return tx.Set(key("items", "a5"), fields{"grp": "a", "n": int64(0)})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runQuery(t, e, items([]filter{fl("grp", eq, "a")})), []string{"a3", "a4", "a5"}; !slices.Equal(got, want) {
		t.Errorf("grp=a after the commit: %q, want %q", got, want)
	}
	if got, want := runQuery(t, e, items(nil, byNDesc)), []string{"a2", "b2", "c2", "a3", "b3", "b1", "c1", "a5"}; !slices.Equal(got, want) {
		t.Errorf("by n desc after the commit: %q, want %q", got, want)
	}
}

var countTests = []testCase{{"Cases", testCountCases}, {"SeesCommits", testCountSeesCommits}, {"Sum", testSum}}

// testSum adds up an int64 field; documents without it, or with a value of
// another type, add nothing.
func testSum(t *testing.T, e *env) {
	e.put(fixture()...)
	for _, c := range []struct {
		name  string
		q     query
		field string
		want  int64
	}{
		{"All", items(nil), "n", 22},
		{"Eq", items([]filter{fl("grp", eq, "a")}), "n", 7},
		{"In+Range", items([]filter{fl("grp", in, []any{"b", "c"}), fl("n", gt, int64(2))}, byN), "n", 12},
		{"OtherTypesAddNothing", items([]filter{fl("grp", eq, "a")}), "m", 4},
		{"None", items([]filter{fl("grp", eq, "zz")}), "n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := e.st.Sum(e.ctx, c.q, c.field)
			if err != nil {
				t.Fatalf("Sum %+v of %s: %v", c.q, c.field, err)
			}
			if n != c.want {
				t.Errorf("Sum %+v of %s = %d, want %d", c.q, c.field, n, c.want)
			}
		})
	}
}

func testCountCases(t *testing.T, e *env) {
	e.put(fixture()...)
	for _, c := range []struct {
		name string
		q    query
		want int64
	}{
		{"All", items(nil), 9},
		{"OtherCollection", query{Collection: "other"}, 2},
		{"UnknownCollection", query{Collection: "nothing-here"}, 0},
		{"Eq", items([]filter{fl("grp", eq, "a")}), 4},
		{"Range", items([]filter{fl("n", gt, int64(2))}, byN), 5},
		{"In", items([]filter{fl("grp", in, []any{"b", "c"})}), 5},
		{"Equalities+Range", items([]filter{fl("grp", eq, "a"), fl("flag", eq, true), fl("n", ge, int64(2))}, byN), 2},
		{"MissingOrdered", items(nil, order{Field: "opt"}), 3},
		{"Types", items([]filter{fl("m", eq, int64(3))}), 2},
		{"None", items([]filter{fl("grp", eq, "zz")}), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := e.st.Count(e.ctx, c.q)
			if err != nil {
				t.Fatalf("Count %+v: %v", c.q, err)
			}
			if n != c.want {
				t.Errorf("Count %+v = %d, want %d", c.q, n, c.want)
			}
		})
	}
}

func testCountSeesCommits(t *testing.T, e *env) {
	e.put(fixture()...)
	err := e.tx(func(ctx context.Context, tx docstore.Tx) error {
		if err := tx.Delete(key("items", "a1")); err != nil {
			return err
		}
		return tx.Set(key("items", "z1"), fields{"grp": "a"})
	})
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[*query]int64{
		{Collection: "items"}: 9,
		{Collection: "items", Filters: []filter{fl("grp", eq, "a")}}:                         4,
		{Collection: "items", Filters: []filter{fl("n", ge, int64(3))}, Order: []order{byN}}: 4,
	} {
		if n, err := e.st.Count(e.ctx, *q); err != nil || n != want {
			t.Errorf("Count %+v after the commit = %d, %v; want %d", *q, n, err, want)
		}
	}
}
