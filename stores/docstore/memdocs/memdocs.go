// Package memdocs is an in-memory docstore.Store with real concurrency
// control, so that tests of the protocols built on docstore prove them
// against serializable transactions that never lose an update.
//
// It runs transactions in one of two modes. Optimistic (the default, like
// Firestore's Enterprise edition): every document has a version; an attempt
// records the versions it read, a missing document included, and commits
// only if, under the store's lock, none of them changed; otherwise fn runs
// again. Reads within an attempt are also checked against the earlier ones,
// so fn never sees a torn view. Pessimistic (like Firestore's Standard
// edition): a read takes the key's lock, exclusive, until the attempt ends;
// writes take the locks of keys not read at commit. Deadlocks are broken by
// wound-wait (an older transaction that waits for a younger one makes it
// retry; a transaction keeps its age across retries, so it eventually wins)
// and, as a last resort, by a bound on each wait. Either way a transaction
// retries at most MaxAttempts times, then fails with docstore.ErrContention.
//
// Queries and counts scan every document of their collection, which suits
// tests. The store enforces what Firestore would refuse: the contract's
// read-before-write rule, the query shapes an index can serve, key and
// value rules, and the limits (DefaultLimits unless WithLimits), each as a
// clear error. Values are copied in and out, so no caller can alias what is
// stored.
package memdocs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

// DefaultLimits are Firestore's: a document of 1 MiB, 500 writes and 10 MiB
// of writes in a transaction, 1000 keys in one Get. Sizes are DocSize's.
var DefaultLimits = docstore.Limits{
	MaxDocBytes:  1 << 20,
	MaxTxWrites:  500,
	MaxTxBytes:   10 << 20,
	MaxBatchGets: 1000,
}

// Errors of this store beyond docstore's.
var (
	// ErrInvalid: a key, value or query the contract does not allow.
	ErrInvalid = errors.New("memdocs: invalid argument")
	// ErrLimit: a document, transaction or Get over one of the Limits.
	ErrLimit = errors.New("memdocs: over a limit")
)

var errClosed = fmt.Errorf("%w: memdocs store is closed", docstore.ErrUnavailable)

// Mode is how transactions are kept serializable.
type Mode int

const (
	// Optimistic validates the versions an attempt read when it commits.
	Optimistic Mode = iota
	// Pessimistic locks each key an attempt reads or writes until it ends.
	Pessimistic
)

func (m Mode) String() string {
	switch m {
	case Optimistic:
		return "optimistic"
	case Pessimistic:
		return "pessimistic"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Option configures a Store.
type Option func(*options)

type options struct {
	mode        Mode
	maxAttempts int
	jitter      time.Duration
	lockTimeout time.Duration
	limits      docstore.Limits
	noValidate  bool // tests only: optimistic mode without its checks
}

// WithMode picks the concurrency control (default Optimistic).
func WithMode(m Mode) Option { return func(o *options) { o.mode = m } }

// WithMaxAttempts bounds how many times RunTx runs fn before it gives up
// with docstore.ErrContention (default 50; at least 1).
func WithMaxAttempts(n int) Option { return func(o *options) { o.maxAttempts = max(n, 1) } }

// WithJitter makes every read in a transaction, and every commit, first
// sleep a random time below d, so that tests see transactions interleave
// in many ways (default 0: no sleeps).
func WithJitter(d time.Duration) Option { return func(o *options) { o.jitter = d } }

// WithLockTimeout bounds, in Pessimistic mode, how long one wait for a
// key's lock lasts before the attempt retries (default 2s). Wound-wait
// already ends deadlocks among transactions; the bound ends those that
// pass through something else, such as fn waiting on another transaction.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.lockTimeout = d } }

// WithLimits sets the limits the store reports and enforces (default
// DefaultLimits), e.g. small ones to drive a protocol's splitting paths.
// A zero field keeps its default.
func WithLimits(l docstore.Limits) Option {
	return func(o *options) {
		if l.MaxDocBytes > 0 {
			o.limits.MaxDocBytes = l.MaxDocBytes
		}
		if l.MaxTxWrites > 0 {
			o.limits.MaxTxWrites = l.MaxTxWrites
		}
		if l.MaxTxBytes > 0 {
			o.limits.MaxTxBytes = l.MaxTxBytes
		}
		if l.MaxBatchGets > 0 {
			o.limits.MaxBatchGets = l.MaxBatchGets
		}
	}
}

// Stats counts what a Store did, for tests.
type Stats struct {
	Gets    int64 // Store.Get calls
	Queries int64 // Store.Query calls
	Counts  int64 // Store.Count calls

	Transactions int64 // RunTx calls
	Attempts     int64 // runs of fn
	Commits      int64 // attempts that committed
	Conflicts    int64 // attempts abandoned because of another transaction
	Retries      int64 // attempts run again after a conflict
	Contention   int64 // RunTx calls that ended in docstore.ErrContention
	Aborts       int64 // attempts ended by an error (fn's, a limit, a misuse)

	LockWaits    int64 // Pessimistic: waits for a lock another attempt held
	Wounds       int64 // Pessimistic: younger holders told to retry
	LockTimeouts int64 // Pessimistic: waits that ran out of time
}

type counters struct {
	gets, queries, counts                                           atomic.Int64
	transactions, attempts, commits, conflicts, retries, contention atomic.Int64
	aborts, lockWaits, wounds, lockTimeouts                         atomic.Int64
}

// entry is one version of a document. Entries never change once stored (a
// write stores a new one), so a reader may use one after the lock is gone.
type entry struct {
	ver    uint64          // the commit that wrote it
	fields docstore.Fields // nil: deleted (kept so that its version stays)
}

// Store is an in-memory docstore.Store, safe for concurrent use.
type Store struct {
	o      options
	closed atomic.Bool
	age    atomic.Uint64 // hands each RunTx its age for wound-wait
	stats  counters

	mu    sync.RWMutex
	colls map[string]map[string]*entry
	ver   uint64                    // last commit's version
	locks map[docstore.Key]*keyLock // Pessimistic
}

var _ docstore.Store = (*Store)(nil)

// New returns an empty store.
func New(opts ...Option) *Store {
	o := options{maxAttempts: 50, lockTimeout: 2 * time.Second, limits: DefaultLimits}
	for _, opt := range opts {
		opt(&o)
	}
	return &Store{o: o, colls: map[string]map[string]*entry{}, locks: map[docstore.Key]*keyLock{}}
}

// Mode says how the store keeps transactions serializable.
func (s *Store) Mode() Mode { return s.o.mode }

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	c := &s.stats
	return Stats{
		Gets: c.gets.Load(), Queries: c.queries.Load(), Counts: c.counts.Load(),
		Transactions: c.transactions.Load(), Attempts: c.attempts.Load(), Commits: c.commits.Load(),
		Conflicts: c.conflicts.Load(), Retries: c.retries.Load(), Contention: c.contention.Load(),
		Aborts: c.aborts.Load(), LockWaits: c.lockWaits.Load(), Wounds: c.wounds.Load(),
		LockTimeouts: c.lockTimeouts.Load(),
	}
}

// Limits returns the limits the store enforces.
func (s *Store) Limits() docstore.Limits { return s.o.limits }

// Close makes every later call fail with docstore.ErrUnavailable.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// Get reads documents as committed, all at one instant.
func (s *Store) Get(ctx context.Context, keys ...docstore.Key) ([]*docstore.Doc, error) {
	s.stats.gets.Add(1)
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if err := s.checkKeys(keys); err != nil {
		return nil, err
	}
	s.mu.RLock()
	found := make([]*entry, len(keys))
	for i, k := range keys {
		found[i] = s.entry(k)
	}
	s.mu.RUnlock()
	return docsOf(keys, found), nil
}

// Query runs q over the committed documents of its collection.
func (s *Store) Query(ctx context.Context, q docstore.Query) ([]*docstore.Doc, error) {
	s.stats.queries.Add(1)
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	p, err := compile(q, false)
	if err != nil {
		return nil, err
	}
	docs := s.scan(p)
	p.sort(docs)
	if q.Limit > 0 && len(docs) > q.Limit {
		docs = docs[:q.Limit]
	}
	for _, d := range docs {
		d.Fields = copyOut(d.Fields)
	}
	return docs, nil
}

// Count counts the committed documents q matches.
func (s *Store) Count(ctx context.Context, q docstore.Query) (int64, error) {
	s.stats.counts.Add(1)
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	p, err := compile(q, true)
	if err != nil {
		return 0, err
	}
	return int64(len(s.scan(p))), nil
}

// Sum adds up the int64 field over the documents q matches.
func (s *Store) Sum(ctx context.Context, q docstore.Query, field string) (int64, error) {
	s.stats.counts.Add(1)
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	p, err := compile(q, true)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, d := range s.scan(p) {
		if v, ok := d.Fields[field].(int64); ok {
			sum += v
		}
	}
	return sum, nil
}

// scan returns the matching documents with their stored (not yet copied)
// fields.
func (s *Store) scan(p *plan) []*docstore.Doc {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var docs []*docstore.Doc
	for id, e := range s.colls[p.q.Collection] {
		if e.fields != nil && p.matches(id, e.fields) {
			docs = append(docs, &docstore.Doc{Key: docstore.Key{Collection: p.q.Collection, ID: id}, Fields: e.fields})
		}
	}
	return docs
}

func (s *Store) usable(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

func (s *Store) checkKeys(keys []docstore.Key) error {
	if n := len(keys); n > s.o.limits.MaxBatchGets {
		return fmt.Errorf("%w: Get of %d keys, over MaxBatchGets %d", ErrLimit, n, s.o.limits.MaxBatchGets)
	}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return err
		}
	}
	return nil
}

// entry returns k's latest entry or nil; s.mu is held.
func (s *Store) entry(k docstore.Key) *entry {
	return s.colls[k.Collection][k.ID]
}

// version is k's version, 0 when it never existed; s.mu is held.
func (s *Store) version(k docstore.Key) uint64 {
	if e := s.entry(k); e != nil {
		return e.ver
	}
	return 0
}

// docsOf turns entries read for keys into copied documents, nil where one
// is missing.
func docsOf(keys []docstore.Key, found []*entry) []*docstore.Doc {
	docs := make([]*docstore.Doc, len(keys))
	for i, e := range found {
		if e != nil && e.fields != nil {
			docs[i] = &docstore.Doc{Key: keys[i], Fields: copyOut(e.fields)}
		}
	}
	return docs
}

// jitter sleeps a random time below the configured jitter.
func (s *Store) jitter() {
	if s.o.jitter > 0 {
		time.Sleep(rand.N(s.o.jitter))
	}
}
