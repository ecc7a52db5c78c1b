package rules

import (
	"time"

	"github.com/sluicehq/sluice/stores"
)

// RedriveTarget is the dead-letter queue that a claim on queue under the
// redrive policy r may move messages to, or "" when r moves nothing: no
// policy, a MaxReceiveCount of 0 or less, or a dead-letter queue that is
// the queue itself. Whether a message moves is Redrives.
func RedriveTarget(r *stores.Redrive, queue string) string {
	if r == nil || r.MaxReceiveCount <= 0 || r.QueueName == queue {
		return ""
	}
	return r.QueueName
}

// Redrives says whether a claim on queue moves a message that was received
// `received` times already to the dead-letter queue instead of returning
// it: SQS moves a message once it was received maxReceiveCount times, when
// the dead-letter queue (RedriveTarget) exists (dlqExists); a policy naming
// a queue that is gone moves nothing.
// pgstore compares receive counts in SQL (standardClaimSQL,
// sluice_fifo_claim), pinned by its TestSQLPinRedrive.
func Redrives(r *stores.Redrive, queue string, dlqExists bool, received int) bool {
	return RedriveTarget(r, queue) != "" && dlqExists && received >= r.MaxReceiveCount
}

// DeadLettered is the deduplication ID and enqueue time (SentAt) of a
// message with MessageId id once a redrive moved it into a dead-letter
// queue. A Standard message keeps both: SQS counts a dead letter's retention
// from its first send. A FIFO message is enqueued anew: sent at now, so the
// dead-letter queue's retention counts from the move, with its MessageId as
// deduplication ID, so that dead letters which shared one stay apart.
// pgstore states it in SQL (moveSQL), which the conformance suite's
// DeadLetter/FIFOEnqueuedAnew holds to it.
func DeadLettered(fifo bool, id, dedupID string, sentAt, now time.Time) (string, time.Time) {
	if !fifo {
		return dedupID, sentAt
	}
	return id, now
}
