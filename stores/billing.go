package stores

import (
	"context"
	"sync/atomic"
)

// BilledOps are the operations of a backend that bills per operation
// (Firestore: document reads, writes and deletes), counted by the
// provider's rules as the store made them.
type BilledOps struct {
	Reads, Writes, Deletes int64
	// Bytes is the billed volume, for a backend that bills by it rather
	// than per operation (Pub/Sub: the bytes of each publish and pull,
	// at least 1,000 a request; Spanner, which bills storage by size: the
	// bytes its committed writes stored, rows and index entries); not
	// part of Total.
	Bytes int64
	// Retries are transaction attempts that conflicted with another and
	// ran again: not billed themselves (their reads are, in Reads), but
	// what contention costs.
	Retries int64
	// ReadWrite and ReadOnly count transactions, for a backend whose cost
	// follows its transactions rather than per-operation prices (Spanner:
	// compute capacity); not part of Total.
	ReadWrite, ReadOnly int64
}

// Total is every billed operation, whatever its kind.
func (o BilledOps) Total() int64 { return o.Reads + o.Writes + o.Deletes }

// Biller is what a store whose backend bills per operation offers: what it
// was billed since it opened. Calls made with a Tally in their context are
// also counted there, call by call.
type Biller interface {
	BilledOps() BilledOps
}

// StorageSizer is what a store whose backend bills storage by size
// offers: the bytes a queue's documents and their index entries hold now,
// by the backend's sizing rules. It reads the whole queue: a measurement,
// not something to serve requests from.
type StorageSizer interface {
	QueueStoredBytes(ctx context.Context, name, id string) (int64, error)
}

// Tally counts the billed operations of the calls made with its context
// (see WithTally). Safe for concurrent use.
type Tally struct {
	reads, writes, deletes, retries, bytes, rw, ro atomic.Int64
}

// Add counts o.
func (t *Tally) Add(o BilledOps) {
	if t == nil {
		return
	}
	t.reads.Add(o.Reads)
	t.writes.Add(o.Writes)
	t.deletes.Add(o.Deletes)
	t.retries.Add(o.Retries)
	t.bytes.Add(o.Bytes)
	t.rw.Add(o.ReadWrite)
	t.ro.Add(o.ReadOnly)
}

// Ops is what the tally counted.
func (t *Tally) Ops() BilledOps {
	return BilledOps{Reads: t.reads.Load(), Writes: t.writes.Load(), Deletes: t.deletes.Load(), Retries: t.retries.Load(), Bytes: t.bytes.Load(),
		ReadWrite: t.rw.Load(), ReadOnly: t.ro.Load()}
}

type tallyKey struct{}

// WithTally returns a context whose store calls count their billed
// operations in the returned tally.
func WithTally(ctx context.Context) (context.Context, *Tally) {
	t := &Tally{}
	return context.WithValue(ctx, tallyKey{}, t), t
}

// TallyOf is the tally of ctx, or nil (Add on nil counts nothing).
func TallyOf(ctx context.Context) *Tally {
	t, _ := ctx.Value(tallyKey{}).(*Tally)
	return t
}
