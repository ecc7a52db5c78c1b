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
//   - ReceiptStale: the message was not received since it was sent or
//     moved, or the token is empty: it is of no delivery of the message;
//   - ReceiptEarlier: an earlier delivery: the message was received again
//     since under another token;
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
	case d.Token == "" || token == "":
		return stores.ReceiptStale
	case d.Token != token:
		return stores.ReceiptEarlier
	case !d.VisibleAt.After(now):
		return stores.ReceiptExpired
	}
	return stores.ReceiptCurrent
}

// endedDelivery: the receipt is of a delivery of the message that is over,
// by its timeout (expired) or by a later receive (earlier).
func endedDelivery(o stores.ReceiptOutcome) bool {
	return o == stores.ReceiptExpired || o == stores.ReceiptEarlier
}

// DeleteApplies says whether a MessageDelete deletes the message of a
// receipt judged o: a current receipt always, one of an ended delivery
// (expired, or earlier than the latest) unless keepExpired. FIFO queues
// refuse those, SQS's rule for them; Standard queues let any receipt of a
// message delete it, as SQS does ("even if a visibility timeout setting
// causes the message to be locked by another consumer").
func DeleteApplies(o stores.ReceiptOutcome, keepExpired bool) bool {
	return o == stores.ReceiptCurrent || endedDelivery(o) && !keepExpired
}

// VisibilityChangeApplies says whether a ChangeMessageVisibility changes a
// message whose receipt was judged o: a current receipt always, one of an
// ended delivery only with applyExpired (Standard queues: SQS applies a
// change made through any receipt of the message, so a timeout of 0 through
// an earlier receipt makes it visible again).
func VisibilityChangeApplies(o stores.ReceiptOutcome, applyExpired bool) bool {
	return o == stores.ReceiptCurrent || endedDelivery(o) && applyExpired
}

// VisibilityTooLong says whether making a message invisible until until
// exceeds the cap of maxSinceReceive after the receive the receipt is of
// (SQS: "12 hours from the time that Amazon SQS receives the ReceiveMessage
// request"), received, or, where that is not known (zero), after the
// message's first receive, firstReceived. A cap of 0 or less is no cap; a
// message never received is not capped.
func VisibilityTooLong(firstReceived, received time.Time, maxSinceReceive time.Duration, until time.Time) bool {
	from := received
	if from.IsZero() {
		from = firstReceived
	}
	return maxSinceReceive > 0 && !from.IsZero() && until.After(from.Add(maxSinceReceive))
}
