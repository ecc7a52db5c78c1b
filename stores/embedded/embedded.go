// Package embedded is the zero-set-up durable store: a directory on local
// disk holding one bbolt database.
//
// The queue logic is the in-memory engine of stores/memstore; this package
// makes it durable. Every operation is applied to the engine under its lock,
// and the operation's change list (record puts and deletes) is handed, in
// order, to a single committer goroutine. The operation then releases the
// lock and waits until the committer has written and fsynced a bbolt
// transaction containing its changes: a call returns success only after a
// durable commit. The committer writes every change list that queued up
// while it was busy in one transaction (group commit), so concurrent callers
// share one fsync. Because change lists are committed in the order they were
// applied, whatever an operation observed was durable before it returned;
// reads wait the same way for what they saw.
//
// If a commit fails the store stops (fail-stop): the failed operations and
// every later one return the error; nothing is acknowledged that is not on
// disk. Open loads every record and rebuilds the engine.
//
// Records are stored as JSON, or with gob when JSON would not round-trip
// them exactly (see codec.go).
package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
)

// FileName is the database file inside the store's directory.
const FileName = "sluice.db"

const formatVersion = "1"

var (
	metaBucket = []byte("meta")
	formatKey  = []byte("format")
)

// lockTimeout bounds how long Open waits for another process to release the
// directory.
var lockTimeout = time.Second

// Store is a durable stores.Store in a directory. It is safe for concurrent
// use; only one process (and one Store) can have a directory open at a time.
// Every stores.Store method but Close is the engine's own; the committer
// makes each mutation durable before the engine's call returns.
type Store struct {
	*engine.Engine
	db *bolt.DB
	c  *committer

	closeOnce sync.Once
	closeErr  error
}

var _ stores.Store = (*Store)(nil)

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
	recs, err := initAndLoad(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: %s: %w", path, err)
	}
	c := newCommitter(db)
	e := engine.New(c)
	if err := e.Restore(recs); err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: %s: %w", path, err)
	}
	c.onFail = e.Fail
	go c.loop()
	return &Store{Engine: e, db: db, c: c}, nil
}

func bucketName(k engine.Kind) []byte { return []byte(k.String()) }

// initAndLoad creates the buckets of a new database, checks the format of an
// existing one, and decodes every record.
func initAndLoad(db *bolt.DB) ([]engine.Record, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		switch v := meta.Get(formatKey); {
		case v == nil:
			if err := meta.Put(formatKey, []byte(formatVersion)); err != nil {
				return err
			}
		case string(v) != formatVersion:
			return fmt.Errorf("unknown format %q (this build reads %q)", v, formatVersion)
		}
		for _, k := range engine.Kinds() {
			if _, err := tx.CreateBucketIfNotExists(bucketName(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var recs []engine.Record
	err = db.View(func(tx *bolt.Tx) error {
		for _, k := range engine.Kinds() {
			err := tx.Bucket(bucketName(k)).ForEach(func(key, v []byte) error {
				r := k.New()
				if err := decode(v, r); err != nil {
					return fmt.Errorf("decode %s record %q: %w", k, key, err)
				}
				if !bytes.Equal(key, r.Key()) {
					return fmt.Errorf("%s record under key %q has key %q", k, key, r.Key())
				}
				recs = append(recs, r)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return recs, err
}

// Close stops accepting operations, waits until everything applied is
// durable, and closes the database. It returns the commit error if the store
// had stopped because of one.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.Engine.Close() // after this no operation can submit changes
		cerr := s.c.stop()
		s.closeErr = errors.Join(cerr, s.db.Close())
	})
	return s.closeErr
}

// ---- the committer

// committer writes change lists to bbolt in submission order, one
// transaction per batch of whatever is pending.
type committer struct {
	db     *bolt.DB
	onFail func(error)

	mu        sync.Mutex
	work      sync.Cond // signalled when there is something to write or to stop
	done      sync.Cond // broadcast when durable or err changes
	pending   [][]engine.Change
	submitted uint64 // change lists submitted
	durable   uint64 // change lists committed
	err       error
	stopping  bool
	exited    chan struct{}

	// counters, for tests and benchmarks
	commits uint64
}

func newCommitter(db *bolt.DB) *committer {
	c := &committer{db: db, exited: make(chan struct{})}
	c.work.L = &c.mu
	c.done.L = &c.mu
	return c
}

// Submit implements engine.Committer. It is called with the engine's lock
// held and never blocks on I/O.
func (c *committer) Submit(changes []engine.Change) func() error {
	c.mu.Lock()
	if len(changes) > 0 {
		c.pending = append(c.pending, changes)
		c.submitted++
		c.work.Signal()
	}
	target := c.submitted
	done := c.durable >= target
	c.mu.Unlock()
	if done {
		return nil
	}
	return func() error { return c.wait(target) }
}

// wait blocks until change list number target is durable or commits failed.
func (c *committer) wait(target uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.durable < target && c.err == nil {
		c.done.Wait()
	}
	if c.durable >= target {
		return nil
	}
	return c.err
}

func (c *committer) loop() {
	defer close(c.exited)
	for {
		c.mu.Lock()
		for len(c.pending) == 0 && !c.stopping {
			c.work.Wait()
		}
		if len(c.pending) == 0 {
			c.mu.Unlock()
			return
		}
		batch, upto := c.pending, c.submitted
		c.pending = nil
		c.mu.Unlock()

		err := c.write(batch)

		c.mu.Lock()
		if err != nil {
			c.err = fmt.Errorf("embedded: commit failed, store stopped: %w", err)
			c.done.Broadcast()
			c.mu.Unlock()
			if c.onFail != nil {
				c.onFail(c.err)
			}
			return
		}
		c.durable = upto
		c.commits++
		c.done.Broadcast()
		c.mu.Unlock()
	}
}

// stop makes the loop exit once everything submitted is written, and waits.
func (c *committer) stop() error {
	c.mu.Lock()
	c.stopping = true
	c.work.Signal()
	c.mu.Unlock()
	<-c.exited
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// write commits a batch of change lists in one bbolt transaction. Within
// the batch only the last change of each record matters.
func (c *committer) write(batch [][]engine.Change) error {
	type rkey struct {
		kind engine.Kind
		key  string
	}
	at := map[rkey]int{}
	var flat []engine.Change
	for _, list := range batch {
		for _, ch := range list {
			k := rkey{ch.Kind, string(ch.Key)}
			if i, ok := at[k]; ok {
				flat[i] = ch
			} else {
				at[k] = len(flat)
				flat = append(flat, ch)
			}
		}
	}
	values := make([][]byte, len(flat))
	for i, ch := range flat {
		if ch.Record == nil {
			continue
		}
		v, err := encode(ch.Record)
		if err != nil {
			return fmt.Errorf("encode %s record %q: %w", ch.Kind, ch.Key, err)
		}
		values[i] = v
	}
	return c.db.Update(func(tx *bolt.Tx) error {
		for i, ch := range flat {
			b := tx.Bucket(bucketName(ch.Kind))
			if b == nil {
				return fmt.Errorf("no bucket for %s", ch.Kind)
			}
			var err error
			if ch.Record == nil {
				err = b.Delete(ch.Key)
			} else {
				err = b.Put(ch.Key, values[i])
			}
			if err != nil {
				return fmt.Errorf("%s record %q: %w", ch.Kind, ch.Key, err)
			}
		}
		return nil
	})
}
