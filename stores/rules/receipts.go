package rules

import (
	"time"

	"github.com/sluicehq/sluice/stores"
)

// Delivery is what a store knows of a message when it judges a receipt.
type Delivery struct {
	// Found: the message exists and is retained (see Retained). A message
	// past retention is gone even while its row waits for a sweep.
	Found bool
	// Token is the claim token of the message's latest delivery; empty when
	// it was not received since it was sent or moved.
	Token string
	// VisibleAt is when the latest delivery's visibility timeout ends.
	VisibleAt time.Time
}

// JudgeReceipt says what a receipt (the claim token it carries) is to the
// message whose stored delivery is d, at now: the stores.ReceiptOutcome
// rules of the seam.
//   - ReceiptGone: no such message (deleted, moved, purged, past retention);
//   - ReceiptStale: the message was not received under this token, or was
//     received again since;
//   - ReceiptExpired: the latest delivery, whose visibility timeout ended at
//     or before now;
//   - ReceiptCurrent: the latest delivery, still in flight.
//
// pgstore's sluice_delete has it in PL/pgSQL too (one round trip per
// DeleteMessageBatch), pinned by its TestSQLPinReceipt.
func JudgeReceipt(d Delivery, token string, now time.Time) stores.ReceiptOutcome {
	switch {
	case !d.Found:
		return stores.ReceiptGone
	case d.Token == "" || d.Token != token:
		return stores.ReceiptStale
	case !d.VisibleAt.After(now):
		return stores.ReceiptExpired
	}
	return stores.ReceiptCurrent
}

// DeleteApplies says whether a MessageDelete deletes the message of a
// receipt judged o: a current receipt always, an expired one unless
// keepExpired (FIFO queues refuse receipts that timed out, SQS's rule for
// them; Standard queues accept the latest receipt).
func DeleteApplies(o stores.ReceiptOutcome, keepExpired bool) bool {
	return o == stores.ReceiptCurrent || o == stores.ReceiptExpired && !keepExpired
}

// VisibilityChangeApplies says whether a ChangeMessageVisibility changes a
// delivery whose receipt was judged o: a current receipt always, an expired
// one only with applyExpired (Standard queues let the latest receipt extend
// a delivery that timed out unnoticed).
func VisibilityChangeApplies(o stores.ReceiptOutcome, applyExpired bool) bool {
	return o == stores.ReceiptCurrent || o == stores.ReceiptExpired && applyExpired
}

// VisibilityTooLong says whether making a message invisible until until
// exceeds the cap of maxSinceFirstReceive after its first receive (SQS: a
// message stays in flight at most 12 hours from when it was first
// received). A cap of 0 or less is no cap; a message never received
// (firstReceived zero) is not capped.
func VisibilityTooLong(firstReceived time.Time, maxSinceFirstReceive time.Duration, until time.Time) bool {
	return maxSinceFirstReceive > 0 && !firstReceived.IsZero() && until.After(firstReceived.Add(maxSinceFirstReceive))
}
