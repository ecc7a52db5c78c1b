package rules

import "github.com/sluicehq/sluice/stores"

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
