package spanner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sp "cloud.google.com/go/spanner"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"

	"github.com/sluicehq/sluice/stores/docstore"
)

// reader is what reads take: a read-only or a read-write transaction.
type reader interface {
	Read(ctx context.Context, table string, keys sp.KeySet, columns []string) *sp.RowIterator
	Query(ctx context.Context, statement sp.Statement) *sp.RowIterator
}

func checkKey(k docstore.Key) error {
	if k.Collection == "" || len(k.Collection) > 700 || strings.Contains(k.Collection, "/") {
		return fmt.Errorf("spanner: collection name %q (want 1 to 700 bytes, without '/')", k.Collection)
	}
	if k.ID == "" || len(k.ID) > 700 {
		return fmt.Errorf("spanner: key id of %d bytes (want 1 to 700)", len(k.ID))
	}
	for i := 0; i < len(k.ID); i++ {
		if c := k.ID[i]; c < 0x20 || c > 0x7e || c == '/' {
			return fmt.Errorf("spanner: key id %q holds byte %#x (want printable ASCII but '/')", k.ID, c)
		}
	}
	return nil
}

// readKeys reads keys through r, one result per key (nil when missing),
// and says how many rows it read. Keys of one table go in one read.
func (d *Docs) readKeys(ctx context.Context, r reader, keys []docstore.Key) ([]*docstore.Doc, int64, error) {
	byTable := map[string][]docstore.Key{} // table name ("" schemaless) -> distinct keys
	seen := map[docstore.Key]bool{}
	var order []string
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, 0, err
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		name := ""
		if t := d.tables[k.Collection]; t != nil {
			name = t.name
		}
		if _, ok := byTable[name]; !ok {
			order = append(order, name)
		}
		byTable[name] = append(byTable[name], k)
	}
	found := map[docstore.Key]docstore.Fields{}
	var rows int64
	for _, name := range order {
		ks := byTable[name]
		set := make([]sp.KeySet, len(ks))
		var iter *sp.RowIterator
		if name == "" {
			for i, k := range ks {
				set[i] = sp.Key{k.Collection, k.ID}
			}
			iter = r.Read(ctx, schemaless, sp.KeySets(set...), []string{"Coll", keyCol, "Fields"})
		} else {
			for i, k := range ks {
				set[i] = sp.Key{k.ID}
			}
			iter = r.Read(ctx, name, sp.KeySets(set...), d.tables[ks[0].Collection].columns)
		}
		coll := ks[0].Collection
		err := iter.Do(func(row *sp.Row) error {
			rows++
			if name == "" {
				var c, id string
				var b []byte
				if err := row.Columns(&c, &id, &b); err != nil {
					return err
				}
				f, err := decodeFields(b)
				if err != nil {
					return err
				}
				found[docstore.Key{Collection: c, ID: id}] = f
				return nil
			}
			id, f, err := d.tables[coll].decode(row)
			if err != nil {
				return err
			}
			found[docstore.Key{Collection: coll, ID: id}] = f
			return nil
		})
		if err != nil {
			return nil, rows, err
		}
	}
	out := make([]*docstore.Doc, len(keys))
	for i, k := range keys {
		if f, ok := found[k]; ok {
			out[i] = &docstore.Doc{Key: k, Fields: copyFields(f)}
		}
	}
	return out, rows, nil
}

// copyFields gives each result its own map and byte slices.
func copyFields(f docstore.Fields) docstore.Fields {
	c := make(docstore.Fields, len(f))
	for k, v := range f {
		if b, ok := v.([]byte); ok {
			v = append([]byte{}, b...)
		}
		c[k] = v
	}
	return c
}

// read runs f on a strong view of the database outside any transaction
// of the caller's: a single-use read-only transaction, or a multi-use one
// when f reads more than once. The emulator answers a strong read-only
// read only after a wait of about 60 ms following any commit, while its
// locking reads in a read-write transaction answer at once and see the
// same committed state: there f runs in a read-write transaction that
// writes nothing (retried like any other when the emulator aborts it),
// unless the caller is inside a RunTx of its own, whose transaction the
// emulator's one-at-a-time rule would make this one wait for forever.
func (d *Docs) read(ctx context.Context, multi bool, f func(ctx context.Context, r reader) error) error {
	inTx := ctx.Value(inTxKey{}) != nil
	rctx, cancel := detach(ctx)
	defer cancel()
	rctx, cancelCall := context.WithTimeout(rctx, d.callTimeout)
	defer cancelCall()
	if d.emulator && !inTx {
		cl, err := d.clients.take(rctx)
		if err != nil {
			return err
		}
		defer d.clients.put(cl)
		_, err = cl.ReadWriteTransaction(rctx, func(ctx context.Context, t *sp.ReadWriteTransaction) error { return f(ctx, t) })
		return err
	}
	if multi || d.emulator {
		cl, err := d.clients.take(rctx)
		if err != nil {
			return err
		}
		defer d.clients.put(cl)
		ro := cl.ReadOnlyTransaction()
		defer ro.Close()
		return f(rctx, ro)
	}
	return f(rctx, d.client.Single())
}

// Get reads keys strongly: keys of one table in a single-use read-only
// transaction, of several in one multi-use read-only transaction, so that
// the answer is one consistent state either way.
func (d *Docs) Get(ctx context.Context, keys ...docstore.Key) ([]*docstore.Doc, error) {
	if len(keys) == 0 {
		return []*docstore.Doc{}, nil
	}
	distinct := map[string]bool{}
	for _, k := range keys {
		if d.tables[k.Collection] != nil {
			distinct[k.Collection] = true
		} else {
			distinct[""] = true
		}
	}
	var docs []*docstore.Doc
	var rows int64
	err := d.read(ctx, len(distinct) > 1, func(ctx context.Context, r reader) error {
		var err error
		docs, rows, err = d.readKeys(ctx, r, keys)
		return err
	})
	if err != nil {
		return nil, readErr(ctx, err)
	}
	d.count(ctx, Billed{ReadOnly: 1, RowsRead: rows})
	return docs, nil
}

// Query runs q in a single-use read-only transaction (a strong read).
func (d *Docs) Query(ctx context.Context, q docstore.Query) ([]*docstore.Doc, error) {
	if q.Limit < 0 {
		return nil, fmt.Errorf("spanner: negative Limit %d", q.Limit)
	}
	t := d.tables[q.Collection]
	if t == nil {
		docs, rows, err := d.scan(ctx, q.Collection)
		if err != nil {
			return nil, err
		}
		d.count(ctx, Billed{ReadOnly: 1, RowsRead: rows})
		return evaluate(q, docs, true)
	}
	if q.Limit > 0 {
		return d.queryKeysFirst(ctx, t, q)
	}
	st, ok, err := t.sql(q, strings.Join(t.columns, ", "), true, "")
	if err != nil {
		return nil, err
	}
	if !ok {
		return []*docstore.Doc{}, nil
	}
	var out []*docstore.Doc
	err = d.read(ctx, false, func(ctx context.Context, r reader) error {
		out = []*docstore.Doc{}
		return r.Query(ctx, st).Do(func(row *sp.Row) error {
			id, f, err := t.decode(row)
			if err != nil {
				return err
			}
			out = append(out, &docstore.Doc{Key: docstore.Key{Collection: q.Collection, ID: id}, Fields: f})
			return nil
		})
	})
	if err != nil {
		return nil, readErr(ctx, err)
	}
	d.count(ctx, Billed{ReadOnly: 1, RowsRead: int64(len(out))})
	return out, nil
}

// queryKeysFirst answers a query with a Limit in two reads of one
// snapshot: the keys from the index alone (the filtered and ordered
// columns are in it, so no row is fetched for a candidate that does not
// make the cut), then the winning rows by key. The candidate queries of
// the protocol take the first few of thousands of index entries; fetching
// each one's row, records and bodies included, only to drop it would cost
// a back-join per entry (and on the emulator, which sorts whole rows
// before the LIMIT, most of the query's time).
func (d *Docs) queryKeysFirst(ctx context.Context, t *table, q docstore.Query) ([]*docstore.Doc, error) {
	st, ok, err := t.sql(q, keyCol, true, "")
	if err != nil {
		return nil, err
	}
	if !ok {
		return []*docstore.Doc{}, nil
	}
	var out []*docstore.Doc
	var rows int64
	err = d.read(ctx, true, func(ctx context.Context, r reader) error {
		var keys []docstore.Key
		err := r.Query(ctx, st).Do(func(row *sp.Row) error {
			var id string
			if err := row.Column(0, &id); err != nil {
				return err
			}
			keys = append(keys, docstore.Key{Collection: q.Collection, ID: id})
			return nil
		})
		if err != nil || len(keys) == 0 {
			out, rows = []*docstore.Doc{}, int64(len(keys))
			return err
		}
		docs, n, err := d.readKeys(ctx, r, keys)
		if err != nil {
			return err
		}
		out, rows = make([]*docstore.Doc, 0, len(docs)), int64(len(keys))+n
		for _, doc := range docs {
			if doc != nil {
				out = append(out, doc)
			}
		}
		return nil
	})
	if err != nil {
		return nil, readErr(ctx, err)
	}
	d.count(ctx, Billed{ReadOnly: 1, RowsRead: rows})
	return out, nil
}

// scan reads a schemaless collection in key order.
func (d *Docs) scan(ctx context.Context, coll string) ([]*docstore.Doc, int64, error) {
	if err := checkKey(docstore.Key{Collection: coll, ID: "x"}); err != nil {
		return nil, 0, err
	}
	var out []*docstore.Doc
	st := sp.Statement{SQL: "SELECT DocId, Fields FROM Schemaless WHERE Coll = @c ORDER BY DocId", Params: map[string]any{"c": coll}}
	err := d.read(ctx, false, func(ctx context.Context, r reader) error {
		out = nil
		return r.Query(ctx, st).Do(d.scanRow(coll, &out))
	})
	if err != nil {
		return nil, 0, readErr(ctx, err)
	}
	return out, int64(len(out)), nil
}

func (d *Docs) scanRow(coll string, out *[]*docstore.Doc) func(row *sp.Row) error {
	return func(row *sp.Row) error {
		var id string
		var b []byte
		if err := row.Columns(&id, &b); err != nil {
			return err
		}
		f, err := decodeFields(b)
		if err != nil {
			return err
		}
		*out = append(*out, &docstore.Doc{Key: docstore.Key{Collection: coll, ID: id}, Fields: f})
		return nil
	}
}

// Count counts with COUNT(*) over the query's index.
func (d *Docs) Count(ctx context.Context, q docstore.Query) (int64, error) {
	n, _, err := d.aggregate(ctx, q, "")
	return n, err
}

// Sum adds an INT64 column up with SUM, counting in the same query.
func (d *Docs) Sum(ctx context.Context, q docstore.Query, field string) (int64, error) {
	_, s, err := d.aggregate(ctx, q, field)
	return s, err
}

func (d *Docs) aggregate(ctx context.Context, q docstore.Query, sum string) (n, s int64, err error) {
	if q.Limit != 0 || q.StartAfter != "" {
		return 0, 0, errors.New("spanner: Count and Sum take no Limit or StartAfter")
	}
	t := d.tables[q.Collection]
	if t == nil {
		docs, rows, err := d.scan(ctx, q.Collection)
		if err != nil {
			return 0, 0, err
		}
		d.count(ctx, Billed{ReadOnly: 1, RowsRead: rows})
		m, err := evaluate(q, docs, false)
		if err != nil {
			return 0, 0, err
		}
		for _, doc := range m {
			if v, ok := doc.Fields[sum].(int64); ok {
				s += v
			}
		}
		return int64(len(m)), s, nil
	}
	what := "COUNT(*), 0"
	if sum != "" {
		if t.types[sum] != docstore.Int64 {
			return 0, 0, fmt.Errorf("spanner: Sum of %s.%s, not an INT64 column", t.name, sum)
		}
		what = "COUNT(*), IFNULL(SUM(" + quote(sum) + "), 0)"
	}
	st, ok, err := t.sql(q, what, false, sum)
	if err != nil || !ok {
		return 0, 0, err
	}
	err = d.read(ctx, false, func(ctx context.Context, r reader) error {
		return r.Query(ctx, st).Do(func(row *sp.Row) error { return row.Columns(&n, &s) })
	})
	if err != nil {
		return 0, 0, readErr(ctx, err)
	}
	d.count(ctx, Billed{ReadOnly: 1, RowsRead: n})
	return n, s, nil
}

// StoredBytes is what the rows q matches hold, with their index entries,
// by Spanner's storage sizes (the rule Billed.Bytes counts writes by):
// one strong read of q's collection, which must be a declared one, q
// without Limit or StartAfter. It reads every matching row.
func (d *Docs) StoredBytes(ctx context.Context, q docstore.Query) (int64, error) {
	if q.Limit != 0 || q.StartAfter != "" {
		return 0, errors.New("spanner: StoredBytes takes no Limit or StartAfter")
	}
	t := d.tables[q.Collection]
	if t == nil {
		return 0, fmt.Errorf("spanner: StoredBytes of %q, not a declared collection", q.Collection)
	}
	st, ok, err := t.sql(q, "COUNT(*), IFNULL(SUM("+t.sizeSQL()+"), 0)", false, "")
	if err != nil || !ok {
		return 0, err
	}
	var n, size int64
	err = d.read(ctx, false, func(ctx context.Context, r reader) error {
		return r.Query(ctx, st).Do(func(row *sp.Row) error { return row.Columns(&n, &size) })
	})
	if err != nil {
		return 0, readErr(ctx, err)
	}
	d.count(ctx, Billed{ReadOnly: 1, RowsRead: n})
	return size, nil
}

// inTxKey marks the context of fn in RunTx.
type inTxKey struct{}

var errAttempts = errors.New("spanner: transaction attempts exhausted")

// RunTx runs fn in a read-write transaction. The client runs fn again when
// Spanner aborts an attempt (a conflict, or on the emulator any second
// transaction at a time); after MaxAttempts it gives up with
// docstore.ErrContention. Commit statistics give the mutations counted.
func (d *Docs) RunTx(ctx context.Context, fn func(ctx context.Context, tx docstore.Tx) error) error {
	var (
		ran           int64
		last          *tx
		fnErr         error
		reachedCommit bool
	)
	client, err := d.clients.take(ctx)
	if err != nil {
		return unavailable(ctx, err)
	}
	defer d.clients.put(client)
	callCtx, cancel := context.WithTimeout(ctx, d.callTimeout)
	defer cancel()
	watch := &commitWatch{}
	callCtx = context.WithValue(callCtx, commitWatchKey{}, watch)
	resp, err := client.ReadWriteTransactionWithOptions(callCtx, func(ctx context.Context, t *sp.ReadWriteTransaction) error {
		if watch.ambiguous.Load() {
			return errCommitAmbiguous // the client would run it again after a commit that may have applied
		}
		if ran >= int64(d.maxAttempts) {
			return errAttempts
		}
		ran++
		reachedCommit = false
		x := &tx{d: d, t: t}
		last = x
		defer func() { d.count(ctx, Billed{RowsRead: x.rows}) }()
		fnErr = fn(context.WithValue(ctx, inTxKey{}, true), x)
		if fnErr != nil {
			return fnErr
		}
		if x.readAfterWrite {
			fnErr = docstore.ErrReadAfterWrite
			return fnErr
		}
		if err := t.BufferWrite(x.muts); err != nil {
			return err
		}
		reachedCommit = true
		return nil
	}, sp.TransactionOptions{CommitOptions: sp.CommitOptions{ReturnCommitStats: true}})
	if ran > 1 {
		d.count(ctx, Billed{Retries: ran - 1})
	}
	if err == nil {
		m := resp.CommitStats.GetMutationCount()
		if m == 0 {
			m = last.mutations
		}
		d.count(ctx, Billed{ReadWrite: 1, Mutations: m, Bytes: last.bytes})
		return nil
	}
	switch {
	case errors.Is(err, errCommitAmbiguous):
		return fmt.Errorf("%w: %w", docstore.ErrOutcomeUnknown, err)
	case errors.Is(err, errAttempts):
		return fmt.Errorf("%w: %d attempts aborted", docstore.ErrContention, ran)
	case !reachedCommit && ctx.Err() == nil && callCtx.Err() != nil:
		// The call's bound passed before a commit was sent (the client
		// retries an unreachable Spanner until then).
		return fmt.Errorf("%w: no answer within %v: %w", docstore.ErrUnavailable, d.callTimeout, err)
	case fnErr != nil && errors.Is(err, fnErr) && sp.ErrCode(fnErr) != codes.Aborted:
		return fnErr
	case reachedCommit && sp.ErrCode(err) == codes.AlreadyExists:
		// A Create's insert found its row: the commit wrote nothing.
		return fmt.Errorf("%w: %w", docstore.ErrExists, err)
	case !reachedCommit && ctx.Err() == nil && transient(err):
		return fmt.Errorf("%w: %w", docstore.ErrUnavailable, err)
	case reachedCommit && (transient(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		// The commit was sent and its answer lost: it may have committed.
		// Neither the client (it resends a Commit only on Unavailable, with
		// the same transaction id, which Spanner commits at most once; it
		// runs the function again after an Internal stream reset, which the
		// commit watch stops: commitwatch.go) nor this runs it again.
		return fmt.Errorf("%w: %w", docstore.ErrOutcomeUnknown, err)
	default:
		return fmt.Errorf("spanner: transaction: %w", err)
	}
}

// tx is one attempt of RunTx.
type tx struct {
	d              *Docs
	t              *sp.ReadWriteTransaction
	muts           []*sp.Mutation
	wrote          bool
	readAfterWrite bool
	rows           int64
	// mutations is this attempt's own count of Spanner mutations, by
	// Spanner's rule, used when the commit reports none (the emulator).
	mutations int64
	// bytes is what this attempt's writes store (see cellBytes).
	bytes int64
}

func (x *tx) Get(ctx context.Context, keys ...docstore.Key) ([]*docstore.Doc, error) {
	if x.wrote {
		x.readAfterWrite = true
		return nil, docstore.ErrReadAfterWrite
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return []*docstore.Doc{}, nil
	}
	docs, rows, err := x.d.readKeys(ctx, x.t, keys)
	x.rows += rows
	if err != nil {
		if sp.ErrCode(err) != codes.Aborted && ctx.Err() == nil && transient(err) {
			return nil, fmt.Errorf("%w: %w", docstore.ErrUnavailable, err)
		}
		return nil, err // Aborted as it is: the client runs the attempt again
	}
	return docs, nil
}

func (x *tx) Set(key docstore.Key, fields docstore.Fields) error { return x.put(key, fields, false) }

// Create is an insert, which fails at commit with AlreadyExists when the
// row is there.
func (x *tx) Create(key docstore.Key, fields docstore.Fields) error { return x.put(key, fields, true) }

func (x *tx) put(key docstore.Key, f docstore.Fields, create bool) error {
	if err := checkKey(key); err != nil {
		return err
	}
	var m *sp.Mutation
	if t := x.d.tables[key.Collection]; t != nil {
		var err error
		if m, err = t.mutation(key.ID, f, create); err != nil {
			return err
		}
		x.mutations += t.putMutations()
		x.bytes += t.putBytes(key.ID, f)
	} else {
		b, err := encodeFields(f)
		if err != nil {
			return err
		}
		cols, vals := []string{"Coll", keyCol, "Fields"}, []any{key.Collection, key.ID, b}
		if create {
			m = sp.Insert(schemaless, cols, vals)
		} else {
			m = sp.Replace(schemaless, cols, vals)
		}
		x.mutations += 3
		x.bytes += cellBytes(key.Collection) + cellBytes(key.ID) + cellBytes(b)
	}
	x.muts = append(x.muts, m)
	x.wrote = true
	return nil
}

func (x *tx) Delete(key docstore.Key) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if t := x.d.tables[key.Collection]; t != nil {
		x.muts = append(x.muts, sp.Delete(t.name, sp.Key{key.ID}))
		x.mutations += t.deleteMutations()
	} else {
		x.muts = append(x.muts, sp.Delete(schemaless, sp.Key{key.Collection, key.ID}))
		x.mutations++
	}
	x.wrote = true
	return nil
}

// transient: Spanner could not be reached or did not answer in time.
func transient(err error) bool {
	switch sp.ErrCode(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// readErr maps a failed read outside a transaction: nothing was written, so
// an unreachable backend is docstore.ErrUnavailable.
func readErr(ctx context.Context, err error) error {
	if errors.Is(err, iterator.Done) {
		return nil
	}
	if ctx.Err() == nil && (transient(err) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%w: %w", docstore.ErrUnavailable, err)
	}
	return fmt.Errorf("spanner: %w", err)
}

// unavailable maps a failure to reach Spanner while opening.
func unavailable(ctx context.Context, err error) error {
	if ctx.Err() == nil && transient(err) {
		return fmt.Errorf("%w: %w", docstore.ErrUnavailable, err)
	}
	return err
}
