package orderedbatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// queueFresh: a queue record this instance read (or wrote) less than this
// long ago is trusted, without reading it again, by the transactions of
// receives, deletes and visibility changes, a read less each. So a purge,
// deletion or attribute change made through another instance reaches them
// within this long (SQS itself takes up to 60 s). Sends always read the
// record: a message is never stored in a generation that was purged.
const queueFresh = time.Second

// maxKnown bounds the queues an instance remembers.
const maxKnown = 10000

// queueCache is an instance's view of queue records, by name: what
// candidate queries look in and, while fresh, what transactions trust.
type queueCache struct {
	mu sync.Mutex
	m  map[string]cachedQueue
}

type cachedQueue struct {
	q      *queueRec
	readAt time.Time // when the record was last known current
}

// get returns the live record of incarnation id (id empty: any) read less
// than fresh ago (fresh zero: of any age), or nil.
func (k *queueCache) get(name, id string, fresh time.Duration) *queueRec {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[name]
	switch {
	case !ok || !e.q.Live || (id != "" && e.q.Queue.ID != id):
		return nil
	case fresh > 0 && time.Since(e.readAt) >= fresh:
		return nil
	}
	return e.q
}

// put remembers q as current at readAt, unless a newer record of the same
// incarnation is known (a transaction that read the record may report it
// after a later purge or change, made here, was remembered).
func (k *queueCache) put(q *queueRec, readAt time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.m[q.Queue.Name]; ok && e.q.Queue.ID == q.Queue.ID && newer(e.q, q) {
		return
	}
	if k.m == nil || len(k.m) >= maxKnown {
		k.m = map[string]cachedQueue{}
	}
	k.m[q.Queue.Name] = cachedQueue{q: q, readAt: readAt}
}

func (k *queueCache) forget(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, name)
}

// newer says whether a is a later state of b's incarnation: deleted, or
// purged or changed since.
func newer(a, b *queueRec) bool {
	if a.Live != b.Live {
		return !a.Live
	}
	return a.Gen > b.Gen || a.Queue.Version > b.Queue.Version
}

// cachedQueue returns the queue as this instance last knew it, of any age:
// it names the incarnation and generation that candidate queries look in.
func (s *Store) cachedQueue(ctx context.Context, name, id string) (*queueRec, error) {
	if q := s.queues.get(name, id, 0); q != nil {
		return q, nil
	}
	return s.refreshQueue(ctx, name, id)
}

// refreshQueue reads the live queue outside a transaction and remembers it.
func (s *Store) refreshQueue(ctx context.Context, name, id string) (*queueRec, error) {
	at := time.Now()
	q, err := s.readQueue(ctx, name, id)
	if err != nil {
		if errors.Is(err, stores.ErrQueueNotFound) {
			s.queues.forget(name)
		}
		return nil, err
	}
	s.queues.put(q, at)
	return q, nil
}

// queueFor returns the queue for a transaction on its messages: the
// record as this instance knows it while that is fresh, else read in the
// transaction. A transaction that finds a document of a later generation
// than the record says returns errStaleQueue (see runOnQueue).
func (s *Store) queueFor(t *txn, name, id string) (q *queueRec, cached bool, err error) {
	if q := s.queues.get(name, id, queueFresh); q != nil {
		return q, true, nil
	}
	q, err = s.readQueueIn(t, name, id)
	return q, false, err
}

// readQueueIn reads the live queue in the transaction (see txn.queue) and
// remembers it once the transaction commits. The record must not be
// changed by the transaction.
func (s *Store) readQueueIn(t *txn, name, id string) (*queueRec, error) {
	q, err := t.queue(name, id)
	if err != nil {
		return nil, err
	}
	t.afterCommit(func() { s.queues.put(q, time.Now()) })
	return q, nil
}

// errStaleQueue: a transaction that trusted the cached queue record found
// a document of a later generation (a purge through another instance).
var errStaleQueue = errors.New("orderedbatch: the queue record this instance knows is stale")

// runOnQueue runs fn in a transaction on the messages of a queue (see
// queueFor), again with the record read afresh when the one it trusted was
// stale.
func (s *Store) runOnQueue(ctx context.Context, now time.Time, name, id string, fn func(t *txn, q *queueRec) error) error {
	for try := 0; ; try++ {
		err := s.run(ctx, now, func(t *txn) error {
			q, _, err := s.queueFor(t, name, id)
			if err != nil {
				return err
			}
			return fn(t, q)
		})
		switch {
		case errors.Is(err, errStaleQueue) && try < 2:
			s.queues.forget(name)
			continue
		case errors.Is(err, stores.ErrQueueNotFound):
			s.queues.forget(name)
		}
		return err
	}
}
