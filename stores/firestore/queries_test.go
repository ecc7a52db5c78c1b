package firestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/stores/docstore"
)

// docs/firestore.md: "Field names are single names (FieldPath), dots
// included." Sum must add up the field named "a.b", as Query filters and
// orders on it do.
func TestSumOnDottedFieldName(t *testing.T) {
	d := openTest(t, DocsConfig{})
	put(t, d,
		docstore.Doc{Key: key("s", "x"), Fields: docstore.Fields{"k": "q", "a.b": int64(2)}},
		docstore.Doc{Key: key("s", "y"), Fields: docstore.Fields{"k": "q", "a.b": int64(3)}},
	)
	q := docstore.Query{Collection: "s", Filters: []docstore.Filter{{Field: "a.b", Op: docstore.Ge, Value: int64(0)}}}
	got, err := d.Query(ctxT(t), docstore.Query{Collection: "s", Filters: q.Filters, Order: []docstore.Order{{Field: "a.b"}}})
	t.Logf("Query on a.b >= 0: %v, %v", ids(got), err)
	n, err := d.Sum(ctxT(t), docstore.Query{Collection: "s", Filters: []docstore.Filter{{Field: "k", Op: docstore.Eq, Value: "q"}}}, "a.b")
	if err != nil || n != 5 {
		t.Errorf("Sum of field %q = %d, %v; want 5", "a.b", n, err)
	}
}

// A query that can never be sent (a string value Firestore cannot hold)
// must fail at once, and not as docstore.ErrUnavailable (which tells the
// caller "the backend cannot be reached now; try again").
func TestQueryWithAStringNotUTF8FailsAtOnce(t *testing.T) {
	d := openTest(t, DocsConfig{})
	put(t, d, docstore.Doc{Key: key("u", "x"), Fields: docstore.Fields{"s": "ok"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := d.Query(ctx, docstore.Query{Collection: "u", Filters: []docstore.Filter{{Field: "s", Op: docstore.Eq, Value: "bad \xff utf-8"}}})
	took := time.Since(start)
	t.Logf("Query: %v after %v", err, took.Round(time.Millisecond))
	if err == nil {
		t.Fatal("Query with an invalid UTF-8 string succeeded")
	}
	if errors.Is(err, docstore.ErrUnavailable) {
		t.Errorf("Query with an invalid UTF-8 string = %v: ErrUnavailable for a request that can never succeed", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Query with an invalid UTF-8 string ran to its deadline (%v): the client resent it", took.Round(time.Millisecond))
	}
}

// Firestore's Admin API (Index.fields): "The last field entry is always for
// the field path __name__. If, on creation, __name__ was not specified as
// the last field, it will be added automatically with the same direction as
// that of the last field defined." The backend appends an ASCENDING
// __name__ to every query, so a query ordered by a DESCENDING field needs
// an index that ends (..., field DESC, __name__ ASC). MoveTaskList's query
// (orderedbatch/tasks.go) is such a query; IndexesJSON must declare an
// index that serves it.
func TestDescQueriesHaveTheirIndex(t *testing.T) {
	d := openTest(t, DocsConfig{})
	raw, err := IndexesJSON("")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Indexes []struct {
			CollectionGroup string `json:"collectionGroup"`
			Fields          []struct{ FieldPath, Order string }
		}
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for _, filters := range [][]docstore.Filter{
		{{Field: "src", Op: docstore.Eq, Value: "arn"}},
		{{Field: "status", Op: docstore.Eq, Value: "RUNNING"}},
		{{Field: "src", Op: docstore.Eq, Value: "arn"}, {Field: "status", Op: docstore.Eq, Value: "RUNNING"}},
	} {
		q := docstore.Query{Collection: "tasks", Filters: filters, Order: []docstore.Order{{Field: "started", Desc: true}}, Limit: 10}
		fq, err := d.query(q, true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fq.Serialize()
		if err != nil {
			t.Fatal(err)
		}
		var req firestorepb.RunQueryRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		var need []string // the query's ordering, as Firestore runs it
		for _, o := range req.GetStructuredQuery().GetOrderBy() {
			need = append(need, fmt.Sprintf("%s %s", o.GetField().GetFieldPath(), o.GetDirection()))
		}
		eq := map[string]bool{}
		for _, f := range filters {
			eq[f.Field] = true
		}
		found := false
		for _, ix := range file.Indexes {
			if ix.CollectionGroup != "tasks" || len(ix.Fields) < len(eq) {
				continue
			}
			// Equality fields first (any order), then the ordering, with
			// __name__ last: as declared, or implicit in the direction of
			// the last field (Firestore's Index.fields documentation).
			ok := true
			for _, f := range ix.Fields[:len(eq)] {
				ok = ok && eq[f.FieldPath]
			}
			var have []string
			for _, f := range ix.Fields[len(eq):] {
				have = append(have, fmt.Sprintf("%s %s", f.FieldPath, f.Order))
			}
			if last := ix.Fields[len(ix.Fields)-1]; last.FieldPath != "__name__" {
				have = append(have, "__name__ "+last.Order)
			}
			if ok && fmt.Sprint(have) == fmt.Sprint(need) {
				found = true
			}
		}
		if !found {
			t.Errorf("query on tasks with filters %v orders by %v; no index of IndexesJSON serves that ordering", filters, need)
		}
	}
}
