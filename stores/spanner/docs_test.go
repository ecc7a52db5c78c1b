package spanner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	sp "cloud.google.com/go/spanner"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// protocolConfig is a fresh database with the protocol's tables declared.
func protocolConfig(t *testing.T) Config {
	cfg := newConfig(t)
	cfg.Tables, cfg.Indexes = orderedbatch.Schema(), orderedbatch.Indexes()
	return cfg
}

// Several instances starting at once on a fresh database all open it, and
// the migrations are recorded once each.
func TestMigrationsConcurrentStart(t *testing.T) {
	cfg := protocolConfig(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			d, err := OpenDocs(context.Background(), cfg)
			if err == nil {
				d.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v", i, err)
		}
	}
	d := openTest(t, cfg)
	var versions []int64
	err := d.client.Single().Query(context.Background(), sp.Statement{SQL: "SELECT Version FROM SchemaMigrations ORDER BY Version"}).Do(func(r *sp.Row) error {
		var v int64
		versions = append(versions, v)
		return r.Column(0, &versions[len(versions)-1])
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(migrations) || versions[len(versions)-1] != migrations[len(migrations)-1].version {
		t.Errorf("applied versions %v, want one row per migration (%d)", versions, len(migrations))
	}
}

// The migrated schema has every column orderedbatch.Schema declares, of
// its type (OpenDocs checks it), and every index orderedbatch.Indexes
// names, with its columns in order.
func TestSchemaMatchesProtocol(t *testing.T) {
	d := openTest(t, protocolConfig(t))
	have := map[string][]string{} // index name -> "column ORDER" in position order
	st := sp.Statement{SQL: `SELECT INDEX_NAME, COLUMN_NAME, COLUMN_ORDERING FROM INFORMATION_SCHEMA.INDEX_COLUMNS
		WHERE TABLE_SCHEMA = '' AND INDEX_TYPE = 'INDEX' ORDER BY INDEX_NAME, ORDINAL_POSITION`}
	err := d.client.Single().Query(context.Background(), st).Do(func(r *sp.Row) error {
		var ix, col string
		var ord sp.NullString
		if err := r.Columns(&ix, &col, &ord); err != nil {
			return err
		}
		if ord.Valid { // key columns stored in the index have no ordering
			have[ix] = append(have[ix], col+" "+ord.StringVal)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range orderedbatch.Indexes() {
		var want []string
		for _, f := range ix.Fields {
			dir := "ASC"
			if f.Desc {
				dir = "DESC"
			}
			want = append(want, f.Field+" "+dir)
		}
		if got := have[indexName(ix)]; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("index %s has %v, want %v", indexName(ix), got, want)
		}
	}
}

// A declared column the database lacks fails the open, naming it.
func TestSchemaBehindFailsOpen(t *testing.T) {
	cfg := protocolConfig(t)
	cfg.Tables = append(cfg.Tables, docstore.Table{Collection: "queues", Fields: []docstore.Column{{Name: "colour", Type: docstore.String}}})
	_, err := OpenDocs(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("OpenDocs with an undeclared column: %v, want an error naming it", err)
	}
}

// Typed tables keep each declared type, read back as written; a field
// that is not declared is refused.
func TestTypedValues(t *testing.T) {
	d := openTest(t, protocolConfig(t))
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	k := docstore.Key{Collection: "messages", ID: "inc.s.m1"}
	f := docstore.Fields{"inc": "inc", "gen": int64(3), "shard": int64(5), "vis": now, "sent": now, "recv": true, "data": []byte{1, 2}}
	if err := d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error { return tx.Set(k, f) }); err != nil {
		t.Fatal(err)
	}
	got, err := d.Get(ctx, k)
	if err != nil || got[0] == nil {
		t.Fatalf("Get: %v, %v", got, err)
	}
	f["vis"], f["sent"] = docstore.Micro(now), docstore.Micro(now)
	for name, want := range f {
		g := got[0].Fields[name]
		if b, ok := want.([]byte); ok {
			if gb, _ := g.([]byte); string(gb) != string(b) {
				t.Errorf("%s = %v, want %v", name, g, want)
			}
		} else if g != want {
			t.Errorf("%s = %v (%T), want %v", name, g, g, want)
		}
	}
	if len(got[0].Fields) != len(f) {
		t.Errorf("read %d fields, wrote %d (absent columns must stay absent): %v", len(got[0].Fields), len(f), got[0].Fields)
	}
	err = d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		return tx.Set(k, docstore.Fields{"colour": "red"})
	})
	if err == nil {
		t.Error("Set of an undeclared field succeeded")
	}
	// A query on the typed columns, through its index.
	docs, err := d.Query(ctx, docstore.Query{Collection: "messages", Filters: []docstore.Filter{
		{Field: "inc", Op: docstore.Eq, Value: "inc"}, {Field: "gen", Op: docstore.Eq, Value: int64(3)},
		{Field: "shard", Op: docstore.In, Value: []any{int64(5), int64(6)}}, {Field: "vis", Op: docstore.Le, Value: now.Add(time.Second)},
	}, Order: []docstore.Order{{Field: "vis"}}, Limit: 10})
	if err != nil || len(docs) != 1 || docs[0].Key != k {
		t.Errorf("Query = %v, %v; want the one message", docs, err)
	}
	n, err := d.Sum(ctx, docstore.Query{Collection: "messages", Filters: []docstore.Filter{{Field: "inc", Op: docstore.Eq, Value: "inc"}}}, "gen")
	if err != nil || n != 3 {
		t.Errorf("Sum = %d, %v; want 3", n, err)
	}
}

// What a call asked of Spanner is counted in its tally: a read-write
// transaction with its rows read and mutations, a read-only one with its
// rows.
func TestBilled(t *testing.T) {
	d := openTest(t, protocolConfig(t))
	k := docstore.Key{Collection: "counters", ID: "inc.1"}
	ctx, tally := stores.WithTally(context.Background())
	err := d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		if _, err := tx.Get(ctx, k); err != nil {
			return err
		}
		return tx.Set(k, docstore.Fields{"inc": "inc", "next": int64(1)})
	})
	if err != nil {
		t.Fatal(err)
	}
	o := tally.Ops()
	want := d.tables["counters"].putMutations()
	if o.ReadWrite != 1 || o.ReadOnly != 0 || o.Writes != want || o.Reads != 0 {
		t.Errorf("a transaction reading a missing row and writing it: %+v, want 1 read-write transaction, %d mutations, 0 rows read", o, want)
	}
	ctx, tally = stores.WithTally(context.Background())
	if _, err := d.Get(ctx, k, docstore.Key{Collection: "counters", ID: "missing"}); err != nil {
		t.Fatal(err)
	}
	if o := tally.Ops(); o.ReadOnly != 1 || o.Reads != 1 || o.ReadWrite != 0 {
		t.Errorf("a Get of one present and one missing row: %+v, want 1 read-only transaction, 1 row read", o)
	}
	if b := d.Billed(); b.ReadWrite != 1 || b.ReadOnly != 1 || b.Mutations != want || b.RowsRead != 1 {
		t.Errorf("Billed() = %+v", b)
	}
}

// A Spanner that cannot be reached fails the open with
// docstore.ErrUnavailable, at once, not at the caller's deadline.
func TestOpenUnreachable(t *testing.T) {
	t.Setenv("SPANNER_EMULATOR_HOST", "127.0.0.1:1") // nothing listens on port 1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := OpenDocs(ctx, Config{Project: "p", Instance: "i", Database: "d"})
	if !errors.Is(err, docstore.ErrUnavailable) || ctx.Err() != nil {
		t.Fatalf("OpenDocs on a closed port: %v (context: %v), want docstore.ErrUnavailable before the deadline", err, ctx.Err())
	}
}

// When Spanner goes away under an open store, transactions and reads fail
// with docstore.ErrUnavailable within Config.CallTimeout, not at the
// caller's deadline. The test runs an emulator of its own and stops it.
func TestUnreachableAfterOpen(t *testing.T) {
	emulatorHost(t)
	dir := t.TempDir() + "/emulator"
	script := "../../infra/scripts/spanner.sh"
	start := exec.Command("bash", script, "start", dir)
	// Without the shared emulator's address, which the script would print
	// back instead of starting one.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPANNER_EMULATOR_HOST=") {
			start.Env = append(start.Env, kv)
		}
	}
	out, err := start.Output()
	if err != nil {
		t.Fatalf("spanner.sh start: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("bash", script, "stop", dir).Run() })
	host, ok := strings.CutPrefix(strings.SplitN(string(out), "\n", 2)[0], "export SPANNER_EMULATOR_HOST=")
	if !ok {
		t.Fatalf("spanner.sh start printed %q", out)
	}
	t.Setenv("SPANNER_EMULATOR_HOST", host)
	d := openTest(t, Config{Project: "gone", Instance: "gone", Database: "gone", CallTimeout: 3 * time.Second})
	k := docstore.Key{Collection: "c", ID: "x"}
	if err := d.RunTx(context.Background(), func(ctx context.Context, tx docstore.Tx) error { return tx.Set(k, docstore.Fields{}) }); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("bash", script, "stop", dir).Run(); err != nil {
		t.Fatalf("spanner.sh stop: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		if _, err := tx.Get(ctx, k); err != nil {
			return err
		}
		return tx.Set(k, docstore.Fields{"n": int64(1)})
	})
	if !errors.Is(err, docstore.ErrUnavailable) || ctx.Err() != nil {
		t.Errorf("RunTx with the emulator stopped: %v (context: %v), want docstore.ErrUnavailable within the call timeout", err, ctx.Err())
	}
	if _, err := d.Get(ctx, k); !errors.Is(err, docstore.ErrUnavailable) || ctx.Err() != nil {
		t.Errorf("Get with the emulator stopped: %v (context: %v), want docstore.ErrUnavailable", err, ctx.Err())
	}
}

// A field written as a nil byte slice reads back as empty bytes, as on the
// other backends, not as absent (the client writes a nil slice as NULL).
func TestNilBytesReadBackEmpty(t *testing.T) {
	d := openTest(t, protocolConfig(t))
	ctx := context.Background()
	for _, c := range []struct {
		id string
		v  []byte
	}{{"nil", nil}, {"empty", []byte{}}} {
		k := docstore.Key{Collection: "chunks", ID: c.id}
		if err := d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
			return tx.Set(k, docstore.Fields{"inc": "i", "gen": int64(1), "data": c.v})
		}); err != nil {
			t.Fatal(err)
		}
		got, err := d.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := got[0].Fields["data"].([]byte); !ok || len(v) != 0 {
			t.Errorf("%s: the field written as %#v reads back as %#v, want empty bytes", c.id, c.v, got[0].Fields["data"])
		}
	}
}
