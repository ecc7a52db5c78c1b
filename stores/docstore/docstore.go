// Package docstore is the small transactional document interface that the
// ordered-batch protocol (stores/orderedbatch) runs on, and that Firestore
// and Spanner implement. Nothing in it knows about queues or messages.
//
// A backend offers strong reads by key, queries (used as hints: they run
// outside transactions and their answers may be stale by the time they are
// used), count aggregations, and a retried read-then-write transaction.
// Inside a transaction every read comes before the first write (Firestore's
// rule, which every backend enforces so that a protocol bug shows on each),
// and the transaction is serializable with respect to the documents it read
// and wrote: a backend may get there by locks (pessimistic, Firestore's
// Standard edition) or by validating reads at commit (optimistic,
// Firestore's Enterprise edition, the in-memory backend); the protocol is
// correct under either.
package docstore

import (
	"context"
	"errors"
	"time"
)

// Key names a document: a collection and an id within it. An id holds
// printable ASCII but '/', at most 700 bytes.
type Key struct {
	Collection string
	ID         string
}

// Fields are a document's values. A value is one of: string, int64, bool,
// time.Time (kept to the microsecond, in UTC), []byte, or nil. Queries
// compare values of the same type only.
type Fields map[string]any

// Doc is a document as read: its key and fields.
type Doc struct {
	Key    Key
	Fields Fields
}

// Op is a query filter's comparison.
type Op int

const (
	Eq Op = iota // field == value
	Lt           // field <  value
	Le           // field <= value
	Gt           // field >  value
	Ge           // field >= value
	In           // field == one of value, a []any of at most 30
)

// Filter is one condition of a query; a query's filters all hold.
type Filter struct {
	Field string
	Op    Op
	Value any
}

// Order sorts query results by a field.
type Order struct {
	Field string
	Desc  bool
}

// Query selects documents of one collection. Its shape is what both
// Firestore and Spanner serve from an index: equality (and In) filters on
// any fields, range filters on at most one field, and ordering that starts
// with the range field when there is one. Documents missing a filtered or
// ordered field do not match. Ties in the ordering are broken by key id.
// Every query a store runs must be covered by an index it declares (see
// Index).
type Query struct {
	Collection string
	Filters    []Filter
	Order      []Order
	// StartAfter: only documents whose key id sorts after it (with an empty
	// Order, results are in key id order, which makes paging by key).
	StartAfter string
	Limit      int // 0: no limit
}

// Index is a composite index a store needs: a collection and its fields in
// order. Backends that need indexes declared (Firestore) deploy these.
type Index struct {
	Collection string
	Fields     []Order
}

// Tx is one attempt of a transaction. Reads first, then writes; a read
// after a write fails with ErrReadAfterWrite. Writes are buffered and
// applied at commit, all or none.
type Tx interface {
	// Get reads documents by key, one result per key (nil when missing),
	// as of the transaction: every read of one attempt sees the same
	// consistent state (a snapshot, or documents locked as they are read),
	// so an attempt never acts on a torn view. A document read here is guarded: if someone
	// else changes it (or creates it, when it was missing) before this
	// transaction commits, one of the two is retried.
	Get(ctx context.Context, keys ...Key) ([]*Doc, error)
	// Set creates or replaces a document.
	Set(key Key, fields Fields) error
	// Create writes a document that must not exist when the transaction
	// commits; if it does, the commit fails with ErrExists, nothing is
	// written and fn is not run again. The key is not read: a Create costs
	// no read and guards nothing but its own precondition.
	Create(key Key, fields Fields) error
	// Delete removes a document (nothing if it is missing).
	Delete(key Key) error
}

// Store is a backend.
type Store interface {
	// Get reads documents by key outside any transaction, strongly (as
	// committed when the read began).
	Get(ctx context.Context, keys ...Key) ([]*Doc, error)
	// Query runs a query outside any transaction. Its answer is a hint.
	Query(ctx context.Context, q Query) ([]*Doc, error)
	// Count counts the documents a query (without Limit or StartAfter)
	// matches.
	Count(ctx context.Context, q Query) (int64, error)
	// Sum adds up an int64 field over the documents a query (without Limit
	// or StartAfter) matches; documents without it add nothing.
	Sum(ctx context.Context, q Query, field string) (int64, error)
	// RunTx runs fn in a transaction and commits it, running fn again from
	// the start when the transaction conflicts with another (so fn must not
	// keep state across attempts, and sees each attempt's own reads). An
	// error from fn aborts the transaction and is returned as is.
	RunTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Limits says how big documents and transactions may be.
	Limits() Limits
	Close() error
}

// Limits are a backend's bounds, which the protocol keeps below.
type Limits struct {
	MaxDocBytes  int // a document's encoded size
	MaxTxWrites  int // writes and deletes in one transaction
	MaxTxBytes   int // the writes of one transaction together
	MaxBatchGets int // keys in one Get
}

// Errors a backend returns.
var (
	// ErrReadAfterWrite: a transaction read after it wrote.
	ErrReadAfterWrite = errors.New("docstore: read after write in a transaction")
	// ErrContention: a transaction kept conflicting and its retries ran out.
	ErrContention = errors.New("docstore: transaction contention, retries exhausted")
	// ErrExists: a transaction's Create found its document at commit;
	// nothing committed.
	ErrExists = errors.New("docstore: a created document exists")
	// ErrUnavailable: the backend cannot be reached now; nothing committed.
	ErrUnavailable = errors.New("docstore: backend unavailable")
	// ErrOutcomeUnknown: a transaction's commit was sent and no answer
	// came back (a deadline or a lost connection during the commit); it
	// may have committed. fn is not run again: a caller that retries finds
	// the first attempt's durable markers (deduplication, attempt ids).
	ErrOutcomeUnknown = errors.New("docstore: commit outcome unknown")
)

// Micro rounds a time the way documents keep it: to the microsecond, UTC.
func Micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// Type is a field's value type, for backends whose tables are typed.
type Type int

const (
	String Type = iota + 1 // string
	Int64                  // int64
	Bool                   // bool
	Time                   // time.Time
	Bytes                  // []byte
)

func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case Int64:
		return "int64"
	case Bool:
		return "bool"
	case Time:
		return "time"
	case Bytes:
		return "bytes"
	}
	return "Type(?)"
}

// Table declares a collection's fields and their types. A store whose
// backend keeps typed tables (Spanner) names them, so that the backend
// gives each collection columns it can index; backends without a schema
// (Firestore, the in-memory one) ignore it. A document of a declared
// collection holds only declared fields, each of its type or absent.
type Table struct {
	Collection string
	Fields     []Column
}

// Column is a declared field.
type Column struct {
	Name string
	Type Type
}
