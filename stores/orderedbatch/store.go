// Package orderedbatch implements the whole stores.Store seam over a
// transactional document store (stores/docstore), once, so that Firestore
// and Spanner share it and hold nothing SQS-specific. The design, with
// every record, key and index and why, is docs/orderedbatch.md.
//
// In short: a queue record per queue; on FIFO queues a group record per
// message group holding the group's head, its tail and the delivery state
// of its received members (its own receipt token and visibility deadline
// each), and manifests that each hold the run of a group's messages one
// send stored, with their bodies inline or in chunks; on Standard queues a
// document per message with its own delivery state. Queries only find
// candidates; each transaction re-reads what it decides on.
package orderedbatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/countcache"
	"github.com/sluicehq/sluice/stores/docstore"
)

// Collections.
const (
	colQueues     = "queues"
	colGroups     = "groups"
	colMessages   = "messages"
	colChunks     = "chunks"
	colDedup      = "dedup"
	colAttempts   = "attempts"
	colCounters   = "counters"
	colTasks      = "tasks"
	colTaskGuards = "taskguards"
	colTrash      = "trash"
)

// Fields. Short names: Firestore bills stored bytes, field names included.
const (
	fData  = "data"  // the record, encoded (never indexed)
	fLive  = "live"  // queues: false on a deletion tombstone
	fName  = "name"  // queues: the name, for listing by prefix
	fInc   = "inc"   // the queue incarnation a document belongs to
	fGen   = "gen"   // the queue's purge generation it was written in
	fShard = "shard" // spreads index writes and receivers (0..shards-1)
	fVis   = "vis"   // messages: when visible (Standard) or when the delay ends (FIFO)
	fSent  = "sent"  // messages: when sent (retention)
	fRecv  = "recv"  // Standard messages: received at least once
	fN     = "n"     // FIFO manifests: messages in the manifest
	fReady = "ready" // groups: when the head may be claimable; absent when empty
	fPend  = "pend"  // groups: messages remaining
	fInfl  = "infl"  // groups: members (received, not deleted)
	fSplit = "split" // groups: present (true) when members' deadlines differ
	fIdle  = "idle"  // groups: when the group became empty; absent otherwise
	fExp   = "exp"   // dedup markers and attempts: when they lapse
	fSrc   = "src"   // tasks: the source ARN
	fStat  = "status"
	fStart = "started"
)

// shards spreads the documents every send or claim writes over this many
// index ranges (Firestore throttles an index range that takes sequential
// values at about 500 writes/s), and lets receivers start at different
// places. 8 keeps an In filter over all of them small.
const shards = 8

// inlineMax: payloads up to this size live in their manifest; larger ones
// in chunks of chunkSize, so that no document nears Firestore's 1 MiB.
const (
	inlineMax = 256 << 10
	chunkSize = 256 << 10
)

// maxMovePerCall bounds a MessageMove. Its transaction also stops short of
// the backend's limits in bytes and writes (see mover.spend), so large
// bodies move fewer at a time; fewer, larger transactions move a
// dead-letter queue of small messages several times faster.
const maxMovePerCall = 50

var timeZero time.Time

// Options configure a Store.
type Options struct {
	// Name is how errors name the backend ("firestore").
	Name string
	// ExpiredByBackend: the backend deletes the documents Expiring names
	// once their time has passed (Firestore TTL policies), so Maintain
	// leaves them (removing them itself costs a query read, a read and a
	// delete each; a TTL deletion one delete).
	ExpiredByBackend bool
}

// Store is the seam over a document store.
type Store struct {
	docs docstore.Store
	opts Options

	mu     sync.Mutex
	closed bool
	// sweep is where Maintain's round of queues continues.
	sweep string
	// queues: queue records as this instance last knew them.
	queues queueCache
	// claims: claims under way, by queue incarnation (see claiming).
	claims map[string]int
	// latches serialize this process's updates of one FIFO group.
	latches latches
	// stuck: candidates recent claims waited on past their bound.
	stuck suspects
	// counts: deep queues' counts, reused (a count reads every message's
	// index entry).
	counts countcache.Cache
}

// claiming adds d to the claims under way on a queue and returns how many
// there are.
func (s *Store) claiming(inc string, d int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.claims[inc] + d
	if n <= 0 {
		delete(s.claims, inc)
	} else {
		s.claims[inc] = n
	}
	return n
}

// New returns the protocol over docs. Close closes docs.
func New(docs docstore.Store, opts Options) *Store {
	if opts.Name == "" {
		opts.Name = "orderedbatch"
	}
	return &Store{docs: docs, opts: opts, claims: map[string]int{}}
}

// Traits: no clock of its own (the service passes Now), and moves bounded
// per call.
func (s *Store) Traits() stores.Traits {
	return stores.Traits{MaxMovePerCall: maxMovePerCall}
}

// Close closes the document store.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	return s.docs.Close()
}

// Docs is the document store under the protocol.
func (s *Store) Docs() docstore.Store { return s.docs }

// txBudget is how many payload bytes one transaction may write: the
// backend's bound less room for records, keys and framing.
func (s *Store) txBudget() int { return s.docs.Limits().MaxTxBytes - txRoom }

// txRoom is what txBudget leaves for everything but payloads: ten group
// and manifest records, dedup markers and the deletes, with framing.
const txRoom = 512 << 10

var errClosed = errors.New("orderedbatch: store closed")

func (s *Store) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// ---- keys

// hashID makes an arbitrary string (a group id, a dedup id) a fixed-length
// key part that spreads evenly.
func hashID(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

func shardOf(s string) int64 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return int64(h.Sum32() % shards)
}

func randomShard() int64 { return rand.Int64N(shards) }

func allShards() []any {
	out := make([]any, shards)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

func queueKey(name string) docstore.Key { return docstore.Key{Collection: colQueues, ID: name} }

// groupKey: a FIFO group's record; gk is hashID(group id).
func groupKey(inc, gk string) docstore.Key {
	return docstore.Key{Collection: colGroups, ID: inc + "." + gk}
}

// manifestKey: the manifest whose first position is start. Positions in a
// group are contiguous, so a manifest's successor starts at its end.
func manifestKey(inc, gk string, start int64) docstore.Key {
	return docstore.Key{Collection: colMessages, ID: fmt.Sprintf("%s.%s.%020d", inc, gk, start)}
}

// standardKey: a Standard queue's message, by its (random) MessageId.
func standardKey(inc, id string) docstore.Key {
	return docstore.Key{Collection: colMessages, ID: inc + ".s." + id}
}

func chunkKey(owner docstore.Key, i int) docstore.Key {
	return docstore.Key{Collection: colChunks, ID: fmt.Sprintf("%s.%03d", owner.ID, i)}
}

func dedupKey(inc, scope, id string) docstore.Key {
	return docstore.Key{Collection: colDedup, ID: inc + "." + hashID(scope+"\x00"+id)}
}

func attemptKey(inc, id string) docstore.Key {
	return docstore.Key{Collection: colAttempts, ID: inc + "." + hashID(id)}
}

func counterKey(inc string, shard int64) docstore.Key {
	return docstore.Key{Collection: colCounters, ID: fmt.Sprintf("%s.%d", inc, shard)}
}

func taskKey(handle string) docstore.Key {
	return docstore.Key{Collection: colTasks, ID: hashID(handle)}
}

func taskGuardKey(sourceArn string) docstore.Key {
	return docstore.Key{Collection: colTaskGuards, ID: hashID(sourceArn)}
}

func trashKey(inc string) docstore.Key { return docstore.Key{Collection: colTrash, ID: inc} }

// ---- transactions

// txn is one attempt of a transaction with its writes buffered, so that
// the protocol may compute writes while it still reads; the writes go to
// the backend at the end, after every read.
type txn struct {
	ctx context.Context
	tx  docstore.Tx
	now time.Time
	// late is the real time a retried attempt runs after its call began;
	// deadlines it sets count from now+late (see Store.run).
	late    time.Duration
	writes  map[docstore.Key]docstore.Fields // nil value: delete
	creates map[docstore.Key]bool            // writes that are Creates
	order   []docstore.Key
	// committed runs once this attempt has committed.
	committed []func()
}

// afterCommit has f run once the attempt has committed.
func (t *txn) afterCommit(f func()) { t.committed = append(t.committed, f) }

// deadline is d from now, for an attempt that may run late.
func (t *txn) deadline(d time.Duration) time.Time { return t.now.Add(t.late + max(d, 0)) }

func (t *txn) get(keys ...docstore.Key) ([]*docstore.Doc, error) {
	for _, k := range keys {
		if _, ok := t.writes[k]; ok {
			return nil, fmt.Errorf("orderedbatch: read of %v after writing it", k)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return t.tx.Get(t.ctx, keys...)
}

func (t *txn) get1(k docstore.Key) (*docstore.Doc, error) {
	ds, err := t.get(k)
	if err != nil {
		return nil, err
	}
	return ds[0], nil
}

func (t *txn) set(k docstore.Key, f docstore.Fields) {
	if _, ok := t.writes[k]; !ok {
		t.order = append(t.order, k)
	}
	t.writes[k] = f
	delete(t.creates, k)
}

// create is a write of a document that must not exist at commit (see
// docstore.Tx.Create).
func (t *txn) create(k docstore.Key, f docstore.Fields) {
	t.set(k, f)
	if t.creates == nil {
		t.creates = map[docstore.Key]bool{}
	}
	t.creates[k] = true
}

func (t *txn) del(k docstore.Key) {
	if _, ok := t.writes[k]; !ok {
		t.order = append(t.order, k)
	}
	t.writes[k] = nil
	delete(t.creates, k)
}

func (t *txn) flush() error {
	for _, k := range t.order {
		f := t.writes[k]
		var err error
		switch {
		case f == nil:
			err = t.tx.Delete(k)
		case t.creates[k]:
			err = t.tx.Create(k, f)
		default:
			err = t.tx.Set(k, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// run runs fn in a transaction at now (the service always passes Now: the
// store has no clock of its own; tests pass a fake one). Every attempt
// judges at now; an attempt that runs again after a conflict also knows the
// real time that passed since the call began (txn.late), so that the
// deadlines it sets (a claim's visibility) still give the whole timeout
// from when the call returns.
func (s *Store) run(ctx context.Context, now time.Time, fn func(t *txn) error) error {
	return s.runSince(ctx, now, time.Time{}, fn)
}

// runSince is run for a call that began at since (real time) and did work
// before this transaction (a claim's earlier tries, its wait for a group's
// latch): every attempt, the first too, counts the time since then as late.
func (s *Store) runSince(ctx context.Context, now, since time.Time, fn func(t *txn) error) error {
	if err := s.check(); err != nil {
		return err
	}
	if now.IsZero() {
		now = time.Now()
	}
	now = docstore.Micro(now)
	began := time.Now()
	if !since.IsZero() {
		began = since
	}
	attempts := 0
	var last *txn
	err := s.docs.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		attempts++
		t := &txn{ctx: ctx, tx: tx, now: now, writes: map[docstore.Key]docstore.Fields{}}
		last = t
		if attempts > 1 || !since.IsZero() {
			t.late = time.Since(began).Truncate(time.Microsecond)
		}
		if err := fn(t); err != nil {
			return err
		}
		return t.flush()
	})
	if err == nil {
		for _, f := range last.committed {
			f()
		}
	}
	return s.mapErr(err)
}

func (s *Store) mapErr(err error) error {
	if errors.Is(err, docstore.ErrUnavailable) {
		return fmt.Errorf("%s: %w: %w", s.opts.Name, stores.ErrUnavailable, err)
	}
	return err
}

func nowOr(now time.Time) time.Time {
	if now.IsZero() {
		return docstore.Micro(time.Now())
	}
	return docstore.Micro(now)
}
