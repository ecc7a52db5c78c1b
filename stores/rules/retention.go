package rules

import "time"

// Retained says whether a message sent at sentAt is still kept at now by a
// queue whose retention (MessageRetentionPeriod) is retention: SQS deletes
// messages that have been in the queue longer than that. A retention of 0
// or less keeps messages forever; a message sent after now (a clock that
// went back) is kept.
func Retained(sentAt time.Time, retention time.Duration, now time.Time) bool {
	return retention <= 0 || sentAt.After(now.Add(-retention))
}

// RetentionCutoff is Retained for a store that selects retained messages in
// a set: a message sent at or before the cutoff is gone at now. The zero
// time means there is none (retention 0 or less keeps everything).
// pgstore's SQL computes it from the stored retention too, pinned by its
// TestSQLPinRetention.
func RetentionCutoff(retention time.Duration, now time.Time) time.Time {
	if retention <= 0 {
		return time.Time{}
	}
	return now.Add(-retention)
}

// Expiry is the instant from which a message sent at sentAt is no longer
// Retained; ok is false when the retention keeps it forever.
func Expiry(sentAt time.Time, retention time.Duration) (at time.Time, ok bool) {
	if retention <= 0 {
		return time.Time{}, false
	}
	return sentAt.Add(retention), true
}
