// Package stores defines the seam between the SQS service layer and the
// places messages live, as a contract every store implements (the
// conformance suite, functions/conformance, proves it through the service).
//
// Each method is one atomic operation: what it changes is all applied or
// none is, a store may retry it internally, and nothing spans two calls.
// Every method is safe to call concurrently, from any number of processes
// sharing one backend (a store that one process owns, like the embedded
// one, says so and refuses a second). Nothing here is shaped like the SQS
// wire protocol.
//
// Policy stays in the service layer: limits, defaults, digests, receipt
// handle format, which error a condition becomes, what wakes long polls.
// The service passes the numbers a rule needs (a window, a cap, a count)
// and the store applies them atomically. An SQS rule lives in exactly one
// place.
//
// Bounded work: no call's work has to grow with the size of a queue, so
// that stores whose transactions are bounded (Firestore: 500 writes and
// 10 MiB; Spanner: 80,000 mutations) can implement every method. Where
// a method removes much (QueueDelete, QueuePurge, retention), what a client
// sees changes at once and a store may remove the rows later, in bounded
// pages, in passing and in Maintain; the method's contract says what must
// hold meanwhile. A store declares its bounds in Traits and the service
// respects them.
//
// Time: every params struct has Now, and durations in params count from
// it. When Now is zero the store uses its own clock (the database's), which
// it has only if Traits.OwnClock; the service passes Now otherwise, and
// tests pass a fake clock.
//
// Wake-ups are not the store's business: the service publishes them
// (stores/wake) from what the results report. So a result reports what
// made messages receivable that the service cannot see itself: the
// messages a claim redrove (MessageClaimResult.Redriven), a visibility
// change that makes a message visible sooner
// (MessageChangeVisibilityResult.Earlier), where a move put messages
// (MessageMoveResult.MovedTo).
//
// Approximate: QueueStats may lag concurrent operations (as SQS's own
// counts do) but never counts a message that was deleted, purged or expired
// before the call began, nor misses one sent and committed before it;
// except that a store whose count reads every message may give a deep
// queue's last count again for a while (never past a minute, within which
// SQS documents that its counts settle; stores/countcache).
package stores

import (
	"context"
	"errors"
	"time"
)

// Errors a store returns. The service maps them to SQS errors.
var (
	// ErrQueueNotFound: no queue of that name, or its incarnation (QueueID)
	// is not the one given.
	ErrQueueNotFound = errors.New("stores: queue not found")
	// ErrQueueDeletedRecently: a queue of that name was deleted less than
	// QueueCreateParams.RecreateCooldown ago.
	ErrQueueDeletedRecently = errors.New("stores: queue deleted recently")
	// ErrPurgeInProgress: the queue was purged less than
	// QueuePurgeParams.MinInterval ago.
	ErrPurgeInProgress = errors.New("stores: purge in progress")
	// ErrVersionConflict: QueueUpdateParams.IfVersion,
	// MoveTaskUpdateParams.IfVersion or MoveTaskStep.IfVersion did not match.
	ErrVersionConflict = errors.New("stores: version conflict")
	// ErrMoveTaskRunning: a running move task already exists for the source.
	ErrMoveTaskRunning = errors.New("stores: move task running")
	// ErrMoveTaskNotFound: no move task with that handle.
	ErrMoveTaskNotFound = errors.New("stores: move task not found")
	// ErrUnavailable: the store cannot take the operation now and changed
	// nothing, but expects to later (a full disk). The service answers
	// ServiceUnavailable, which SDKs retry.
	ErrUnavailable = errors.New("stores: temporarily unavailable")
)

// Queue is a queue's stored record.
type Queue struct {
	// Name is the queue's key, unique in the store: the service qualifies
	// queue names by account and region (several of each may share one
	// store; see functions/service/accounts.go). Stores compare, order and
	// prefix-match it as an opaque string; it holds letters, digits, '-',
	// '_', '.' and ':'.
	Name string
	// ID names this incarnation of the queue: a queue deleted and created
	// again under the same name has a new ID. Chosen by the service.
	ID   string
	FIFO bool
	// Attributes are the settable attributes as the service normalised them
	// (names as SQS spells them, values as strings). Counts and timestamps
	// are not stored here.
	Attributes map[string]string
	Tags       map[string]string
	// Retention: messages sent longer ago than this are gone (the
	// service keeps it equal to MessageRetentionPeriod); 0 means no limit.
	Retention  time.Duration
	CreatedAt  time.Time
	ModifiedAt time.Time
	// Version increases with every update; QueueUpdate can require it.
	Version int64
}

// QueueStats are the approximate counts of GetQueueAttributes.
type QueueStats struct {
	Visible  int64 // ApproximateNumberOfMessages
	InFlight int64 // ApproximateNumberOfMessagesNotVisible
	Delayed  int64 // ApproximateNumberOfMessagesDelayed
}

// NewMessage is a message to store, prepared by the service.
type NewMessage struct {
	ID                     string // the MessageId, chosen by the service
	Body                   string
	Attributes             map[string]Attribute
	SystemAttributes       map[string]Attribute
	MD5OfBody              string
	MD5OfMessageAttributes string
	MD5OfSystemAttributes  string
	SenderID               string
	GroupID                string        // FIFO message group, or fair-queue group on Standard
	Delay                  time.Duration // invisible for this long after now
	// DedupID is the effective deduplication id (explicit, or the body
	// hash); empty on Standard queues. DedupScope partitions dedup keys:
	// empty for queue-wide dedup, the group id for per-group dedup.
	DedupID    string
	DedupScope string
}

// StoredMessage is a message as a store holds it.
type StoredMessage struct {
	ID                     string
	Body                   string
	Attributes             map[string]Attribute
	SystemAttributes       map[string]Attribute
	MD5OfBody              string
	MD5OfMessageAttributes string
	MD5OfSystemAttributes  string
	SenderID               string
	GroupID                string
	DedupID                string
	// SequenceNumber: on FIFO queues 20 decimal digits, unique in the queue
	// and increasing within a message group in the order the group's sends
	// committed (SQS promises nothing across groups; a store may give more).
	// Empty on Standard queues.
	SequenceNumber  string
	SentAt          time.Time
	FirstReceivedAt time.Time // zero until the first receive
	ReceiveCount    int
	// DeadLetterSource is the name of the queue the message was moved from
	// by a redrive (empty if it was sent here).
	DeadLetterSource string
}

// ---- queues

type QueueCreateParams struct {
	Queue *Queue // Name, ID, FIFO, Attributes, Tags, Retention; the store sets CreatedAt, ModifiedAt and Version
	// RecreateCooldown: refuse with ErrQueueDeletedRecently while a queue of
	// this name was deleted less than this long ago.
	RecreateCooldown time.Duration
	Now              time.Time
}

type QueueCreateResult struct {
	Queue   *Queue // the stored queue: the new one, or the one that already existed
	Created bool   // false: a queue of that name existed and was returned unchanged
}

type QueueGetParams struct {
	Name string
}

type QueueListParams struct {
	Prefix string // only names starting with it
	After  string // only names sorting after it
	Limit  int    // at most this many, in name order; 0 means no limit
}

type QueueUpdateParams struct {
	Name      string
	ID        string // incarnation guard; empty means any
	IfVersion int64  // when not 0, refuse with ErrVersionConflict unless it matches
	// SetAttributes are stored over the existing ones; an empty value
	// removes the attribute.
	SetAttributes map[string]string
	SetTags       map[string]string
	RemoveTags    []string
	Retention     time.Duration // when not 0, replaces Queue.Retention
	Now           time.Time
}

type QueueDeleteParams struct {
	Name string
	ID   string // incarnation guard; empty means any
	Now  time.Time
}

type QueuePurgeParams struct {
	Name        string
	ID          string
	MinInterval time.Duration // refuse with ErrPurgeInProgress inside it
	Now         time.Time
}

type QueueStatsParams struct {
	Name string
	ID   string
	Now  time.Time
}

// ---- messages

type MessageSendParams struct {
	QueueName string
	QueueID   string
	Messages  []NewMessage
	// DedupWindow: on a FIFO queue, a message whose (DedupScope, DedupID)
	// was sent less than this long ago is not stored again; its result
	// echoes the original MessageId and SequenceNumber.
	DedupWindow time.Duration
	Now         time.Time
	// HandOff, when set, is the claim of a receive waiting on this queue
	// in this process, with the same Now. A store may run it in the send's
	// own transaction, after the messages are stored, and answer it in
	// MessageSendResult.HandedOff: the waiting receive then gets what the
	// send made receivable with the send's commit, instead of a wake-up and
	// a transaction of its own. A store that does not, or not for this
	// claim, leaves HandedOff nil and claims nothing.
	HandOff *MessageClaimParams
}

type SendResult struct {
	MessageID      string
	SequenceNumber string
	Duplicate      bool
}

type MessageSendResult struct {
	Results []SendResult // one per params message, in order
	// HandedOff is what MessageSendParams.HandOff claimed, committed with
	// the send; nil when the store did not run it.
	HandedOff *MessageClaimResult
}

// Redrive tells a claim where messages received too often go.
type Redrive struct {
	MaxReceiveCount int    // a message already received this many times is moved instead of returned
	QueueName       string // the dead-letter queue
}

type MessageClaimParams struct {
	QueueName string
	QueueID   string
	Max       int
	// VisibilityTimeout: claimed messages stay invisible this long.
	VisibilityTimeout time.Duration
	// Token is random and chosen by the service for this claim; it becomes
	// part of each claimed message's receipt and makes that delivery's
	// receipt unguessable and distinct from every other delivery.
	Token string
	// AttemptID (FIFO ReceiveRequestAttemptId): a claim repeated with the
	// same AttemptID within AttemptWindow, while every message it returned
	// is still in flight under that claim, returns the same messages with
	// the same Token and restarts their visibility timeout.
	AttemptID     string
	AttemptWindow time.Duration
	// Redrive, when set, moves over-received messages to the dead-letter
	// queue in the claim's transaction; they are not returned. A moved
	// message keeps its MessageId and receive history; its deduplication ID
	// and SentAt are rules.DeadLettered's.
	Redrive *Redrive
	Now     time.Time
}

// ClaimedMessage is one delivery.
type ClaimedMessage struct {
	StoredMessage // ReceiveCount and FirstReceivedAt include this delivery
	Token         string
	// Locator is what the store needs, beyond the MessageId, to find the
	// message again cheaply (a document store's key); empty when it needs
	// nothing. The service carries it in the receipt handle and gives it
	// back in Receipt and MessageChangeVisibilityParams. It comes back from
	// clients, so a store judges it like the token: a wrong one finds
	// nothing (ReceiptStale or ReceiptGone), never another message.
	Locator string
}

type MessageClaimResult struct {
	Messages []ClaimedMessage
	// NextChange is a hint: the earliest time at which a message that is now
	// delayed or in flight becomes visible (zero when none is known). Long
	// polls wake then.
	NextChange time.Time
	// Redriven is how many messages the claim moved to the dead-letter
	// queue (they are receivable there now).
	Redriven int
	// Contended: the claim found nothing because other receivers took its
	// candidates first, so messages may still be receivable. A long poll
	// looks again soon instead of waiting for a wake-up, and nobody may
	// remember the queue as empty.
	Contended bool
}

// Outcome of an operation on one delivery, by receipt.
type ReceiptOutcome int

const (
	// ReceiptCurrent: the receipt is the message's latest delivery and it is
	// still in flight; the operation was applied.
	ReceiptCurrent ReceiptOutcome = iota
	// ReceiptExpired: the receipt is the latest delivery but its visibility
	// timeout has passed and nobody received the message since. Delete
	// applies (the message is deleted) unless KeepExpired; ChangeVisibility
	// applies only with ApplyExpired.
	ReceiptExpired
	// ReceiptStale: the message was not received under this receipt since
	// it was sent or moved (a forged receipt, or one of a former life);
	// nothing applied.
	ReceiptStale
	// ReceiptGone: no such message (deleted, expired, purged, moved).
	ReceiptGone
	// ReceiptEarlier: the receipt is of an earlier delivery: the message was
	// received again since. It acts on the message as an expired one does
	// (Standard queues: SQS lets any receipt of a message act on it), so
	// Delete applies unless KeepExpired and ChangeVisibility only with
	// ApplyExpired.
	ReceiptEarlier
)

// Receipt names one delivery of a message: the message and the claim token
// of the receive that handed it out.
type Receipt struct {
	MessageID string
	Token     string
	Locator   string // as the claim returned it (ClaimedMessage.Locator)
}

// MessageDeleteResult is what a MessageDelete did.
type MessageDeleteResult struct {
	Outcomes []ReceiptOutcome // one per receipt, in order
	// Freed is how many FIFO message groups the deletes left with a head
	// that may be received now: the head they deleted had a next message,
	// visible, or a send into the group was committing beside them. Long
	// polls are woken as many. A group the deletes emptied frees nothing:
	// its next send wakes a poll itself. Zero on a Standard queue (a delete
	// makes nothing receivable there).
	Freed int
}

type MessageDeleteParams struct {
	QueueName string
	QueueID   string
	// Receipts are judged and applied one after another in one atomic call,
	// so that a DeleteMessageBatch is one store operation (one transaction,
	// one commit). A receipt whose message an earlier one deleted is
	// ReceiptGone.
	Receipts []Receipt
	// KeepExpired: when the receipt is ReceiptExpired or ReceiptEarlier,
	// report it without deleting (FIFO queues refuse receipts of a delivery
	// that ended).
	KeepExpired bool
	Now         time.Time
}

type MessageChangeVisibilityParams struct {
	QueueName string
	QueueID   string
	MessageID string
	Token     string
	Locator   string        // as the claim returned it (ClaimedMessage.Locator)
	Timeout   time.Duration // the message becomes visible this long after now
	// MaxSinceReceive caps now+Timeout at ReceivedAt plus this (or, with
	// ReceivedAt zero, at the message's FirstReceivedAt plus this); beyond
	// it the store changes nothing and reports TooLong
	// (rules.VisibilityTooLong).
	MaxSinceReceive time.Duration
	// ReceivedAt is when the receive the receipt is of happened, as the
	// service knows it from the receipt (zero: not known).
	ReceivedAt time.Time
	// ApplyExpired: apply the change also when the outcome is
	// ReceiptExpired or ReceiptEarlier (Standard queues let any receipt of
	// a message change its visibility).
	ApplyExpired bool
	Now          time.Time
}

type MessageChangeVisibilityResult struct {
	Outcome ReceiptOutcome
	TooLong bool
	// Earlier: the change was applied and the message becomes visible
	// sooner than it would have (receivers waiting on the queue must look
	// again).
	Earlier bool
}

type MessageMoveParams struct {
	FromName string
	FromID   string
	// Moved messages arrive as new messages, as SQS redrives them: each
	// gets a new MessageId from NewID and is sent at Now, so retention
	// counts from the move, with ReceiveCount 0 and no DeadLetterSource.
	NewID func() string
	// ToName: the destination queue; empty sends each message back to its
	// DeadLetterSource (a message whose source no longer exists stays put and
	// counts in Failed).
	ToName string
	Max    int // move at most this many visible messages, oldest first
	// Step, when set, makes the move one step of that move task: see
	// MoveTaskStep.
	Step *MoveTaskStep
	Now  time.Time
}

type MessageMoveResult struct {
	Moved int
	// MovedTo counts the moved messages by destination queue name.
	MovedTo map[string]int
	Failed  int
	// Exhausted: no visible message is left in the source (counting those
	// that failed), so a move task is done. A store answers it without
	// counting the queue.
	Exhausted bool
	// Task is the stepped task as stored after the step (with Step only).
	Task *MoveTask
}

// ---- message move tasks

// A move task is stepped by whichever instances run move tasks, so two
// steps of one task may run at once. Each step is one MessageMove with Step
// set: the store checks the task's Version, moves and counts in a single
// transaction. (A version rather than a lease with an owner and an expiry:
// a lease must guess how long a step takes, too short lets two instances
// move at once and too long stalls a task whose owner died, and a lease
// taken before the move still leaves moved but uncounted messages when its
// owner dies between the move and the count. Checked inside the move, the
// version makes claim, move and count one atomic step: the loser of a race
// moves nothing, a crash undoes all three, and nothing needs to expire.)
type MoveTask struct {
	Handle         string
	SourceName     string
	SourceArn      string
	DestinationArn string // empty: back to each message's source
	MaxPerSecond   int    // 0: no limit set
	Status         string // RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED
	Moved          int64  // messages moved by the task's steps, exactly
	ToMove         int64
	FailureReason  string
	StartedAt      time.Time
	UpdatedAt      time.Time
	// PacedTo is the service's pacing state: the task's rate allowance is
	// used up to this time. The store only keeps it.
	PacedTo time.Time
	// Version is set by the store: 1 at create, one more at every update
	// and step. (A task stored before versions existed reads as 0.)
	Version int64
}

// MoveTaskStep makes a MessageMove one step of a move task. In the move's
// transaction, before any message moves, the task must exist (else
// ErrMoveTaskNotFound) and its Version must be IfVersion (else
// ErrVersionConflict: another step or an update came first, or is under
// way, and nothing moves). With the move the store adds the moved count to Moved, stores
// PacedTo, sets UpdatedAt to the move's now and increments Version.
type MoveTaskStep struct {
	Handle    string
	IfVersion int64 // the Version the step read and computed its Max from
	PacedTo   time.Time
}

type MoveTaskCreateParams struct {
	Task *MoveTask // stored as given, but for Version
	// KeepFinished, when positive: with the task stored, the store drops
	// the source's finished tasks past the newest KeepFinished of them
	// (rules.FinishedPast).
	KeepFinished int
}

type MoveTaskListParams struct {
	SourceArn string // empty: every source
	Status    string // empty: every status
	Limit     int    // 0: no limit; newest first
}

type MoveTaskGetParams struct {
	Handle string
}

type MoveTaskUpdateParams struct {
	Task *MoveTask // stored as given (Handle names it), but for Version
	// IfVersion: update only if the stored Version is this one (always
	// checked, 0 included); otherwise return the stored task and
	// ErrVersionConflict.
	IfVersion int64
}

type MaintainParams struct {
	Now time.Time
}

// Store is the seam. Every method is atomic and safe for concurrent use;
// see the package documentation for time, bounds and wake-ups.
type Store interface {
	// QueueCreate stores a new queue, or returns the existing queue of that
	// name unchanged (Created false; the service compares attributes). It
	// refuses with ErrQueueDeletedRecently within RecreateCooldown of a
	// deletion of that name. Concurrent creates of one name: one creates,
	// the others get its queue.
	QueueCreate(ctx context.Context, p *QueueCreateParams) (*QueueCreateResult, error)
	// QueueGet returns the queue of that name or ErrQueueNotFound.
	QueueGet(ctx context.Context, p *QueueGetParams) (*Queue, error)
	// QueueList returns queues in name order, as committed when read.
	QueueList(ctx context.Context, p *QueueListParams) ([]*Queue, error)
	// QueueUpdate applies the changes to the queue incarnation (ID) if its
	// Version is IfVersion (when set), else ErrVersionConflict; it returns
	// the stored queue with its new Version.
	QueueUpdate(ctx context.Context, p *QueueUpdateParams) (*Queue, error)
	// QueueDelete ends the incarnation at once: from then on the name is
	// unknown (ErrQueueNotFound) to every method, its messages are never
	// delivered or counted, and its receipts are ReceiptGone; the deletion
	// time is remembered for the recreate cooldown. A store may remove the
	// incarnation's rows later, in bounded pages (in passing and in
	// Maintain); a queue created again under the name is a new incarnation
	// and never sees them.
	QueueDelete(ctx context.Context, p *QueueDeleteParams) error
	// QueuePurge makes every message of the queue committed before it, and
	// its deduplication markers and receive attempts, gone at once: never
	// delivered again, not counted, receipts ReceiptGone, and a message sent
	// again after the purge is stored (as on AWS). A send racing the purge
	// may land on either side. It refuses with ErrPurgeInProgress within
	// MinInterval of the last purge. A store may remove the rows later, in
	// bounded pages.
	QueuePurge(ctx context.Context, p *QueuePurgeParams) error
	// QueueStats counts the queue's messages (see the package documentation
	// for how approximate).
	QueueStats(ctx context.Context, p *QueueStatsParams) (*QueueStats, error)

	// MessageSend stores the messages in order, all or none, and returns
	// one result per message. On FIFO queues a message whose dedup key is
	// in the window is not stored and echoes the original's MessageId and
	// SequenceNumber (Duplicate); within one call, a later entry can be a
	// duplicate of an earlier one. Concurrent sends of one dedup key: one
	// stores it, all return its MessageId and SequenceNumber. Returns only
	// after the messages are durable.
	MessageSend(ctx context.Context, p *MessageSendParams) (*MessageSendResult, error)
	// MessageClaim receives up to Max visible messages under a new delivery
	// (Token), making them invisible for VisibilityTimeout and counting the
	// receive. Standard queues: any visible messages, older ones first as
	// far as cheap. FIFO queues: from each group, a contiguous run of
	// visible messages starting at the group's first remaining message (its
	// head) and stopping at the first message that is not visible (in
	// flight or delayed); a group whose head is not visible gives nothing,
	// and several groups may contribute, in any order across groups. (So
	// while a group has a message in flight it gives nothing more, except
	// that when an earlier message's visibility lapses it is served again
	// first, as AWS does.) Concurrent claims never hand out one message
	// twice while its visibility lasts, nor one FIFO group to two claims.
	// With Redrive, over-received messages go to the dead-letter queue in
	// the same transaction instead (a store may bound how many one call
	// moves; later claims move the rest). With AttemptID: see
	// MessageClaimParams.
	MessageClaim(ctx context.Context, p *MessageClaimParams) (*MessageClaimResult, error)
	// MessageDelete judges each receipt (see ReceiptOutcome) and deletes
	// the messages of current ones (and of expired ones, unless
	// KeepExpired), in order, in one operation: one outcome per receipt,
	// and the FIFO groups the deletes let go of.
	MessageDelete(ctx context.Context, p *MessageDeleteParams) (*MessageDeleteResult, error)
	// MessageChangeVisibility judges the receipt and, when it applies (see
	// the params), makes the message visible Timeout after Now.
	MessageChangeVisibility(ctx context.Context, p *MessageChangeVisibilityParams) (*MessageChangeVisibilityResult, error)
	// MessageMove moves up to Max visible messages, oldest first, to ToName
	// or back to their sources; with Step it is a move task's step, checked
	// against the task's version and counted in the same transaction.
	// Max is at most Traits.MaxMovePerCall when the store declares it.
	MessageMove(ctx context.Context, p *MessageMoveParams) (*MessageMoveResult, error)

	// MoveTaskCreate stores a new task with Version 1, or returns
	// ErrMoveTaskRunning if a task of the same SourceArn is RUNNING or
	// CANCELLING (or the handle is taken). Concurrent creates for one source:
	// at most one succeeds.
	MoveTaskCreate(ctx context.Context, p *MoveTaskCreateParams) error
	// MoveTaskList and MoveTaskGet read tasks as committed; a task read may
	// be stepped or updated by someone else at once, which its Version tells.
	MoveTaskList(ctx context.Context, p *MoveTaskListParams) ([]*MoveTask, error)
	// MoveTaskGet returns ErrMoveTaskNotFound for an unknown handle.
	MoveTaskGet(ctx context.Context, p *MoveTaskGetParams) (*MoveTask, error)
	// MoveTaskUpdate replaces a task (status changes: cancel, complete,
	// fail) if nobody changed it since it was read (IfVersion), and returns
	// it as stored with its new Version. Concurrent updates and steps of one
	// task: exactly one of those that read the same Version applies. (Steps
	// are MessageMove with Step; an update passes the task as it read it,
	// so Moved stays what the steps counted.)
	MoveTaskUpdate(ctx context.Context, p *MoveTaskUpdateParams) (*MoveTask, error)

	// Maintain does the housekeeping that requests also do in passing:
	// removes messages past retention, expired dedup markers and receive
	// attempts, old tombstones, and what deletions and purges left. Any
	// number of instances may run it at once. A store whose transactions
	// are bounded does it in bounded pages (and may leave the rest to the
	// next pass).
	Maintain(ctx context.Context, p *MaintainParams) error

	// Traits says what the store is like; the service respects it. It is
	// constant for the store's life.
	Traits() Traits

	// Close releases the store; calls after it fail. Safe to call twice.
	Close() error
}

// Traits are what a store declares about itself.
type Traits struct {
	// OwnClock: the store reads a clock of its own inside its transactions
	// (PostgreSQL's now()) and uses it when a params struct's Now is zero,
	// so that instances whose clocks disagree still agree on time. A store
	// without one (Firestore) leaves it false, and the service then always
	// passes Now.
	OwnClock bool
	// MaxMovePerCall bounds MessageMoveParams.Max, for stores whose
	// transactions are bounded; 0: no bound beyond the service's own.
	MaxMovePerCall int
	// HandOffs: MessageSend runs MessageSendParams.HandOff, at least for
	// some claims. The service offers waiting receives to the sends of
	// stores that do, and to no others.
	HandOffs bool
}
