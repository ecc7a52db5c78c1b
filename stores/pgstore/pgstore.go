// Package pgstore is a stores.Store on PostgreSQL (pgx v5).
//
// Every Store method is one READ COMMITTED transaction, retried a few times
// on serialization failures and deadlocks; the hot ones (MessageDelete, the
// common FIFO claim) are one statement calling a PL/pgSQL function, so one
// round trip, and MessageSend is one batch, which PostgreSQL runs as one
// implicit transaction (also one round trip). Concurrency comes from row
// locks: standard claims take messages with FOR UPDATE SKIP LOCKED; FIFO
// claims lock the group's row in
// fifo_groups (SKIP LOCKED), so two transactions never hand out the same
// group; FIFO sends hold a per-group advisory send lock from before they
// take a number from message_seq until commit, so within a group sequence
// order is commit order.
//
// Combining: concurrent sends, deletes and fast claims of one queue share a
// transaction when a batch of them is already running (see combiner and
// runQueueBatch). One commit and one round trip serve several requests,
// each of which still returns only after that commit.
//
// Time: when a params struct's Now is zero the transaction uses the
// database's clock (now(), the transaction's start; the one-statement
// receives and the Standard delete, the statement's: see queueNowSQL);
// otherwise every comparison uses the given Now.
//
// Wake-ups are not the store's: the service publishes them through a
// stores/wake transport; stores/wake/pgnotify (LISTEN/NOTIFY on the same
// database) is the usual one with this store.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/countcache"
	"github.com/sluicehq/sluice/stores/rules"
)

// Options configure a Store.
// DefaultMaxConns is the pool size when neither Options nor the DSN sets one.
const DefaultMaxConns = 16

type Options struct {
	Logger *slog.Logger
	// Schema, when set, is where the store's tables live (created if
	// missing); every connection's search_path is set to it. Empty means the
	// connection's default (normally public).
	Schema string
	// MaxConns overrides the pool size. The default is pool_max_conns from
	// the DSN, else DefaultMaxConns.
	MaxConns int32
	// MaxRetries is how often a transaction is retried after a
	// serialization failure or deadlock; default 8.
	MaxRetries int
	// VacuumInterval is how often the vacuumer looks whether the hot
	// tables need a VACUUM (see vacuumer); default 2 s, negative: never
	// (leave it to autovacuum).
	VacuumInterval time.Duration
	// OnNotice, when set, receives every notice the server sends on the
	// store's pooled connections (warnings, and auto_explain's plans when a
	// test or an operator turns it on); by default they are dropped.
	OnNotice func(*pgconn.Notice)
}

// Store is a stores.Store on PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	retries int

	lastSweep  sync.Map // queue incarnation → *atomic.Int64, UnixNano of its last sweep here
	sweepNoted atomic.Int64

	// Concurrent sends, deletes and fast claims on one queue share
	// transactions: see combiner and runQueueBatch.
	queueOps *combiner[batchKey, queueOp, queueRes]

	stopBackground context.CancelFunc

	// fifoByID caches whether a queue incarnation is FIFO (it never
	// changes), so that claims can take the one-statement path.
	fifoByID  sync.Map
	fifoNoted atomic.Int64

	counts countcache.Cache // deep queues' counts, reused (counting reads every message)
	fronts frontHints       // where Standard claims start (fronthint.go)

	changes        atomic.Int64 // rows changed, for the vacuumer
	vacuums        atomic.Int64 // passes run, for tests
	vacuumInterval time.Duration
	vacuumDone     chan struct{}

	closeOnce sync.Once
}

var _ stores.Store = (*Store)(nil)

// Open connects, applies the schema migrations (safe when several instances
// start at once) and starts the vacuumer.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse dsn: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgxpool's own default (max(4, CPUs)) starves a server whose
		// requests are mostly short transactions waiting on commits.
		cfg.MaxConns = DefaultMaxConns
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 8
	}
	if opts.VacuumInterval == 0 {
		opts.VacuumInterval = vacuumEvery
	}
	if opts.OnNotice != nil {
		onNotice := opts.OnNotice
		cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { onNotice(n) }
	}
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		// Generic plans: the hot statements are written for them (every
		// index leads with queue_id, partial ones state their predicates),
		// and the planner otherwise plans a statement with a LIMIT or an
		// array parameter again on every execution, because it costs the
		// generic plan's unknown limit or array length above the custom
		// plans' known ones: that planning cost more than the execution.
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	if _, set := cfg.ConnConfig.RuntimeParams["enable_seqscan"]; !set {
		// Every hot statement has an index to walk, and a plan is kept
		// until the table's statistics change: one made while a table
		// was tiny (autovacuum had just truncated it to no pages) scanned
		// the whole table on every call once it had grown, until the next
		// autoanalyze. Off, a sequential scan is only the plan where no
		// index serves.
		cfg.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
	}
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		// PostgreSQL compiles every execution of a plan costed above
		// jit_above_cost: a Standard claim's generic plan beside a
		// million resident messages (17 ms of compiling per claim,
		// throughput down from 7,400 to 500 lifecycles a second), and,
		// with enable_seqscan off, any sequential scan left where no
		// index serves (50 ms for Maintain's scan of the queues). No
		// statement here gains from compiling.
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	if opts.Schema != "" {
		if err := ensureSchema(ctx, cfg.ConnConfig, opts.Schema); err != nil {
			return nil, err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", err)
	}
	if err := migrate(ctx, pool, opts.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{
		pool:           pool,
		log:            opts.Logger,
		retries:        opts.MaxRetries,
		vacuumInterval: opts.VacuumInterval,
		vacuumDone:     make(chan struct{}),
	}
	s.queueOps = newCombiner(combineLimit, maxCombinedQueueOps, s.runQueueBatch)
	bctx, cancel := context.WithCancel(context.Background())
	s.stopBackground = cancel
	go s.vacuumer(bctx)
	return s, nil
}

func ensureSchema(ctx context.Context, cc *pgx.ConnConfig, schema string) error {
	conn, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return fmt.Errorf("pgstore: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P06") {
		err = nil // created concurrently
	}
	if err != nil {
		return fmt.Errorf("pgstore: create schema: %w", err)
	}
	return nil
}

// Traits: the database's clock; a move reads its candidates in one
// transaction, so it is bounded; a send runs a waiting receive's claim in
// its batch (MessageSend).
func (s *Store) Traits() stores.Traits {
	return stores.Traits{OwnClock: true, MaxMovePerCall: maxMovePerCall, HandOffs: true}
}

// maxMovePerCall bounds one MessageMove's transaction.
const maxMovePerCall = 1000

// Pool is the store's connection pool (for tools and tests).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

var _ stores.HealthChecker = (*Store)(nil)

// Close stops the vacuumer and closes the pool.

func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopBackground()
		<-s.vacuumDone
		s.pool.Close()
	})
	return nil
}

// ---- transactions

// txn is one attempt of one Store method.
type txn struct {
	pgx.Tx
	s   *Store
	now time.Time
}

// run executes fn in a transaction, retrying on serialization failures and
// deadlocks. fn must reset whatever results it builds on each call.
func (s *Store) run(ctx context.Context, fn func(t *txn) error) error {
	return s.retry(ctx, func() error { return s.runOnce(ctx, fn) })
}

// noteFIFO caches whether incarnation queueID is FIFO. A store into the
// map allocates, and hot paths note it on every call: only a missing
// entry is written (an incarnation's kind never changes).
func (s *Store) noteFIFO(queueID string, fifo bool) {
	if _, ok := s.fifoByID.Load(queueID); !ok {
		if _, loaded := s.fifoByID.LoadOrStore(queueID, fifo); !loaded {
			startOverPast(&s.fifoByID, &s.fifoNoted)
		}
	}
}

// perIncarnationLimit bounds the maps kept per queue incarnation
// (fifoByID, lastSweep): queues deleted through other instances, or queues
// created and deleted all day, would otherwise each leave an entry for the
// life of the process. Past it a map starts over; every entry is a cache,
// whose miss costs one claim the longer path or one sweep more.
var perIncarnationLimit int64 = 10000

// startOverPast counts an entry added to m and clears m once the count
// passes perIncarnationLimit. Racing adds may keep an entry or two past a
// clear uncounted: the bound holds within them.
func startOverPast(m *sync.Map, n *atomic.Int64) {
	if n.Add(1) > perIncarnationLimit {
		m.Clear()
		n.Store(0)
	}
}

// forgetIncarnation drops what this instance keeps of a deleted queue
// incarnation.
func (s *Store) forgetIncarnation(name, queueID string) {
	if _, ok := s.fifoByID.LoadAndDelete(queueID); ok {
		s.fifoNoted.Add(-1)
	}
	if _, ok := s.lastSweep.LoadAndDelete(sweepKey(name, queueID)); ok {
		s.sweepNoted.Add(-1)
	}
	s.fronts.drop(queueID)
}

func (s *Store) fifoOf(queueID string) (fifo, ok bool) {
	v, ok := s.fifoByID.Load(queueID)
	if !ok {
		return false, false
	}
	return v.(bool), true
}

// retry runs fn, an operation of one statement (its own transaction) or a
// whole transaction (run), again on serialization failures and deadlocks,
// after a short random wait, and once the group rows are rebuilt when
// PostgreSQL had emptied them (rebuildGroups).
func (s *Store) retry(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || !retryable(err) || attempt >= s.retries || ctx.Err() != nil {
			return err
		}
		if groupsEmptied(err) {
			if err := s.rebuildGroups(ctx); err != nil {
				return err
			}
			continue
		}
		d := time.Duration(1<<min(attempt, 6)) * time.Millisecond
		d += time.Duration(rand.Int64N(int64(d)))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// rebuildGroups makes fifo_groups whole again from the messages (migration
// 19 says why it can be empty), once: concurrent callers wait for the one
// that does it.
func (s *Store) rebuildGroups(ctx context.Context) error {
	start := time.Now()
	var made int64
	if err := s.pool.QueryRow(ctx, "SELECT sluice_fifo_groups_rebuild()").Scan(&made); err != nil {
		return fmt.Errorf("pgstore: rebuilding fifo_groups: %w", err)
	}
	if made >= 0 {
		s.log.Warn("pgstore: PostgreSQL had emptied fifo_groups (crash recovery or promotion); rebuilt it from the messages",
			"groups", made, "took", time.Since(start))
	}
	return nil
}

func (s *Store) runOnce(ctx context.Context, fn func(t *txn) error) (err error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	t := &txn{Tx: tx, s: s}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err = fn(t); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// retryable: a transaction that PostgreSQL rolled back for its
// concurrency (a serialization failure, a deadlock), or a FIFO send whose
// plain insert of a group's first row met a row that group upkeep wrote
// meanwhile (see sendFIFOSQL): run again, each sees what the other did.
// Or one that found fifo_groups emptied (groupsEmptied).
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01" ||
			(pe.Code == "23505" && pe.ConstraintName == "fifo_groups_pkey") || pe.Code == groupsEmptiedCode
	}
	return false
}

// groupsEmptiedCode is the SQLSTATE of an operation that needed
// fifo_groups whole and found it emptied (sluice_fifo_groups_whole).
const groupsEmptiedCode = "SLG01"

func groupsEmptied(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == groupsEmptiedCode
}

func isLockNotAvailable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// ---- time

// nowArg is the value for a "given now" parameter: NULL when now is zero,
// so the statement uses the database clock.
func nowArg(now time.Time) any {
	if now.IsZero() {
		return nil
	}
	return now
}

// resolveNow fixes the transaction's clock: the given time, or the
// database's now().
func (t *txn) resolveNow(ctx context.Context, now time.Time) error {
	if !now.IsZero() {
		t.now = now.Truncate(time.Microsecond)
		return nil
	}
	return t.QueryRow(ctx, "SELECT now()").Scan(&t.now)
}

func micros(d time.Duration) int64 { return d.Microseconds() }

// ---- sequence numbers

// formatSeq is the SequenceNumber of a message's seq (message_seq starts at
// 1, and a SequenceNumber at rules.FirstSequence).
func formatSeq(seq int64) string { return rules.SequenceNumber(uint64(seq)) }

// seqBaseSQL is rules.FirstSequence as a SQL numeric literal, for
// statements that make a SequenceNumber from seq (seqBaseSQL + seq).
var seqBaseSQL = strconv.FormatUint(rules.FirstSequence, 10) + "::numeric"

// ---- queue rows

// queueRow is what operations need of a queue.
type queueRow struct {
	name      string
	id        string
	fifo      bool
	retention time.Duration
	purgedAt  *time.Time
}

// lockMode is how a queue row is read.
type lockMode string

const (
	lockNone     lockMode = ""
	lockKeyShare lockMode = " FOR KEY SHARE"     // the queue must not be deleted meanwhile
	lockUpdate   lockMode = " FOR NO KEY UPDATE" // the queue row will change
)

// queue reads a queue by name (and incarnation, when id is not empty) and
// fixes the transaction's clock in the same round trip when it is not yet
// fixed.
func (t *txn) queue(ctx context.Context, name, id string, now time.Time, mode lockMode) (*queueRow, error) {
	q := &queueRow{}
	var ret int64
	var dbNow time.Time
	err := t.QueryRow(ctx, `SELECT name, id, fifo, retention_us, purged_at, coalesce($2::timestamptz, now())
		FROM queues WHERE name = $1`+string(mode), name, nowArg(now)).
		Scan(&q.name, &q.id, &q.fifo, &ret, &q.purgedAt, &dbNow)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, stores.ErrQueueNotFound
	}
	if err != nil {
		return nil, err
	}
	if t.now.IsZero() {
		t.now = dbNow.Truncate(time.Microsecond)
	}
	t.s.noteFIFO(q.id, q.fifo)
	if id != "" && id != q.id {
		return nil, stores.ErrQueueNotFound
	}
	q.retention = time.Duration(ret) * time.Microsecond
	return q, nil
}

// sweepExpired deletes a few messages past retention, skipping rows others
// hold: cheap housekeeping in passing (claims do it at most once per
// sweepInterval per queue and process; Maintain does the rest). It looks
// only at the due front of the queue, and only when its oldest message is
// due, so that it is one probe of the (queue_id, seq) index when nothing is
// due. Moved messages due behind younger ones are Maintain's (claims skip
// them); see migration 20.
func (t *txn) sweepExpired(ctx context.Context, q *queueRow, limit int) error {
	cut := rules.RetentionCutoff(q.retention, t.now)
	if cut.IsZero() {
		return nil
	}
	sweep := "SELECT sluice_standard_sweep($1, $2, $3)"
	if q.fifo {
		sweep = "SELECT sluice_fifo_sweep($1, $2, $3)"
	}
	_, err := t.Exec(ctx, sweep, q.id, cut, limit)
	return err
}

// sweepInterval is how often, at most, claims on one queue in one process
// sweep expired messages in passing. Claims never return an expired
// message, so the sweep only frees space and lets a group whose expired head
// is in flight go on; once a second is plenty, and it keeps the sweep's
// probe off nearly every claim.
const sweepInterval = time.Second

// sweepKey names a queue incarnation in lastSweep.
func sweepKey(name, queueID string) string { return name + "\x00" + queueID }

// sweepDue reports whether a claim on the queue incarnation id at now
// (zero: the local clock) should sweep, and if so notes that it does. A
// clock that went back (a test's) makes it due.
func (s *Store) sweepDue(id string, now time.Time) bool {
	if now.IsZero() {
		now = time.Now()
	}
	v, ok := s.lastSweep.Load(id)
	if !ok {
		var loaded bool
		if v, loaded = s.lastSweep.LoadOrStore(id, new(atomic.Int64)); !loaded {
			startOverPast(&s.lastSweep, &s.sweepNoted)
		}
	}
	last := v.(*atomic.Int64)
	prev := last.Load()
	t := now.UnixNano()
	if prev != 0 && t >= prev && t-prev < int64(sweepInterval) {
		return false
	}
	return last.CompareAndSwap(prev, t)
}

// sentAfter is the SQL value for "sent after the retention cutoff": -infinity
// when the queue keeps messages forever.
func sentAfter(cut time.Time) any {
	if cut.IsZero() {
		return pgtypeNegInfinity
	}
	return cut
}

var pgtypeNegInfinity = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
