// Package embedded is the zero-set-up durable store: a directory on local
// disk holding one bbolt database and its journal.
//
// The queue logic is the in-memory engine of stores/memstore; this package
// makes it durable. Every operation is applied to the engine under its lock,
// and the operation's change list (record puts and deletes) is handed, in
// order, to a single committer goroutine. The operation then releases the
// lock and waits until the committer has written and synced a journal
// record containing its changes: a call returns success only after a
// durable commit. The committer writes every change list that queued up
// while it was busy in one record (group commit), so concurrent callers
// share one fdatasync. Because change lists are committed in the order they were
// applied, whatever an operation observed was durable before it returned;
// reads wait the same way for what they saw.
//
// If a commit fails, the store fails the operations of that commit and of
// every change list submitted after it (they may have observed its
// changes), rebuilds the engine from the database and the journal, and serves
// again: nothing is acknowledged that is not on disk, and nothing is kept in
// memory that is not. A full disk puts the store in a degraded state where
// it refuses sends but serves everything else (see space.go). Open loads
// every record and rebuilds the engine.
//
// A commit is one record appended to a journal file and made durable by
// one write; the journal is folded into the database from time to time
// (journal.go). Messages, deliveries and dedup markers are stored in a
// binary layout (binary.go), other records as JSON, or with gob when JSON
// would not round-trip them exactly (see codec.go).
package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
)

// FileName is the database file inside the store's directory.
const FileName = "sluice.db"

// formatVersion 4 keys dedup markers by the instant they were written
// (engine.DedupRecord.Key) and stores the hot records in a binary layout
// (binary.go); version 3 has the journal (journal.go); version
// 2 keeps a message's delivery state in a record of its own (the
// deliveries bucket). Older databases are read as they are and marked 4
// before their first commit, which also moves their markers to their keys,
// so that an older build, which would ignore the journal (or the
// deliveries) or lose track of the markers, refuses them.
const formatVersion = "4"

var readableFormats = []string{"1", "2", "3", formatVersion}

var (
	metaBucket = []byte("meta")
	formatKey  = []byte("format")
)

// lockTimeout bounds how long Open waits for another process to release the
// directory.
var lockTimeout = time.Second

// Store is a durable stores.Store in a directory. It is safe for concurrent
// use; only one process (and one Store) can have a directory open at a time.
// Every stores.Store method but Close is the engine's own, except that the
// methods that add data are refused while the disk is full (space.go); the
// committer makes each mutation durable before the engine's call returns.
type Store struct {
	*engine.Engine
	db    *bolt.DB
	c     *committer
	space *space

	closeOnce sync.Once
	closeErr  error
}

var (
	_ stores.Store         = (*Store)(nil)
	_ stores.HealthChecker = (*Store)(nil)
	_ stores.CommitCounter = (*Store)(nil)
)

// Open opens (creating if needed) the store in dir. It fails fast, with an
// error that says so, when another process has the directory open.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        lockTimeout,
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true, // rebuilt on open; saves writing it on every commit
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("embedded: %s is in use by another process (could not lock %s within %v)", dir, path, lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	format, err := initialize(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: %s: %w", path, err)
	}
	recs, j, moves, err := load(db, dir, journalEnd{})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: %s: %w", path, err)
	}
	c := newCommitter(db, dir)
	c.j, c.moves = j, moves
	c.upgrade = format != formatVersion
	e := engine.New(c)
	if err := e.Restore(recs); err != nil {
		j.close()
		db.Close()
		return nil, fmt.Errorf("embedded: %s: %w", path, err)
	}
	sp := newSpace(db, dir)
	c.reset = e.Reset
	c.onFull, c.check = sp.enterFull, sp.check
	c.full = func() bool { return sp.fullErr() != nil }
	sp.start()
	go c.loop()
	return &Store{Engine: e, db: db, c: c, space: sp}, nil
}

func bucketName(k engine.Kind) []byte { return []byte(k.String()) }

// initialize creates the buckets of a new database and checks the format
// of an existing one, which it leaves as it is: opening writes nothing, so
// that a store opens on a full disk. It returns the stored format.
func initialize(db *bolt.DB) (string, error) {
	var format string
	err := db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(metaBucket); meta != nil {
			format = string(meta.Get(formatKey))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if format != "" {
		for _, f := range readableFormats {
			if format == f {
				return format, nil
			}
		}
		return "", fmt.Errorf("unknown format %q (this build reads %q)", format, readableFormats)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if err := meta.Put(formatKey, []byte(formatVersion)); err != nil {
			return err
		}
		for _, k := range engine.Kinds() {
			if _, err := tx.CreateBucketIfNotExists(bucketName(k)); err != nil {
				return err
			}
		}
		return nil
	})
	return formatVersion, err
}

// load decodes every record: the database's, with the journal of dir
// replayed over them (up to end, when it is set), in the database's order
// (by kind, then key). It returns the journal's account too, and the
// changes that move the records stored under a key of an older format
// (dedup markers under their legacy key) to their own. A bucket may be
// missing (a database of an older format): its kind has no records yet.
func load(db *bolt.DB, dir string, end journalEnd) ([]engine.Record, *journal, []engine.Change, error) {
	records := map[recordKey]engine.Record{}
	var done uint64
	err := db.View(func(tx *bolt.Tx) error {
		done = folded(tx)
		for _, k := range engine.Kinds() {
			b := tx.Bucket(bucketName(k))
			if b == nil {
				continue
			}
			err := b.ForEach(func(key, v []byte) error {
				r, err := decodeRecord(k, key, v)
				if err != nil {
					return err
				}
				records[recordKey{k, string(key)}] = r
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	j, err := openJournal(dir, done, end, func(k recordKey, v []byte) error {
		if len(v) == 0 {
			delete(records, k)
			return nil
		}
		r, err := decodeRecord(k.kind, []byte(k.key), v)
		if err != nil {
			return err
		}
		records[k] = r
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	keys := sortedKeys(records)
	recs := make([]engine.Record, len(keys))
	var moves []engine.Change
	for i, k := range keys {
		r := records[k]
		recs[i] = r
		if key := r.Key(); k.key != string(key) {
			moves = append(moves, engine.Change{Kind: k.kind, Key: []byte(k.key)}, engine.Change{Kind: k.kind, Key: key, Record: r})
		}
	}
	return recs, j, moves, nil
}

// decodeRecord decodes the value v stored under key for a record of kind k.
func decodeRecord(k engine.Kind, key, v []byte) (engine.Record, error) {
	r := k.New()
	if r == nil {
		return nil, fmt.Errorf("record of unknown kind %d under key %q", k, key)
	}
	if err := decode(v, r); err != nil {
		return nil, fmt.Errorf("decode %s record %q: %w", k, key, err)
	}
	if !bytes.Equal(key, r.Key()) && !isLegacyKey(r, key) {
		return nil, fmt.Errorf("%s record under key %q has key %q", k, key, r.Key())
	}
	return r, nil
}

// isLegacyKey reports whether key is the key an older format stored r
// under.
func isLegacyKey(r engine.Record, key []byte) bool {
	d, ok := r.(*engine.DedupRecord)
	return ok && bytes.Equal(key, d.LegacyKey())
}

// refuseWhenFull is the gate of the methods that add data.
func (s *Store) refuseWhenFull() error { return s.space.fullErr() }

// MessageSend is refused while the disk is full.
func (s *Store) MessageSend(ctx context.Context, p *stores.MessageSendParams) (*stores.MessageSendResult, error) {
	if err := s.refuseWhenFull(); err != nil {
		return nil, err
	}
	return s.Engine.MessageSend(ctx, p)
}

// QueueCreate is refused while the disk is full.
func (s *Store) QueueCreate(ctx context.Context, p *stores.QueueCreateParams) (*stores.QueueCreateResult, error) {
	if err := s.refuseWhenFull(); err != nil {
		return nil, err
	}
	return s.Engine.QueueCreate(ctx, p)
}

// MessageMove is refused while the disk is full: it writes every moved
// message again, body included.
func (s *Store) MessageMove(ctx context.Context, p *stores.MessageMoveParams) (*stores.MessageMoveResult, error) {
	if err := s.refuseWhenFull(); err != nil {
		return nil, err
	}
	return s.Engine.MessageMove(ctx, p)
}

// MoveTaskCreate is refused while the disk is full (the task would move
// messages).
func (s *Store) MoveTaskCreate(ctx context.Context, p *stores.MoveTaskCreateParams) error {
	if err := s.refuseWhenFull(); err != nil {
		return err
	}
	return s.Engine.MoveTaskCreate(ctx, p)
}

// Health implements stores.HealthChecker: nil while the store serves
// everything; an error wrapping stores.ErrUnavailable while the disk is full
// (the store serves reads, receives and deletes, refuses sends, and recovers
// by itself when space returns) or while the journal cannot be folded into
// the database (the store serves everything, but its journal grows until a
// fold succeeds); the error that stopped it otherwise.
func (s *Store) Health(ctx context.Context) error {
	if err := s.Engine.Health(ctx); err != nil {
		return err
	}
	if err := s.space.fullErr(); err != nil {
		return err
	}
	return s.c.foldHealth()
}

// Close stops accepting operations, waits until everything applied is
// durable, and closes the database. It returns the error that stopped the
// store, if one did.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.space.stop()
		s.Engine.Close() // after this no operation can submit changes
		cerr := s.c.stop()
		s.closeErr = errors.Join(cerr, s.db.Close())
	})
	return s.closeErr
}

// Commits is how many journal records and folding bbolt transactions the
// store committed since it opened (stores.CommitCounter).
func (s *Store) Commits() uint64 {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.c.commits
}

// ---- the committer

// committer writes change lists to the journal in submission order, one
// record per batch of whatever is pending, and folds the journal into
// bbolt.
type committer struct {
	db  *bolt.DB
	dir string
	// reset rebuilds the engine from the database after a failed commit,
	// calling its argument under the engine's lock (engine.Reset).
	reset func(load func() ([]engine.Record, error)) error
	// onFull is told when a commit failed for want of space; check is
	// called before every commit.
	onFull  func(cause error)
	check   func()
	full    func() bool // the disk is full: folds write in parts
	upgrade bool        // the stored format is older: mark it current before the next commit
	j       *journal    // kept by the loop's goroutine alone
	// moves, written with the next commit, put the records stored under
	// an older format's key under their own (load).
	moves []engine.Change
	// A fold running in the background reports on folded; retryAt is the
	// commit count at which a failed fold is tried again.
	folding bool
	folded  chan foldResult
	retryAt uint64

	foldErr      error // why the folds fail, while they do (under mu)
	foldFailures int   // how many failed in a row (under mu)

	mu       sync.Mutex
	work     sync.Cond // signalled when there is something to write or to stop
	open     *batch    // collecting change lists; nil when none is pending
	writing  *batch    // being written
	fatal    error     // the store stopped: the engine could not be rebuilt
	stopping bool
	idle     bool // the loop waits for work, its last commit's upkeep done (tests wait for it)
	exited   chan struct{}

	// counters, for tests and benchmarks
	commits uint64

	// write's scratch, kept by the loop's goroutine alone: the records a
	// commit writes (their last changes and keys, an index by key) and
	// the buffer each is encoded in first.
	at      map[recordKey]int
	flat    []engine.Change
	keys    []recordKey
	encoded []byte
}

// batch is the change lists of one transaction. done is closed when it is
// durable or failed (err).
type batch struct {
	lists [][]engine.Change
	done  chan struct{}
	err   error
}

func (b *batch) finish(err error) {
	b.err = err
	close(b.done)
}

// foldResult is what a background fold did.
type foldResult struct {
	commits uint64
	part    int
	err     error
}

func newCommitter(db *bolt.DB, dir string) *committer {
	c := &committer{db: db, dir: dir, exited: make(chan struct{}), folded: make(chan foldResult, 1)}
	c.work.L = &c.mu
	return c
}

// Submit implements engine.Committer. It is called with the engine's lock
// held and never blocks on I/O. An empty change list waits for the latest
// batch, whose fate decides what the operation observed.
func (c *committer) Submit(changes []engine.Change) func() error {
	c.mu.Lock()
	if len(changes) > 0 {
		if c.open == nil {
			c.open = &batch{done: make(chan struct{})}
		}
		c.open.lists = append(c.open.lists, changes)
		c.work.Signal()
	}
	b := c.open
	if b == nil {
		b = c.writing
	}
	c.mu.Unlock()
	if b == nil {
		return nil
	}
	return func() error {
		<-b.done
		return b.err
	}
}

func (c *committer) loop() {
	defer close(c.exited)
	for {
		c.mu.Lock()
		for c.open == nil && !c.stopping {
			c.idle = true
			c.work.Wait()
			c.idle = false
		}
		if c.open != nil && !c.stopping {
			// Let the operations that are runnable now submit theirs
			// first: woken by the first submission, the loop would
			// otherwise run ahead of them and write one operation per
			// commit while the others wait for the next. Paired runs on
			// one CPU: up to three quarters fewer commits (a durable
			// write each) per message, and about twice the throughput.
			c.mu.Unlock()
			runtime.Gosched()
			c.mu.Lock()
		}
		b := c.open
		if b == nil {
			c.mu.Unlock()
			return
		}
		c.open, c.writing = nil, b
		c.mu.Unlock()

		if c.check != nil {
			c.check()
		}
		if err := c.write(b.lists); err != nil {
			c.failed(b, err)
			continue
		}
		c.mu.Lock()
		c.writing = nil
		c.commits++
		c.mu.Unlock()
		b.finish(nil)
		c.reap(false)
		c.startFold()
	}
}

// startFold starts folding the generation before the current one, if it
// is not folded, or the current one, if it is due (journal.go), unless a
// fold runs or a failed one waits for its retry.
func (c *committer) startFold() {
	if c.folding || c.commits < c.retryAt {
		return
	}
	if c.j.folding == nil {
		if !c.j.cur.due() {
			return
		}
		c.j.rotate()
	}
	part := foldPart
	if c.full != nil && c.full() {
		part = foldPartOnFullDisk
	}
	c.folding = true
	g := c.j.folding
	go func() {
		n, err := fold(c.db, g, part)
		c.folded <- foldResult{n, part, err}
	}()
}

// reap takes the result of the fold that runs, waiting for it if wait is
// set. A fold that failed changed nothing that the journal does not say:
// it is tried again foldRetryCommits commits later; one that failed for
// want of space degrades the store (which frees the reserve inside the
// database) and is tried again at once, in parts.
func (c *committer) reap(wait bool) {
	if !c.folding {
		return
	}
	var r foldResult
	if wait {
		r = <-c.folded
	} else {
		select {
		case r = <-c.folded:
		default:
			return
		}
	}
	c.folding = false
	c.mu.Lock()
	c.commits += r.commits
	if r.err == nil && c.foldErr != nil {
		slog.Info("embedded: the journal is folded again", "dir", c.dir, "failed", c.foldFailures)
	}
	if r.err == nil {
		c.foldErr, c.foldFailures = nil, 0
	} else {
		if c.foldErr == nil {
			slog.Error("embedded: a fold of the journal into the database failed; it is retried, and the journal grows meanwhile", "dir", c.dir, "err", r.err)
		}
		c.foldErr = r.err
		c.foldFailures++
	}
	c.mu.Unlock()
	if r.err == nil {
		c.j.folding = nil
		return
	}
	c.retryAt = c.commits + foldRetryCommits
	if isNoSpace(r.err) && r.part != foldPartOnFullDisk && c.onFull != nil {
		c.onFull(fmt.Errorf("%w: embedded: disk full, the journal could not be folded: %w", stores.ErrUnavailable, r.err))
		c.retryAt = c.commits
	}
}

// foldHealth is why the journal is not being folded, wrapping
// stores.ErrUnavailable, or nil. A failure for want of space is the disk's
// (space.go), not counted here: the fold is retried in parts at once.
func (c *committer) foldHealth() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.foldErr == nil || isNoSpace(c.foldErr) {
		return nil
	}
	return fmt.Errorf("%w: embedded: the journal could not be folded into the database (%d tries; it grows until a fold succeeds): %w",
		stores.ErrUnavailable, c.foldFailures, c.foldErr)
}

// failed handles a commit that did not become durable: under the engine's
// lock, it fails that batch and everything submitted since (built on it),
// then rebuilds the engine from what is on disk, up to where the journal
// ended before that commit. Its record may be whole in the file (a write
// whose fdatasync failed reads back from the page cache): served, it would
// show changes its callers were told failed, and the next record, written
// after it, would be lost in a crash that found it not on disk after all.
// Ended there, the journal writes the next record over it.
func (c *committer) failed(b *batch, cause error) {
	end := journalEnd{gen: c.j.cur.gen, off: c.j.cur.off, set: true}
	full := isNoSpace(cause)
	err := fmt.Errorf("embedded: commit failed, nothing written: %w", cause)
	if full {
		err = fmt.Errorf("%w: embedded: disk full, nothing written: %w", stores.ErrUnavailable, cause)
	}
	if full && c.onFull != nil {
		c.onFull(err) // before the operations learn of it: whoever they tell sees a degraded store
	}
	rerr := c.reset(func() ([]engine.Record, error) {
		c.mu.Lock()
		later := c.open
		c.open, c.writing = nil, nil
		c.mu.Unlock()
		b.finish(err)
		if later != nil {
			later.finish(err)
		}
		c.reap(true)
		c.j.close()
		recs, j, moves, err := load(c.db, c.dir, end)
		if err != nil {
			return nil, err
		}
		c.j, c.moves = j, moves
		return recs, nil
	})
	if rerr != nil && !errors.Is(rerr, engine.ErrClosed) {
		c.mu.Lock()
		if c.fatal == nil {
			c.fatal = fmt.Errorf("embedded: store stopped: a commit failed (%v) and the database could not be read back: %w", cause, rerr)
		}
		c.mu.Unlock()
	}
}

// stop makes the loop exit once everything submitted is written, and
// waits; then it folds the journal, so that the next open has none to
// replay, and closes it.
func (c *committer) stop() error {
	c.mu.Lock()
	c.stopping = true
	c.work.Signal()
	c.mu.Unlock()
	<-c.exited
	c.mu.Lock()
	fatal := c.fatal
	c.mu.Unlock()
	c.reap(true)
	if fatal == nil {
		// Everything, so that the next open has nothing to replay: the
		// generation before the current one if it is not folded, then
		// the current one (best effort: the journal keeps what is not).
		c.retryAt = 0
		for range 2 {
			if c.j.folding == nil && c.j.cur.off == 0 {
				break
			}
			if c.j.folding == nil {
				c.j.rotate()
			}
			c.startFold()
			c.reap(true)
			if c.j.folding != nil {
				break // failed
			}
		}
	}
	if err := c.j.close(); err != nil && fatal == nil {
		return fmt.Errorf("embedded: close the journal: %w", err)
	}
	return fatal
}

// write commits a batch of change lists as one journal record. Within the
// batch only the last change of each record matters.
func (c *committer) write(batch [][]engine.Change) error {
	if len(c.moves) > 0 {
		batch = append([][]engine.Change{c.moves}, batch...) // first: the batch's own changes win
	}
	// Only the last change of each record is written. The map and the
	// buffers are the committer's, reused from one commit to the next.
	if c.at == nil {
		c.at = map[recordKey]int{}
	}
	at := c.at
	clear(at)
	flat, keys := c.flat[:0], c.keys[:0]
	for _, list := range batch {
		for _, ch := range list {
			k := recordKey{ch.Kind, string(ch.Key)}
			if i, ok := at[k]; ok {
				ch.New = flat[i].New // the record's first change in the batch says
				flat[i] = ch
			} else {
				at[k] = len(flat)
				flat = append(flat, ch)
				keys = append(keys, k)
			}
		}
	}
	defer func() {
		// Drop the references, keep the room.
		clear(flat)
		clear(keys)
		c.flat, c.keys = flat[:0], keys[:0]
	}()
	if len(flat) == 0 {
		return nil
	}
	// Each value is encoded in the committer's scratch buffer, then copied
	// to an allocation of its own size: one allocation per record, and a
	// value kept in the generation's account until its fold (a dedup
	// marker, say) keeps nothing else of the commit alive.
	values := make([][]byte, len(flat))
	for i, ch := range flat {
		if ch.Record == nil {
			continue
		}
		var err error
		if c.encoded, err = appendEncoded(c.encoded[:0], ch.Record); err != nil {
			return fmt.Errorf("encode %s record %q: %w", ch.Kind, ch.Key, err)
		}
		values[i] = bytes.Clone(c.encoded)
	}
	if c.upgrade {
		err := c.db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(metaBucket).Put(formatKey, []byte(formatVersion))
		})
		if err != nil {
			return err
		}
		c.upgrade = false
	}
	if c.full != nil && c.full() && !c.j.cur.fits(flat, values) {
		// On a full disk, rather than grow the file: the other one, once
		// its generation is folded.
		c.reap(true)
		if c.j.folding != nil {
			c.retryAt = 0
			c.startFold()
			c.reap(true)
		}
		if c.j.folding == nil {
			c.j.rotate()
			c.retryAt = 0
			c.startFold()
		}
	}
	if err := c.j.cur.commit(flat, keys, values); err != nil {
		return err
	}
	c.moves = nil
	return nil
}
