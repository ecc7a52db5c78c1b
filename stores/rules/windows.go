package rules

import (
	"time"

	"github.com/sluicehq/sluice/stores"
)

// within says whether now is less than window after start: now - start <
// window. A clock that went back (now before start) is within a positive
// window; a window of 0 or less holds nothing from start on.
func within(start time.Time, window time.Duration, now time.Time) bool {
	return now.Before(start.Add(window))
}

// Duplicate says whether a FIFO send at now is a duplicate of the send at
// sentAt of the same (DedupScope, DedupID): SQS deduplicates a dedup id
// sent less than the deduplication interval (window) ago.
// pgstore's sendFIFOSQL has it in SQL, pinned by its TestSQLPinDedup.
func Duplicate(sentAt time.Time, window time.Duration, now time.Time) bool {
	return within(sentAt, window, now)
}

// AttemptInWindow says whether a receive attempt made at createdAt may still
// be replayed at now: SQS keeps a ReceiveRequestAttemptId for window (five
// minutes) after the receive.
func AttemptInWindow(createdAt time.Time, window time.Duration, now time.Time) bool {
	return within(createdAt, window, now)
}

// AttemptReplays says whether a FIFO receive repeated with the
// ReceiveRequestAttemptId of an earlier claim (made at createdAt under
// token) returns that claim's messages again: the attempt is within its
// window (AttemptInWindow), it returned messages, and every one of them is
// still in flight under its token (its receipt is ReceiptCurrent) and was
// not modified since: its visibility still ends where the claim (or its
// last replay) left it, left[i] for deliveries[i]. SQS replays "if none of
// the messages have been modified (deleted or had their visibility
// changes)". Without left (an attempt recorded without it), or with a zero
// entry, the visibility is not compared. deliveries are those messages'
// stored deliveries, one per message the claim returned (a missing one as
// Delivery{}). Otherwise the receive is a new claim.
func AttemptReplays(createdAt time.Time, window time.Duration, token string, left []time.Time, deliveries []Delivery, now time.Time) bool {
	if len(deliveries) == 0 || !AttemptInWindow(createdAt, window, now) {
		return false
	}
	for i, d := range deliveries {
		if JudgeReceipt(d, token, now) != stores.ReceiptCurrent {
			return false
		}
		if i < len(left) && !left[i].IsZero() && !d.VisibleAt.Equal(left[i]) {
			return false
		}
	}
	return true
}

// LeftAll is the left of AttemptReplays for n messages whose claim left
// them all visible again at until (zero: not kept).
func LeftAll(n int, until time.Time) []time.Time {
	if until.IsZero() {
		return nil
	}
	left := make([]time.Time, n)
	for i := range left {
		left[i] = until
	}
	return left
}

// RecreateRefused says whether creating a queue at now under the name of
// one deleted at deletedAt is refused (stores.ErrQueueDeletedRecently):
// SQS makes you wait cooldown (60 seconds) after a DeleteQueue.
func RecreateRefused(deletedAt time.Time, cooldown time.Duration, now time.Time) bool {
	return within(deletedAt, cooldown, now)
}

// PurgeRefused says whether a purge at now of a queue last purged at
// lastPurge (zero: never) is refused (stores.ErrPurgeInProgress): SQS
// allows one PurgeQueue per minInterval (60 seconds).
func PurgeRefused(lastPurge time.Time, minInterval time.Duration, now time.Time) bool {
	return !lastPurge.IsZero() && within(lastPurge, minInterval, now)
}

// TombstoneTTL is how long a store keeps the record of a deleted queue's
// name (RecreateRefused can only refuse while it exists). The service's
// cooldown is 60 s; a day leaves ample room.
const TombstoneTTL = 24 * time.Hour

// TombstoneKept says whether the record of a queue deleted at deletedAt is
// kept at now: for TombstoneTTL.
func TombstoneKept(deletedAt, now time.Time) bool {
	return within(deletedAt, TombstoneTTL, now)
}

// TombstoneCutoff is TombstoneKept for a store that drops tombstones in a
// set: those deleted at or before it are dropped at now.
func TombstoneCutoff(now time.Time) time.Time {
	return now.Add(-TombstoneTTL)
}
