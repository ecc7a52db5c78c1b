// Package firestore is the Firestore backend of the document interface
// (stores/docstore), over Google's client cloud.google.com/go/firestore.
//
// A docstore collection is a top-level Firestore collection named
// DocsConfig.CollectionPrefix + the collection's name; a key id is the
// document id (see keys.go for the few ids Firestore reserves). Values map
// one to one onto Firestore types (values.go). Queries add an explicit
// ascending __name__ ordering after the caller's, so ties are broken by key
// id on every backend, and StartAfter is a __name__ > filter. Transactions
// are the client's RunTransaction: reads go through BatchGetDocuments in the
// transaction, writes are buffered by the client and committed together.
//
// The client talks to the emulator when FIRESTORE_EMULATOR_HOST is set
// (infra/scripts/firestore.sh starts one), otherwise to Firestore with
// Application Default Credentials unless DocsConfig.ClientOptions say
// otherwise.
package firestore

import (
	"strings"

	"context"
	"errors"
	"fmt"
	"sync/atomic"

	fs "cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
)

// DocsConfig says which Firestore database a Docs uses and how.
type DocsConfig struct {
	// ProjectID is the Google Cloud project. Required. On the emulator any
	// id works, and each project is a separate, empty data set.
	ProjectID string
	// DatabaseID is the Firestore database within the project; empty means
	// "(default)".
	DatabaseID string
	// CollectionPrefix goes in front of every collection name, so that
	// several stores share one database without seeing each other's
	// documents (e.g. "sluice_"). It must not contain '/'.
	CollectionPrefix string
	// MaxAttempts bounds the attempts of one RunTx before it gives up
	// with docstore.ErrContention; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// TTL says that the database has the TTL policies IndexesJSON declares
	// (on the fields orderedbatch.Expiring names), so expired dedup markers
	// and receive attempts are Firestore's to delete (one billed delete
	// each, within about a day of expiry) and Maintain leaves them. Set by
	// ?ttl=true in the store URL. The emulator has no TTL.
	TTL bool
	// ClientOptions go to the Firestore client (credentials, endpoint, ...).
	// Without them it uses Application Default Credentials, or the emulator
	// when FIRESTORE_EMULATOR_HOST is set.
	ClientOptions []option.ClientOption
}

// DefaultMaxAttempts is RunTx's attempts when DocsConfig.MaxAttempts is 0:
// more than the client's default (5), because under Standard edition's
// locks a transaction that loses a lock race is aborted and must be retried,
// and the protocol runs short transactions on a few hot documents.
const DefaultMaxAttempts = 20

// Docs is a docstore.Store on one Firestore database.
type Docs struct {
	client      *fs.Client
	project     string
	prefix      string
	maxAttempts int

	reads, writes, deletes atomic.Int64
}

var _ docstore.Store = (*Docs)(nil)

// OpenDocs connects to the database cfg names. The client connects lazily,
// so an unreachable Firestore shows at the first call (as
// docstore.ErrUnavailable), not here.
func OpenDocs(ctx context.Context, cfg DocsConfig) (*Docs, error) {
	if cfg.ProjectID == "" {
		return nil, errors.New("firestore: DocsConfig.ProjectID is required")
	}
	if cfg.CollectionPrefix != "" {
		if err := checkCollection(cfg.CollectionPrefix); err != nil {
			return nil, fmt.Errorf("firestore: CollectionPrefix: %w", err)
		}
	}
	db := cfg.DatabaseID
	if db == "" {
		db = fs.DefaultDatabaseID
	}
	attempts := cfg.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	client, err := fs.NewClientWithDatabase(ctx, cfg.ProjectID, db, cfg.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("firestore: %w", err)
	}
	return &Docs{client: client, project: cfg.ProjectID, prefix: cfg.CollectionPrefix, maxAttempts: attempts}, nil
}

// Close closes the client.
func (d *Docs) Close() error { return d.client.Close() }

// Limits are Firestore's documented hard limits (Quotas and limits page):
// a document at most 1 MiB (1,048,576 bytes, names and values encoded as
// Firestore sizes them), an API request and a transaction at most 10 MiB,
// at most 500 writes in one commit. Firestore documents no bound on the
// keys of one BatchGetDocuments; 1000 is Datastore mode's documented
// Lookup bound, used here as the same service's safe size.
//
// The emulator's gRPC server refuses any message over 4 MiB (4,194,304
// bytes) with RESOURCE_EXHAUSTED, which the client retries until its
// deadline; on the emulator MaxTxBytes stays under that, with room for
// the request's framing.
func (d *Docs) Limits() docstore.Limits {
	l := docstore.Limits{
		MaxDocBytes:  1 << 20,
		MaxTxWrites:  500,
		MaxTxBytes:   10 << 20,
		MaxBatchGets: 1000,
	}
	if d.client.UsesEmulator {
		l.MaxTxBytes = 4<<20 - 64<<10
	}
	return l
}

// Billed are the operations Firestore bills, as this backend counted them.
type Billed struct {
	Reads   int64 // document reads
	Writes  int64 // document writes
	Deletes int64 // document deletes
}

// Billed returns the operations billed since OpenDocs, counted by
// Firestore's pricing rules (Standard edition; "Understand Cloud Firestore
// billing", firebase.google.com/docs/firestore/pricing, and the Firestore
// pricing page on cloud.google.com):
//   - a read per document asked for by key, in a transaction or not,
//     whether it exists or not (keys repeated in one call are asked for,
//     and counted, once);
//   - a read per document a query returns, and one read for a query that
//     returns none (the minimum charge per query);
//   - a count aggregation: a read per batch of up to 1000 index entries it
//     matches, at least one;
//   - a write per Set and a delete per Delete of a transaction that
//     committed;
//   - reads of transaction attempts that aborted and were retried are
//     billed too, so they are counted; their writes never applied and are
//     not. A commit whose outcome is unknown (the connection broke) is not
//     counted.
//
// Backend calls that failed are not counted. Index entry reads beyond
// these, storage and network are not counted.
func (d *Docs) Billed() Billed {
	return Billed{Reads: d.reads.Load(), Writes: d.writes.Load(), Deletes: d.deletes.Load()}
}

// bill counts o in the totals and in ctx's tally (stores.WithTally), so a
// caller can price one call.
func (d *Docs) bill(ctx context.Context, o stores.BilledOps) {
	d.reads.Add(o.Reads)
	d.writes.Add(o.Writes)
	d.deletes.Add(o.Deletes)
	stores.TallyOf(ctx).Add(o)
}

func (d *Docs) coll(name string) (*fs.CollectionRef, error) {
	if err := checkCollection(name); err != nil {
		return nil, err
	}
	return d.client.Collection(d.prefix + name), nil
}

// refs returns one reference per distinct key (BatchGetDocuments answers a
// name once however often it is asked), and for each key its reference's
// index.
func (d *Docs) refs(keys []docstore.Key) ([]*fs.DocumentRef, []int, error) {
	refs := make([]*fs.DocumentRef, 0, len(keys))
	at := make([]int, len(keys))
	seen := make(map[docstore.Key]int, len(keys))
	for i, k := range keys {
		if j, ok := seen[k]; ok {
			at[i] = j
			continue
		}
		if err := checkKey(k); err != nil {
			return nil, nil, err
		}
		seen[k] = len(refs)
		at[i] = len(refs)
		refs = append(refs, d.client.Collection(d.prefix+k.Collection).Doc(encodeID(k.ID)))
	}
	return refs, at, nil
}

// docsOf builds one result per key from the snapshots of refs.
func docsOf(keys []docstore.Key, at []int, snaps []*fs.DocumentSnapshot) ([]*docstore.Doc, error) {
	out := make([]*docstore.Doc, len(keys))
	for i, k := range keys {
		s := snaps[at[i]]
		if s == nil || !s.Exists() {
			continue
		}
		f, err := fromData(s.Data())
		if err != nil {
			return nil, err
		}
		out[i] = &docstore.Doc{Key: k, Fields: f}
	}
	return out, nil
}

// Get reads keys strongly, in one BatchGetDocuments.
func (d *Docs) Get(ctx context.Context, keys ...docstore.Key) ([]*docstore.Doc, error) {
	if len(keys) == 0 {
		return []*docstore.Doc{}, nil
	}
	refs, at, err := d.refs(keys)
	if err != nil {
		return nil, err
	}
	var snaps []*fs.DocumentSnapshot
	if d.client.UsesEmulator {
		// The emulator's BatchGetDocuments outside a transaction can
		// answer two documents from either side of one commit (a torn
		// read, which Firestore's does not: a batch's documents do not
		// change between their read times). A read-only transaction
		// reads them as of one time there. Get may be called inside fn
		// of a RunTx, whose context the client marks to refuse nested
		// transactions: this one runs on a context without its values.
		rctx, cancel := detach(ctx)
		defer cancel()
		err = d.client.RunTransaction(rctx, func(ctx context.Context, t *fs.Transaction) error {
			var err error
			snaps, err = t.GetAll(refs)
			return err
		}, fs.ReadOnly)
	} else {
		snaps, err = d.client.GetAll(ctx, refs)
	}
	if err != nil {
		return nil, readErr(ctx, err)
	}
	d.bill(ctx, stores.BilledOps{Reads: int64(len(refs))})
	return docsOf(keys, at, snaps)
}

var ops = map[docstore.Op]string{
	docstore.Eq: "==",
	docstore.Lt: "<",
	docstore.Le: "<=",
	docstore.Gt: ">",
	docstore.Ge: ">=",
	docstore.In: "in",
}

// query builds q's Firestore query; paged adds StartAfter and Limit, which
// Count leaves out.
func (d *Docs) query(q docstore.Query, paged bool) (fs.Query, error) {
	c, err := d.coll(q.Collection)
	if err != nil {
		return fs.Query{}, err
	}
	fq := c.Query
	for _, f := range q.Filters {
		op, ok := ops[f.Op]
		if !ok {
			return fs.Query{}, fmt.Errorf("firestore: unknown filter op %d", f.Op)
		}
		var v any
		if f.Op == docstore.In {
			list, ok := f.Value.([]any)
			if !ok {
				return fs.Query{}, fmt.Errorf("firestore: In filter on %q wants a []any, got %T", f.Field, f.Value)
			}
			vs := make([]any, len(list))
			for i, x := range list {
				if vs[i], err = toValue(x); err != nil {
					return fs.Query{}, fmt.Errorf("%w (In filter on %q)", err, f.Field)
				}
			}
			v = vs
		} else if v, err = toValue(f.Value); err != nil {
			return fs.Query{}, fmt.Errorf("%w (filter on %q)", err, f.Field)
		}
		// FieldPath, not a dotted path: a field name is one name.
		fq = fq.WherePath(fs.FieldPath{f.Field}, op, v)
	}
	order := q.Order
	if len(order) == 0 && paged {
		// Firestore orders a range filter's field first, and refuses it
		// after __name__: a range query without Order is by that field,
		// then by key id.
		for _, f := range q.Filters {
			if f.Op != docstore.Eq && f.Op != docstore.In {
				order = []docstore.Order{{Field: f.Field}}
				break
			}
		}
	}
	for _, o := range order {
		dir := fs.Asc
		if o.Desc {
			dir = fs.Desc
		}
		fq = fq.OrderByPath(fs.FieldPath{o.Field}, dir)
	}
	// Ties by key id, ascending, whatever the direction before: Firestore's
	// implicit tie-break would follow the last direction.
	if !paged {
		// An aggregation needs no tie-break, and one would ask for an
		// index with the aggregated field after the key.
		return fq, nil
	}
	fq = fq.OrderBy(fs.DocumentID, fs.Asc)
	if q.StartAfter != "" {
		if err := checkKey(docstore.Key{Collection: q.Collection, ID: q.StartAfter}); err != nil {
			return fs.Query{}, fmt.Errorf("firestore: StartAfter: %w", err)
		}
		fq = fq.Where(fs.DocumentID, ">", c.Doc(encodeID(q.StartAfter)))
	}
	if q.Limit > 0 {
		fq = fq.Limit(q.Limit)
	}
	return fq, nil
}

// Query runs q outside any transaction.
func (d *Docs) Query(ctx context.Context, q docstore.Query) ([]*docstore.Doc, error) {
	fq, err := d.query(q, true)
	if err != nil {
		return nil, err
	}
	snaps, err := fq.Documents(ctx).GetAll()
	if err != nil {
		return nil, readErr(ctx, err)
	}
	d.bill(ctx, stores.BilledOps{Reads: max(1, int64(len(snaps)))})
	out := make([]*docstore.Doc, 0, len(snaps))
	for _, s := range snaps {
		f, err := fromData(s.Data())
		if err != nil {
			return nil, err
		}
		out = append(out, &docstore.Doc{Key: docstore.Key{Collection: q.Collection, ID: decodeID(s.Ref.ID)}, Fields: f})
	}
	return out, nil
}

// Count counts what q matches with a count aggregation, which reads index
// entries only.
func (d *Docs) Count(ctx context.Context, q docstore.Query) (int64, error) {
	fq, err := d.query(q, false)
	if err != nil {
		return 0, err
	}
	const alias = "n"
	res, err := fq.NewAggregationQuery().WithCount(alias).Get(ctx)
	if err != nil {
		return 0, readErr(ctx, err)
	}
	v, ok := res[alias].(*firestorepb.Value)
	if !ok {
		return 0, fmt.Errorf("firestore: count aggregation answered %T", res[alias])
	}
	n := v.GetIntegerValue()
	d.bill(ctx, stores.BilledOps{Reads: max(1, (n+999)/1000)})
	return n, nil
}

// Sum adds up an integer field with a sum aggregation, counting in the
// same aggregation so the billed reads (one per 1000 index entries, as for
// a count) are known.
func (d *Docs) Sum(ctx context.Context, q docstore.Query, field string) (int64, error) {
	fq, err := d.query(q, false)
	if err != nil {
		return 0, err
	}
	// A field name is one name, dots included (WithSum would read a path).
	res, err := fq.NewAggregationQuery().WithCount("n").WithSumPath(fs.FieldPath{field}, "s").Get(ctx)
	if err != nil {
		return 0, readErr(ctx, err)
	}
	n, ok1 := res["n"].(*firestorepb.Value)
	v, ok2 := res["s"].(*firestorepb.Value)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("firestore: sum aggregation answered %T, %T", res["n"], res["s"])
	}
	d.bill(ctx, stores.BilledOps{Reads: max(1, (n.GetIntegerValue()+999)/1000)})
	if _, isDouble := v.GetValueType().(*firestorepb.Value_DoubleValue); isDouble {
		return int64(v.GetDoubleValue()), nil
	}
	return v.GetIntegerValue(), nil
}

// RunTx runs fn in a Firestore transaction, the client retrying aborted
// attempts up to MaxAttempts times.
func (d *Docs) RunTx(ctx context.Context, fn func(ctx context.Context, tx docstore.Tx) error) error {
	var (
		last          *tx
		fnErr         error
		reachedCommit bool // some attempt's fn succeeded, so a commit was sent
		attempts      int64
	)
	defer func() {
		if attempts > 1 {
			d.bill(ctx, stores.BilledOps{Retries: attempts - 1})
		}
	}()
	err := d.client.RunTransaction(ctx, func(ctx context.Context, t *fs.Transaction) error {
		attempts++
		x := &tx{d: d, t: t}
		last = x
		fnErr = fn(ctx, x)
		if fnErr != nil {
			return fnErr
		}
		if x.readAfterWrite {
			// fn dropped Get's error; the transaction still fails.
			fnErr = docstore.ErrReadAfterWrite
			return fnErr
		}
		reachedCommit = true
		return nil
	}, fs.MaxAttempts(d.maxAttempts))
	if err == nil {
		d.bill(ctx, stores.BilledOps{Writes: last.writes, Deletes: last.deletes})
		return nil
	}
	switch {
	case status.Code(err) == codes.Aborted && ctx.Err() == nil:
		return fmt.Errorf("%w: %w", docstore.ErrContention, err)
	case fnErr != nil && err == fnErr:
		return err
	case reachedCommit && status.Code(err) == codes.AlreadyExists:
		// A Create's precondition failed: the commit wrote nothing.
		return fmt.Errorf("%w: %w", docstore.ErrExists, err)
	case !reachedCommit && ctx.Err() == nil && transient(err):
		// BeginTransaction failed, or a read did; no commit was sent.
		return fmt.Errorf("%w: %w", docstore.ErrUnavailable, err)
	case reachedCommit && (transient(err) || ctx.Err() != nil || closedTransaction(err)):
		// A commit was sent and no answer came back, or the client's
		// resend of it found the transaction closed: the first may have
		// applied.
		return fmt.Errorf("%w: %w", docstore.ErrOutcomeUnknown, err)
	default:
		// Including a commit that may or may not have applied.
		return fmt.Errorf("firestore: transaction: %w", err)
	}
}

// tx is one attempt of RunTx.
type tx struct {
	d              *Docs
	t              *fs.Transaction
	wrote          bool
	readAfterWrite bool
	writes         int64
	deletes        int64
}

func (x *tx) Get(ctx context.Context, keys ...docstore.Key) ([]*docstore.Doc, error) {
	if x.wrote {
		// Checked here rather than left to the client, so that the error is
		// docstore's and the attempt is not sent on.
		x.readAfterWrite = true
		return nil, docstore.ErrReadAfterWrite
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return []*docstore.Doc{}, nil
	}
	refs, at, err := x.d.refs(keys)
	if err != nil {
		return nil, err
	}
	snaps, err := x.t.GetAll(refs)
	if err != nil {
		switch {
		case status.Code(err) == codes.Aborted:
			// As it is: the client retries the attempt on Aborted.
			return nil, err
		case ctx.Err() == nil && transient(err):
			return nil, fmt.Errorf("%w: %w", docstore.ErrUnavailable, err)
		}
		return nil, err
	}
	x.d.bill(ctx, stores.BilledOps{Reads: int64(len(refs))})
	return docsOf(keys, at, snaps)
}

func (x *tx) Set(key docstore.Key, fields docstore.Fields) error {
	return x.put(key, fields, x.t.Set)
}

// Create is a write with Firestore's exists=false precondition, which the
// commit checks (and fails with AlreadyExists).
func (x *tx) Create(key docstore.Key, fields docstore.Fields) error {
	return x.put(key, fields, func(dr *fs.DocumentRef, data any, _ ...fs.SetOption) error { return x.t.Create(dr, data) })
}

func (x *tx) put(key docstore.Key, fields docstore.Fields, write func(*fs.DocumentRef, any, ...fs.SetOption) error) error {
	if err := checkKey(key); err != nil {
		return err
	}
	data, err := toData(fields)
	if err != nil {
		return err
	}
	if err := write(x.d.client.Collection(x.d.prefix+key.Collection).Doc(encodeID(key.ID)), data); err != nil {
		return err
	}
	x.wrote = true
	x.writes++
	return nil
}

func (x *tx) Delete(key docstore.Key) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := x.t.Delete(x.d.client.Collection(x.d.prefix + key.Collection).Doc(encodeID(key.ID))); err != nil {
		return err
	}
	x.wrote = true
	x.deletes++
	return nil
}

// detach returns a context that ends when ctx does, without ctx's values.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.Background())
	if dl, ok := ctx.Deadline(); ok {
		var cancelDL context.CancelFunc
		c, cancelDL = context.WithDeadline(c, dl)
		prev := cancel
		cancel = func() { cancelDL(); prev() }
	}
	stop := context.AfterFunc(ctx, cancel)
	return c, func() { stop(); cancel() }
}

// transient: Firestore could not be reached or did not answer in time.
// closedTransaction is Firestore's answer to a commit resent after the
// first one went through (the client resends a Commit whose answer was
// lost): the transaction is over, perhaps committed.
func closedTransaction(err error) bool {
	return status.Code(err) == codes.InvalidArgument && strings.Contains(status.Convert(err).Message(), "Transaction is invalid or closed")
}

func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// readErr maps a failed read outside a transaction: nothing was written, so
// an unreachable backend is docstore.ErrUnavailable. A deadline of the
// caller's own stays the caller's.
func readErr(ctx context.Context, err error) error {
	if ctx.Err() == nil && transient(err) {
		return fmt.Errorf("%w: %w", docstore.ErrUnavailable, err)
	}
	return fmt.Errorf("firestore: %w", err)
}
