package engine

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// Kind names a type of stored record. A durable store keeps one keyspace
// (a bucket, a table) per kind; Kind.String is a stable name for it.
type Kind uint8

const (
	KindQueue     Kind = 1 + iota // *QueueRecord
	KindCounter                   // *CounterRecord
	KindMessage                   // *MessageRecord
	KindDedup                     // *DedupRecord
	KindAttempt                   // *AttemptRecord
	KindTask                      // *TaskRecord
	KindTombstone                 // *TombstoneRecord
	KindDelivery                  // *DeliveryRecord
)

var kindNames = [...]string{
	KindQueue:     "queues",
	KindCounter:   "counters",
	KindMessage:   "messages",
	KindDedup:     "dedup",
	KindAttempt:   "attempts",
	KindTask:      "tasks",
	KindTombstone: "tombstones",
	KindDelivery:  "deliveries",
}

// Kinds lists every kind.
func Kinds() []Kind {
	return []Kind{KindQueue, KindCounter, KindMessage, KindDedup, KindAttempt, KindTask, KindTombstone, KindDelivery}
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// New returns a new zero record of the kind, to decode into.
func (k Kind) New() Record {
	switch k {
	case KindQueue:
		return &QueueRecord{}
	case KindCounter:
		return &CounterRecord{}
	case KindMessage:
		return &MessageRecord{}
	case KindDedup:
		return &DedupRecord{}
	case KindAttempt:
		return &AttemptRecord{}
	case KindTask:
		return &TaskRecord{}
	case KindTombstone:
		return &TombstoneRecord{}
	case KindDelivery:
		return &DeliveryRecord{}
	}
	return nil
}

// Record is one stored record. Key is unique within the record's kind and
// is derived from the record's own fields, so a record decoded from storage
// needs no separate key.
type Record interface {
	Kind() Kind
	Key() []byte
}

// Change is one record-level mutation: Record is the new value, or nil when
// the record with that Kind and Key is deleted.
//
// A Record in a Change is a snapshot owned by the change: the engine never
// modifies it (nor any map or slice it refers to) afterwards, so it can be
// encoded outside the engine's lock.
type Change struct {
	Kind   Kind
	Key    []byte
	Record Record
	// New says that the engine held no record of this Kind and Key just
	// before this change: a message stored (every message is stored under
	// its queue's next sequence number). A queue deleted and created again
	// gives out its numbers again, so an earlier message's delete may
	// precede it in the same commit; a committer that merges changes
	// keeps the first one's New.
	New bool
}

// QueueRecord is a queue and the little state the engine keeps beside it.
type QueueRecord struct {
	Queue       stores.Queue
	LastPurgeAt time.Time
}

// CounterRecord holds the next sequence number of a queue. Every message
// stored in a queue (sent or moved in) takes the next number; FIFO queues
// expose it as SequenceNumber, Standard queues use it for ordering only.
type CounterRecord struct {
	Queue string
	Next  uint64
}

// MessageRecord is a message in a queue, with its delivery state.
//
// A store writes it once, when the message is stored (sent, or moved to
// another queue); what a delivery changes afterwards is written as the
// message's DeliveryRecord, so that a receive writes a few dozen bytes
// whatever the size of the body. The delivery state in a MessageRecord is
// the one it was stored with (or, in records written before deliveries were
// split out, the latest); a DeliveryRecord under the same key overrides it.
type MessageRecord struct {
	Queue     string
	Seq       uint64    // position in the queue; see CounterRecord
	VisibleAt time.Time // receivable from this instant on
	Token     string    // the token of the latest delivery; empty if never delivered here
	Message   stores.StoredMessage
}

// DeliveryRecord is the delivery state of a stored message: everything a
// receive or a visibility change modifies. Its key is its message's.
type DeliveryRecord struct {
	Queue           string
	Seq             uint64
	VisibleAt       time.Time
	Token           string
	ReceiveCount    int
	FirstReceivedAt time.Time
}

// delivery is the delivery state r holds.
func (r *MessageRecord) delivery() DeliveryRecord {
	return DeliveryRecord{Queue: r.Queue, Seq: r.Seq, VisibleAt: r.VisibleAt, Token: r.Token,
		ReceiveCount: r.Message.ReceiveCount, FirstReceivedAt: r.Message.FirstReceivedAt}
}

// setDelivery makes d the delivery state of r (d belongs to r's message).
func (r *MessageRecord) setDelivery(d *DeliveryRecord) {
	r.VisibleAt, r.Token = d.VisibleAt, d.Token
	r.Message.ReceiveCount, r.Message.FirstReceivedAt = d.ReceiveCount, d.FirstReceivedAt
}

// DedupRecord is a FIFO deduplication marker.
type DedupRecord struct {
	Queue          string
	Scope          string
	DedupID        string
	MessageID      string
	SequenceNumber string
	CreatedAt      time.Time
	ExpiresAt      time.Time // CreatedAt plus the window in force when it was written
}

// AttemptRecord remembers what a claim with a ReceiveRequestAttemptId got.
type AttemptRecord struct {
	Queue      string
	AttemptID  string
	Token      string
	MessageIDs []string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	// Until is where the claim, or its last replay, set the messages'
	// visibility (zero in records written before it was kept).
	Until time.Time
}

// TaskRecord is a message move task.
type TaskRecord struct {
	Task stores.MoveTask
}

// TombstoneRecord remembers when a queue name was deleted.
type TombstoneRecord struct {
	Name      string
	DeletedAt time.Time
}

func (*QueueRecord) Kind() Kind     { return KindQueue }
func (*CounterRecord) Kind() Kind   { return KindCounter }
func (*MessageRecord) Kind() Kind   { return KindMessage }
func (*DedupRecord) Kind() Kind     { return KindDedup }
func (*AttemptRecord) Kind() Kind   { return KindAttempt }
func (*TaskRecord) Kind() Kind      { return KindTask }
func (*TombstoneRecord) Kind() Kind { return KindTombstone }
func (*DeliveryRecord) Kind() Kind  { return KindDelivery }

func (r *QueueRecord) Key() []byte     { return []byte(r.Queue.Name) }
func (r *CounterRecord) Key() []byte   { return []byte(r.Queue) }
func (r *TaskRecord) Key() []byte      { return []byte(r.Task.Handle) }
func (r *TombstoneRecord) Key() []byte { return []byte(r.Name) }

// Key of a message: the queue name, then the big-endian sequence number, so
// that new messages append at the end of a queue's key range.
func (r *MessageRecord) Key() []byte { return messageKey(r.Queue, r.Seq) }

func (r *DeliveryRecord) Key() []byte { return messageKey(r.Queue, r.Seq) }

func messageKey(queue string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(appendPart(nil, queue), seq)
}

// Key of a dedup marker: the queue name, the instant it was written, then
// its scope and id, so that a durable store appends new markers at the end
// of a queue's range and their expiry removes them from its start, rather
// than writing pages all over the range (ids are random).
func (r *DedupRecord) Key() []byte {
	k := binary.BigEndian.AppendUint64(appendPart(nil, r.Queue), sortableNanos(r.CreatedAt))
	return appendPart(appendPart(k, r.Scope), r.DedupID)
}

// LegacyKey is the key a dedup marker had before its key held the instant
// it was written: a durable store finds the markers it wrote then under it.
func (r *DedupRecord) LegacyKey() []byte {
	return appendPart(appendPart(appendPart(nil, r.Queue), r.Scope), r.DedupID)
}

// sortableNanos is t in nanoseconds since 1970, with the sign bit flipped,
// so that big-endian bytes sort as the instants do.
func sortableNanos(t time.Time) uint64 { return uint64(t.UnixNano()) ^ 1<<63 }

func (r *AttemptRecord) Key() []byte {
	return appendPart(appendPart(nil, r.Queue), r.AttemptID)
}

// appendPart appends a length-prefixed component, so that composite keys are
// unambiguous whatever bytes the components hold.
func appendPart(k []byte, s string) []byte {
	k = binary.AppendUvarint(k, uint64(len(s)))
	return append(k, s...)
}
