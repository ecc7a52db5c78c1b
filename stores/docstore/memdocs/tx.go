package memdocs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

// errRetry is what a read returns when its attempt has lost a conflict:
// fn should return it, and RunTx runs fn again whatever fn returns.
var errRetry = errors.New("memdocs: transaction conflicted with another and will run again")

// attempt is one run of fn: a docstore.Tx. Like a Firestore transaction it
// is for fn's goroutine alone, and for fn's run alone.
type attempt struct {
	s   *Store
	age uint64 // smaller is older; the same for every attempt of one RunTx

	reads    map[docstore.Key]uint64 // versions read (Optimistic)
	held     []docstore.Key          // locks held (Pessimistic)
	writes   []write
	wrote    bool
	conflict bool  // lost a conflict: run fn again
	err      error // a misuse that fails the attempt even if fn ignores it
	done     atomic.Bool

	// Pessimistic, guarded by s.mu: set by an older transaction waiting for
	// a lock this one holds.
	wounded bool
	woundCh chan struct{} // closed when wounded
}

type write struct {
	key    docstore.Key
	fields docstore.Fields // kept copy; unused for a delete
	del    bool
	create bool // the key must be missing at commit
	size   int  // DocSize of what is written; a delete counts its key
}

// keyLock is a held key lock, shared by readers or held exclusively by one
// writer, as Firestore's Standard edition locks: a read takes it shared, a
// commit takes the keys it writes exclusively (upgrading its own shared
// lock). free is closed (and replaced) at every release.
type keyLock struct {
	excl   *attempt
	shared map[*attempt]bool
	// wantExcl is the oldest attempt waiting to take the lock exclusively:
	// younger readers queue behind it instead of taking the lock shared
	// again and again (which would starve it: it wounds them, they retry
	// and read first).
	wantExcl *attempt
	free     chan struct{}
}

// conflicts are the holders a would wait for to take the lock (exclusive
// or shared), and whether it must also queue behind an older writer.
func (l *keyLock) conflicts(a *attempt, exclusive bool) (holders []*attempt, queued bool) {
	if l.excl != nil && l.excl != a {
		holders = append(holders, l.excl)
	}
	if exclusive {
		for h := range l.shared {
			if h != a {
				holders = append(holders, h)
			}
		}
	} else if w := l.wantExcl; w != nil && w != a && w.age < a.age && !l.shared[a] {
		queued = true
	}
	return holders, queued
}

// RunTx runs fn in a transaction and commits it, running fn again after a
// conflict, at most MaxAttempts times in all.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx docstore.Tx) error) error {
	s.stats.transactions.Add(1)
	age := s.age.Add(1)
	for n := 1; ; n++ {
		if err := s.usable(ctx); err != nil {
			return err
		}
		retry, err := s.runAttempt(ctx, age, fn)
		if !retry {
			return err
		}
		if n >= s.o.maxAttempts {
			s.stats.contention.Add(1)
			return fmt.Errorf("%w (%d attempts)", docstore.ErrContention, n)
		}
		s.stats.retries.Add(1)
		if err := backoff(ctx, n); err != nil {
			return err
		}
	}
}

// runAttempt runs fn once and commits; retry says that it conflicted.
func (s *Store) runAttempt(ctx context.Context, age uint64, fn func(context.Context, docstore.Tx) error) (retry bool, err error) {
	a := &attempt{s: s, age: age, reads: map[docstore.Key]uint64{}, woundCh: make(chan struct{})}
	defer a.end()
	s.stats.attempts.Add(1)
	ferr := fn(ctx, a)
	a.done.Store(true) // a Tx fn kept must not touch the commit
	switch {
	case a.conflict:
		// fn decided on reads that lost a conflict, so whatever it
		// returned is void.
		s.stats.conflicts.Add(1)
		return true, nil
	case ferr != nil:
		s.stats.aborts.Add(1)
		return false, ferr
	case a.err != nil:
		s.stats.aborts.Add(1)
		return false, a.err
	}
	if err := ctx.Err(); err != nil {
		s.stats.aborts.Add(1)
		return false, err
	}
	err = s.commit(ctx, a)
	switch {
	case errors.Is(err, errRetry):
		s.stats.conflicts.Add(1)
		return true, nil
	case err != nil:
		s.stats.aborts.Add(1)
		return false, err
	}
	s.stats.commits.Add(1)
	return false, nil
}

// backoff waits a random time that grows with the attempt number, so that
// optimistic transactions that keep colliding spread out.
func backoff(ctx context.Context, n int) error {
	d := rand.N(min(50*time.Microsecond<<min(n, 10), 10*time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// note records that the attempt has a part in k's lock (holds it, or
// waits for it exclusively), so that end releases it.
func (a *attempt) note(k docstore.Key) {
	if !slices.Contains(a.held, k) {
		a.held = append(a.held, k)
	}
}

// end releases the attempt's locks.
func (a *attempt) end() {
	a.done.Store(true)
	if len(a.held) == 0 {
		return
	}
	s := a.s
	s.mu.Lock()
	for _, k := range a.held {
		l := s.locks[k]
		if l == nil {
			continue
		}
		if l.excl == a {
			l.excl = nil
		}
		if l.wantExcl == a {
			l.wantExcl = nil
		}
		delete(l.shared, a)
		close(l.free)
		if l.excl == nil && len(l.shared) == 0 && l.wantExcl == nil {
			delete(s.locks, k)
		} else {
			l.free = make(chan struct{})
		}
	}
	s.mu.Unlock()
	a.held = nil
}

var errEnded = errors.New("memdocs: Tx used after its attempt ended")

// Get reads documents as of the transaction and guards them.
func (a *attempt) Get(ctx context.Context, keys ...docstore.Key) ([]*docstore.Doc, error) {
	s := a.s
	switch {
	case a.done.Load():
		return nil, errEnded
	case a.err != nil:
		return nil, a.err
	case a.conflict:
		return nil, errRetry
	case a.wrote:
		a.err = fmt.Errorf("%w (Get of %d keys)", docstore.ErrReadAfterWrite, len(keys))
		return nil, a.err
	}
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if err := s.checkKeys(keys); err != nil {
		a.err = err
		return nil, err
	}
	var found []*entry
	var err error
	if s.o.mode == Pessimistic {
		found, err = a.getLocked(ctx, keys)
	} else {
		found, err = a.getValidated(keys)
	}
	if err != nil {
		if errors.Is(err, errRetry) {
			a.conflict = true
		}
		return nil, err
	}
	s.jitter() // widen the window between this read and the commit
	return docsOf(keys, found), nil
}

// getValidated reads keys and records their versions, after checking that
// every earlier read of the attempt is still current, so that the reads
// fn sees together are those of one instant.
func (a *attempt) getValidated(keys []docstore.Key) ([]*entry, error) {
	s := a.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !a.readsCurrent() {
		return nil, errRetry
	}
	found := make([]*entry, len(keys))
	for i, k := range keys {
		e := s.entry(k)
		found[i] = e
		if e != nil {
			a.reads[k] = e.ver
		} else {
			a.reads[k] = 0
		}
	}
	return found, nil
}

// readsCurrent says whether nothing the attempt read has changed since;
// s.mu is held.
func (a *attempt) readsCurrent() bool {
	if a.s.o.noValidate {
		return true
	}
	for k, v := range a.reads {
		if a.s.version(k) != v {
			return false
		}
	}
	return true
}

// getLocked takes the keys' locks, then reads them: nobody else can change
// them until the attempt ends.
func (a *attempt) getLocked(ctx context.Context, keys []docstore.Key) ([]*entry, error) {
	s := a.s
	for _, k := range sortedKeys(keys) {
		if err := s.lock(ctx, a, k, false); err != nil {
			return nil, err
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	found := make([]*entry, len(keys))
	for i, k := range keys {
		found[i] = s.entry(k)
	}
	return found, nil
}

// sortedKeys returns keys without repeats in one order, so that attempts
// taking locks of overlapping sets in one Get do not deadlock each other.
func sortedKeys(keys []docstore.Key) []docstore.Key {
	out := slices.Clone(keys)
	slices.SortFunc(out, func(x, y docstore.Key) int {
		return cmp.Or(strings.Compare(x.Collection, y.Collection), strings.Compare(x.ID, y.ID))
	})
	return slices.Compact(out)
}

// lock takes k's lock for a, shared or exclusive, waiting while other
// attempts hold it in a mode that conflicts. An older waiter wounds the
// younger holders it waits for, which retry at their next read or lock
// wait (or commit, if they need no more locks); a younger waiter waits. A
// wait that outlasts the lock timeout retries too.
func (s *Store) lock(ctx context.Context, a *attempt, k docstore.Key, exclusive bool) error {
	var timeout <-chan time.Time
	for {
		s.mu.Lock()
		if a.wounded { // an older transaction waits for what a holds
			s.mu.Unlock()
			return errRetry
		}
		l := s.locks[k]
		if l == nil {
			l = &keyLock{shared: map[*attempt]bool{}, free: make(chan struct{})}
			s.locks[k] = l
		}
		conflicts, queued := l.conflicts(a, exclusive)
		if len(conflicts) == 0 && !queued {
			a.note(k)
			if exclusive {
				l.excl = a
				delete(l.shared, a)
				if l.wantExcl == a {
					l.wantExcl = nil
				}
			} else if l.excl != a {
				l.shared[a] = true
			}
			s.mu.Unlock()
			return nil
		}
		if exclusive && (l.wantExcl == nil || a.age < l.wantExcl.age) {
			a.note(k) // so that end clears wantExcl
			l.wantExcl = a
		}
		for _, h := range conflicts {
			if a.age < h.age && !h.wounded {
				h.wounded = true
				close(h.woundCh)
				s.stats.wounds.Add(1)
			}
		}
		free := l.free
		s.mu.Unlock()

		s.stats.lockWaits.Add(1)
		if timeout == nil {
			t := time.NewTimer(s.o.lockTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-free:
		case <-a.woundCh:
			return errRetry
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			s.stats.lockTimeouts.Add(1)
			return errRetry
		}
	}
}

func (a *attempt) put(key docstore.Key, fields docstore.Fields, create bool) error {
	if a.done.Load() {
		return errEnded
	}
	a.wrote = true
	if a.err != nil {
		return a.err
	}
	if err := checkKey(key); err != nil {
		a.err = err
		return err
	}
	f, err := cleanFields(fields)
	if err != nil {
		a.err = fmt.Errorf("Set %q/%q: %w", key.Collection, key.ID, err)
		return a.err
	}
	a.writes = append(a.writes, write{key: key, fields: f, create: create, size: DocSize(key, f)})
	return nil
}

// Set buffers a write of the whole document.
func (a *attempt) Set(key docstore.Key, fields docstore.Fields) error {
	return a.put(key, fields, false)
}

// Create buffers a write of a document that must be missing at commit.
func (a *attempt) Create(key docstore.Key, fields docstore.Fields) error {
	return a.put(key, fields, true)
}

// Delete buffers a delete.
func (a *attempt) Delete(key docstore.Key) error {
	if a.done.Load() {
		return errEnded
	}
	a.wrote = true
	if a.err != nil {
		return a.err
	}
	if err := checkKey(key); err != nil {
		a.err = err
		return err
	}
	a.writes = append(a.writes, write{key: key, del: true, size: DocSize(key, nil)})
	return nil
}

// checkLimits fails a commit whose writes exceed the limits.
func (s *Store) checkLimits(writes []write) error {
	l := s.o.limits
	if n := len(writes); n > l.MaxTxWrites {
		return fmt.Errorf("%w: transaction of %d writes, over MaxTxWrites %d", ErrLimit, n, l.MaxTxWrites)
	}
	total := 0
	for _, w := range writes {
		if !w.del && w.size > l.MaxDocBytes {
			return fmt.Errorf("%w: document %q/%q of %d bytes (memdocs.DocSize), over MaxDocBytes %d",
				ErrLimit, w.key.Collection, w.key.ID, w.size, l.MaxDocBytes)
		}
		total += w.size
	}
	if total > l.MaxTxBytes {
		return fmt.Errorf("%w: transaction writing %d bytes (memdocs.DocSize), over MaxTxBytes %d", ErrLimit, total, l.MaxTxBytes)
	}
	return nil
}

// commit applies the attempt's writes, all together, if it may: in
// Optimistic mode when nothing it read has changed, in Pessimistic mode
// once it holds the locks of every key it writes.
func (s *Store) commit(ctx context.Context, a *attempt) error {
	s.jitter()
	if err := s.checkLimits(a.writes); err != nil {
		return err
	}
	if s.o.mode == Pessimistic {
		keys := make([]docstore.Key, len(a.writes))
		for i, w := range a.writes {
			keys[i] = w.key
		}
		for _, k := range sortedKeys(keys) {
			if err := s.lock(ctx, a, k, true); err != nil {
				return err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return errClosed
	}
	if s.o.mode == Optimistic && !a.readsCurrent() {
		return errRetry
	}
	if len(a.writes) == 0 {
		return nil
	}
	for _, w := range a.writes {
		if e := s.entry(w.key); w.create && e != nil && e.fields != nil {
			return fmt.Errorf("%w: %q/%q", docstore.ErrExists, w.key.Collection, w.key.ID)
		}
	}
	s.ver++
	for _, w := range a.writes {
		c := s.colls[w.key.Collection]
		if w.del {
			if e := c[w.key.ID]; e != nil && e.fields != nil {
				c[w.key.ID] = &entry{ver: s.ver}
			}
			continue
		}
		if c == nil {
			c = map[string]*entry{}
			s.colls[w.key.Collection] = c
		}
		c[w.key.ID] = &entry{ver: s.ver, fields: w.fields}
	}
	return nil
}
