// Package engine is the queue logic shared by the in-memory store
// (stores/memstore) and the embedded durable store (stores/embedded).
//
// An Engine holds every queue in memory behind one mutex and implements the
// operations of stores.Store. Each operation is one transaction: it mutates
// state only through a few record-level primitives (put or delete a queue,
// message, dedup marker, receive-attempt record, move task, tombstone, or a
// queue's sequence counter), each of which appends a Change to the
// operation's change list. With no Committer the list is dropped; a durable
// store passes a Committer that persists it, and can later rebuild an Engine
// from the stored records with Restore.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

// ErrClosed is returned by every operation after Close.
var ErrClosed = errors.New("stores: store is closed")

// Committer receives the changes of every operation.
type Committer interface {
	// Submit is called with the engine's lock held, once per operation and
	// in the order the operations were applied, with the operation's changes
	// (possibly none). It must not block. The engine calls the returned
	// function after releasing its lock and returns its error, if any, to
	// the operation's caller instead of the result. For an empty change list
	// it should wait until everything submitted before is durable, so that
	// what a reader observed cannot be lost.
	Submit(changes []Change) (wait func() error)
}

// Engine implements the operations of stores.Store in memory.
type Engine struct {
	mu        sync.Mutex
	committer Committer
	err       error // fail-stop: set once, returned by every later operation

	queues map[string]*queue
	names  []string // queue names, sorted
	tombs  map[string]*TombstoneRecord
	tasks  map[string]*TaskRecord
}

// New returns an empty engine. c may be nil.
func New(c Committer) *Engine {
	return &Engine{
		committer: c,
		queues:    map[string]*queue{},
		tombs:     map[string]*TombstoneRecord{},
		tasks:     map[string]*TaskRecord{},
	}
}

// Traits: the engine's clock is the process's (one process owns the data),
// its operations are not bounded, and a send runs its hand-off claim in its
// own transaction.
func (e *Engine) Traits() stores.Traits { return stores.Traits{OwnClock: true, HandOffs: true} }

// Fail makes every later operation return err (fail-stop). The first error
// wins.
func (e *Engine) Fail(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

// Health returns the error that stopped the engine (ErrClosed after Close),
// or nil while it serves.
func (e *Engine) Health(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Reset replaces the engine's whole state with the records load returns.
// A durable store calls it after a failed commit, when the engine holds
// changes that are not on disk. load runs under the engine's lock, so no
// operation runs between the failure and the rebuilt state; within load the
// store fails every operation whose changes it did not write (they may have
// observed each other's). load runs even when the engine has stopped, so
// that it can do that; the state is then left as it is. If load fails or
// its records do not restore, the engine stops (as with Fail).
func (e *Engine) Reset(load func() ([]Record, error)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	recs, err := load()
	if e.err != nil {
		return e.err
	}
	if err != nil {
		e.err = err
		return err
	}
	fresh := New(nil)
	if err := fresh.Restore(recs); err != nil {
		e.err = err
		return err
	}
	e.queues, e.names, e.tombs, e.tasks = fresh.queues, fresh.names, fresh.tombs, fresh.tasks
	return nil
}

// Close makes every later operation return ErrClosed. Operations already
// applied are not affected.
func (e *Engine) Close() {
	e.Fail(ErrClosed)
}

// Restore loads stored records into an empty engine and rebuilds every
// index. Records may come in any order.
func (e *Engine) Restore(recs []Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queues) > 0 || len(e.tasks) > 0 || len(e.tombs) > 0 {
		return errors.New("engine: restore into a non-empty engine")
	}
	byKind := map[Kind][]Record{}
	for _, r := range recs {
		byKind[r.Kind()] = append(byKind[r.Kind()], r)
	}
	for _, r := range byKind[KindQueue] {
		qr := r.(*QueueRecord)
		if qr.Queue.Name == "" || e.queues[qr.Queue.Name] != nil {
			return fmt.Errorf("engine: restore: bad or repeated queue %q", qr.Queue.Name)
		}
		e.addQueue(qr)
	}
	lookup := func(name string, what string) (*queue, error) {
		q := e.queues[name]
		if q == nil {
			return nil, fmt.Errorf("engine: restore: %s of unknown queue %q", what, name)
		}
		return q, nil
	}
	for _, r := range byKind[KindCounter] {
		cr := r.(*CounterRecord)
		q, err := lookup(cr.Queue, "counter")
		if err != nil {
			return err
		}
		q.next = max(q.next, cr.Next)
	}
	deliveries := map[string]*DeliveryRecord{}
	for _, r := range byKind[KindDelivery] {
		deliveries[string(r.Key())] = r.(*DeliveryRecord)
	}
	msgs := byKind[KindMessage]
	slices.SortFunc(msgs, func(a, b Record) int {
		return cmp.Compare(a.(*MessageRecord).Seq, b.(*MessageRecord).Seq)
	})
	for _, r := range msgs {
		mr := r.(*MessageRecord)
		q, err := lookup(mr.Queue, "message")
		if err != nil {
			return err
		}
		if q.msgs[mr.Message.ID] != nil {
			return fmt.Errorf("engine: restore: repeated message %q in queue %q", mr.Message.ID, mr.Queue)
		}
		m := newMsg(*mr)
		key := string(mr.Key())
		if d := deliveries[key]; d != nil {
			m.rec.setDelivery(d)
			delete(deliveries, key)
		}
		q.index(m)
		q.next = max(q.next, mr.Seq+1)
	}
	for _, d := range deliveries {
		return fmt.Errorf("engine: restore: delivery state of no message (queue %q, position %d)", d.Queue, d.Seq)
	}
	for _, r := range byKind[KindDedup] {
		dr := r.(*DedupRecord)
		q, err := lookup(dr.Queue, "dedup marker")
		if err != nil {
			return err
		}
		q.addDedup(dr)
	}
	for _, r := range byKind[KindAttempt] {
		ar := r.(*AttemptRecord)
		q, err := lookup(ar.Queue, "attempt")
		if err != nil {
			return err
		}
		q.addAttempt(ar)
	}
	for _, r := range byKind[KindTask] {
		tr := r.(*TaskRecord)
		e.tasks[tr.Task.Handle] = tr
	}
	for _, r := range byKind[KindTombstone] {
		tr := r.(*TombstoneRecord)
		e.tombs[tr.Name] = tr
	}
	return nil
}

// ---- transactions

// tx is one operation in progress: its clock and its change list.
type tx struct {
	e        *Engine
	now      time.Time
	changes  []Change
	counters []*queue // queues whose sequence counter moved
}

// normNow returns the operation's clock: now, or the wall clock, without a
// monotonic reading (stored times have none, and comparisons must agree).
func normNow(now time.Time) time.Time {
	if now.IsZero() {
		now = time.Now()
	}
	return now.Round(0)
}

// run executes fn as one operation: under the lock, then hands the change
// list to the committer, then waits for it outside the lock.
func (e *Engine) run(ctx context.Context, now time.Time, fn func(t *tx) error) error {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	t, wait, err := e.apply(now, fn)
	if t == nil {
		return err
	}
	if wait != nil {
		if werr := wait(); werr != nil {
			return werr
		}
	}
	return err
}

// apply is the locked part of run. It returns a nil tx when the engine has
// stopped.
func (e *Engine) apply(now time.Time, fn func(t *tx) error) (t *tx, wait func() error, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return nil, nil, e.err
	}
	t = &tx{e: e, now: normNow(now)}
	done := false
	defer func() {
		if !done {
			// fn panicked with state half changed: stop rather than
			// persist or serve it.
			e.err = errors.New("engine: an operation panicked; store stopped")
		}
	}()
	err = fn(t)
	t.flushCounters()
	if e.committer != nil {
		wait = e.committer.Submit(t.changes)
	}
	done = true
	return t, wait, err
}

func (t *tx) put(r Record) {
	t.changes = append(t.changes, Change{Kind: r.Kind(), Key: r.Key(), Record: r})
}

func (t *tx) del(r Record) {
	t.changes = append(t.changes, Change{Kind: r.Kind(), Key: r.Key()})
}

// queue finds a queue by name and incarnation and brings its partitions up
// to the operation's clock.
func (t *tx) queue(name, id string) (*queue, error) {
	q := t.e.queues[name]
	if q == nil || (id != "" && id != q.rec.Queue.ID) {
		return nil, stores.ErrQueueNotFound
	}
	t.advance(q)
	return q, nil
}

// advance drops what expired by t.now and moves messages between the
// visible and not-visible partitions so that they match t.now.
func (t *tx) advance(q *queue) {
	now := t.now
	q.now = now
	ret := q.rec.Queue.Retention
	for q.ret.Len() > 0 && !rules.Retained(q.ret.Top().rec.Message.SentAt, ret, now) {
		t.deleteMessage(q, q.ret.Top())
	}
	for q.dedupExp.Len() > 0 && !q.dedupExp.Top().rec.ExpiresAt.After(now) {
		t.deleteDedup(q, q.dedupExp.Top())
	}
	for q.attExp.Len() > 0 && !q.attExp.Top().rec.ExpiresAt.After(now) {
		t.deleteAttempt(q, q.attExp.Top())
	}
	for q.pend.Len() > 0 && !q.pend.Top().rec.VisibleAt.After(now) {
		m := q.pend.Top()
		q.unplace(m)
		q.place(m)
	}
	// The clock may go back (callers pass their own Now): messages that were
	// visible at a later instant are not visible at this one.
	if q.vLate.Len() > 0 && q.vLate.Top().rec.VisibleAt.After(now) {
		var late []*msg
		q.vLate.Above(func(m *msg) bool { return m.rec.VisibleAt.After(now) }, func(m *msg) { late = append(late, m) })
		for _, m := range late {
			q.unplace(m)
			q.place(m)
		}
	}
}

// ---- record-level primitives: the only ways state changes

func (e *Engine) addQueue(rec *QueueRecord) *queue {
	q := newQueue(rec)
	e.queues[q.name] = q
	i := sort.SearchStrings(e.names, q.name)
	e.names = slices.Insert(e.names, i, q.name)
	return q
}

// putQueue stores a new queue or replaces a queue's record. rec must not be
// modified afterwards.
func (t *tx) putQueue(rec *QueueRecord) *queue {
	q := t.e.queues[rec.Queue.Name]
	if q == nil {
		q = t.e.addQueue(rec)
		q.now = t.now
	} else {
		q.rec = rec
	}
	t.put(rec)
	return q
}

// deleteQueue removes a queue record; its messages, markers, attempts and
// counter must have been deleted before.
func (t *tx) deleteQueue(q *queue) {
	delete(t.e.queues, q.name)
	if i, ok := slices.BinarySearch(t.e.names, q.name); ok {
		t.e.names = slices.Delete(t.e.names, i, i+1)
	}
	t.del(q.rec)
	t.del(&CounterRecord{Queue: q.name})
}

// nextSeq takes the queue's next sequence number. The counter record is
// written once per operation, at its end.
func (t *tx) nextSeq(q *queue) uint64 {
	s := q.next
	q.next++
	if !slices.Contains(t.counters, q) {
		t.counters = append(t.counters, q)
	}
	return s
}

func (t *tx) flushCounters() {
	for _, q := range t.counters {
		if t.e.queues[q.name] == q {
			t.put(&CounterRecord{Queue: q.name, Next: q.next})
		}
	}
}

// insertMessage stores a new message.
func (t *tx) insertMessage(q *queue, rec MessageRecord) *msg {
	m := newMsg(rec)
	q.index(m)
	r := m.rec
	t.changes = append(t.changes, Change{Kind: r.Kind(), Key: r.Key(), Record: &r, New: true})
	return m
}

// updateDelivery changes the delivery state of a stored message, and only
// that: what is written is its DeliveryRecord. The message is re-placed if
// it was placed.
func (t *tx) updateDelivery(q *queue, m *msg, fn func(d *DeliveryRecord)) {
	placed := m.placed
	q.unplace(m)
	d := m.rec.delivery()
	fn(&d)
	m.rec.setDelivery(&d)
	if placed {
		q.place(m)
	}
	t.put(&d)
}

func (t *tx) deleteMessage(q *queue, m *msg) {
	q.unindex(m)
	r := m.rec
	t.del(&r)
	t.del(&DeliveryRecord{Queue: r.Queue, Seq: r.Seq}) // a no-op if it was never delivered
}

func (q *queue) addDedup(rec *DedupRecord) {
	key := dedupKey(rec.Scope, rec.DedupID)
	if old := q.dedup[key]; old != nil {
		q.dedupExp.Remove(old)
	}
	d := &dedupEntry{key: key, rec: rec, i: -1}
	q.dedup[key] = d
	q.dedupExp.Push(d)
}

func dedupKey(scope, id string) string {
	return string(appendPart(appendPart(nil, scope), id))
}

func (t *tx) putDedup(q *queue, rec *DedupRecord) {
	if old := q.dedup[dedupKey(rec.Scope, rec.DedupID)]; old != nil {
		t.del(old.rec) // its key holds when it was written: not the new one's
	}
	q.addDedup(rec)
	t.put(rec)
}

func (t *tx) deleteDedup(q *queue, d *dedupEntry) {
	q.dedupExp.Remove(d)
	delete(q.dedup, d.key)
	t.del(d.rec)
}

func (q *queue) addAttempt(rec *AttemptRecord) {
	if old := q.attempts[rec.AttemptID]; old != nil {
		q.attExp.Remove(old)
	}
	a := &attemptEntry{rec: rec, i: -1}
	q.attempts[rec.AttemptID] = a
	q.attExp.Push(a)
}

func (t *tx) putAttempt(q *queue, rec *AttemptRecord) {
	q.addAttempt(rec)
	t.put(rec)
}

func (t *tx) deleteAttempt(q *queue, a *attemptEntry) {
	q.attExp.Remove(a)
	delete(q.attempts, a.rec.AttemptID)
	t.del(a.rec)
}

func (t *tx) putTask(rec *TaskRecord) {
	t.e.tasks[rec.Task.Handle] = rec
	t.put(rec)
}

func (t *tx) deleteTask(rec *TaskRecord) {
	delete(t.e.tasks, rec.Task.Handle)
	t.del(rec)
}

func (t *tx) putTombstone(rec *TombstoneRecord) {
	t.e.tombs[rec.Name] = rec
	t.put(rec)
}

func (t *tx) deleteTombstone(rec *TombstoneRecord) {
	delete(t.e.tombs, rec.Name)
	t.del(rec)
}

// ---- helpers

// formatSeq is the SequenceNumber of s, a number the queue's counter gave
// (they start at rules.FirstSequence, and are stored as such).
func formatSeq(s uint64) string { return rules.SequenceNumber(s - rules.FirstSequence) }
