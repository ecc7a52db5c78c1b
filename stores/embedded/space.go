package embedded

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/stores"
)

// A full disk.
//
// The store watches the file system's free space (freeBytes) before its
// commits (every checkEvery at most): when fewer than reserveSize bytes
// are free, it degrades (below) before a commit has to fail. A disk that fills faster than that, or
// whose free space cannot be read, is caught by the failing commit.
//
// Commits go to the journal (journal.go), which needs no new space once its
// file has grown; its folds go to bbolt. bbolt never writes a page in
// place: even a delete writes new copies of the pages it changes, and the
// old ones are reused only by later transactions. When the file has no
// free page left and the file system no free block, every fold fails, the
// journal cannot be written over, and a queue could not be drained to make
// room. The store keeps a reserve for this case: a value of reserveSize
// bytes in a bucket of its own, written while there is space. When a commit or
// a fold fails for want of space the store
//
//   - deletes the reserve, which turns it into free pages inside the file
//     (the delete itself needs two or three pages, which the previous commit
//     freed);
//   - refuses, from then on, the operations that add data (sends, queue
//     creation, message moves) with an error wrapping stores.ErrUnavailable,
//     so that the journal and the freed pages serve receives, visibility
//     changes and deletes, which write small records (a delivery writes
//     only the message's delivery state), and folds in small parts;
//   - checks every probeInterval whether the file system has twice the
//     reserve free again; then it writes the reserve back and takes sends
//     again.
//
// The same holds after a restart: a store that opens on a disk with fewer
// than reserveSize bytes free, or without its reserve and without room to
// write it, starts degraded. Without a way to ask the
// file system for its free space (freeBytes), the store writes the reserve
// back as soon as it can.

// reserveSize is the size of the reserve. It bounds what one commit can
// write while the disk is full: thousands of deliveries or deletes, but not
// the purge of a large queue.
var reserveSize = 4 << 20

// watchFree makes the committer check the free space before each commit
// (tests turn it off to reach the failing commit).
var watchFree = true

// probeInterval is how often a store on a full disk checks for space.
var probeInterval = time.Second

// checkEvery is how often, at most, the committer reads the free space
// (tests that watch it fill set 0).
var checkEvery = 10 * time.Millisecond

// The reserve has a bucket of its own: bbolt keeps a value inline in its
// leaf and rewrites the whole leaf when any key in it changes, so a
// reserve among the meta bucket's keys was written again, all 4 MiB of it
// and a sync, by every fold's mark of its generation. Stores written by
// older builds keep it in the meta bucket until start moves it.
var (
	reserveBucket = []byte("reserve")
	reserveKey    = []byte("reserve")
)

// space is the store's view of its disk.
type space struct {
	db  *bolt.DB
	dir string

	// full holds, while the disk is full, the error sends get. It is read
	// by every send, without waiting for mu.
	full atomic.Pointer[error]

	checked time.Time // when check last read the free space (the committer's)

	mu      sync.Mutex
	held    bool // the reserve is in the database
	probing bool
	closed  bool
	quit    chan struct{}
	wg      sync.WaitGroup
}

func newSpace(db *bolt.DB, dir string) *space {
	return &space{db: db, dir: dir, quit: make(chan struct{})}
}

// start finds the reserve, or writes it if there is room; a store without
// it starts degraded.
func (s *space) start() {
	var inMeta bool
	err := s.db.View(func(tx *bolt.Tx) error {
		inMeta = tx.Bucket(metaBucket).Get(reserveKey) != nil
		b := tx.Bucket(reserveBucket)
		s.held = inMeta || b != nil && b.Get(reserveKey) != nil
		return nil
	})
	if err == nil && (!s.held || inMeta) && s.room() {
		// hold also takes the reserve out of the meta bucket.
		if err := s.hold(); err == nil {
			s.held = true
		}
	}
	if !s.held {
		s.enterFull(fmt.Errorf("no room for the store's reserve"))
		return
	}
	s.check()
}

// check degrades the store when the file system has fewer than
// reserveSize bytes free. It is called before every commit and looks at
// most every checkEvery: a few microseconds each, under a load of
// thousands of commits a second, for a reserve that a commit of ordinary
// size cannot eat within checkEvery.
func (s *space) check() {
	if !watchFree || s.full.Load() != nil {
		return
	}
	now := time.Now()
	if now.Sub(s.checked) < checkEvery {
		return
	}
	s.checked = now
	if free, ok := freeBytes(s.dir); ok && free < int64(reserveSize) {
		s.enterFull(fmt.Errorf("%d bytes free", free))
	}
}

// fullErr is nil unless the disk is full.
func (s *space) fullErr() error {
	if p := s.full.Load(); p != nil {
		return *p
	}
	return nil
}

// enterFull degrades the store: cause says why (the error of a commit that
// failed for want of space, or what check saw).
func (s *space) enterFull(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.full.Load() == nil {
		err := fmt.Errorf("%w: embedded: the disk of %s is full (%v); sends are refused until space returns", stores.ErrUnavailable, s.dir, cause)
		s.full.Store(&err)
	}
	if s.held && s.release() == nil {
		s.held = false
	}
	if !s.probing {
		s.probing = true
		s.wg.Add(1)
		go s.probe()
	}
}

// probe waits for space, then writes the reserve back and ends the full
// state.
func (s *space) probe() {
	defer s.wg.Done()
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		if s.held {
			// The reserve could not be released: try again, so that
			// receives and deletes get its pages.
			if s.release() == nil {
				s.held = false
			}
		} else if s.room() && s.hold() == nil {
			s.held = true
			s.full.Store(nil)
			s.probing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// room tells whether the file system has twice the reserve free (or cannot
// tell).
func (s *space) room() bool {
	free, ok := freeBytes(s.dir)
	return !ok || free >= 2*int64(reserveSize)
}

// hold writes the reserve into its bucket (and drops an older build's
// from the meta bucket).
func (s *space) hold() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(metaBucket).Delete(reserveKey); err != nil {
			return err
		}
		b, err := tx.CreateBucketIfNotExists(reserveBucket)
		if err != nil {
			return err
		}
		return b.Put(reserveKey, make([]byte, reserveSize))
	})
}

// release deletes the reserve, wherever it is.
func (s *space) release() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(metaBucket).Delete(reserveKey); err != nil {
			return err
		}
		if b := tx.Bucket(reserveBucket); b != nil {
			return b.Delete(reserveKey)
		}
		return nil
	})
}

// stop ends the probe; the database stays open.
func (s *space) stop() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// isNoSpace tells whether a commit failed for want of space. bbolt keeps the
// system error, except when growing the file, where it keeps only its text.
func isNoSpace(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, syscall.ENOSPC.Error()) || strings.Contains(s, syscall.EDQUOT.Error())
}
