// Package rulestest holds the cases of the rules in stores/rules, so that
// the rules' own tests and the tests that pin a store's SQL copy of a rule
// run the same table. Times are whole microseconds (PostgreSQL's precision)
// and relative to T0.
package rulestest

import (
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

// T0 is the instant the cases are built around.
var T0 = time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)

const us = time.Microsecond

// ReceiptCase is a receipt (Token) judged at Now against a stored delivery.
type ReceiptCase struct {
	Name     string
	Delivery rules.Delivery
	Token    string
	Now      time.Time
	Want     stores.ReceiptOutcome
}

// ReceiptCases are the cases of rules.JudgeReceipt.
func ReceiptCases() []ReceiptCase {
	inFlight := func(token string, until time.Time) rules.Delivery {
		return rules.Delivery{Found: true, Token: token, VisibleAt: until}
	}
	return []ReceiptCase{
		{"no such message", rules.Delivery{}, "tok", T0, stores.ReceiptGone},
		{"never received", rules.Delivery{Found: true, VisibleAt: T0.Add(-time.Minute)}, "tok", T0, stores.ReceiptStale},
		{"never received, empty receipt token", rules.Delivery{Found: true, VisibleAt: T0.Add(-time.Minute)}, "", T0, stores.ReceiptStale},
		{"received again since", inFlight("newer", T0.Add(time.Minute)), "tok", T0, stores.ReceiptEarlier},
		{"received again since, timed out", inFlight("newer", T0.Add(-time.Minute)), "tok", T0, stores.ReceiptEarlier},
		{"received again since, empty receipt token", inFlight("newer", T0.Add(time.Minute)), "", T0, stores.ReceiptStale},
		{"in flight", inFlight("tok", T0.Add(time.Minute)), "tok", T0, stores.ReceiptCurrent},
		{"one microsecond before the timeout", inFlight("tok", T0.Add(us)), "tok", T0, stores.ReceiptCurrent},
		{"exactly at the timeout", inFlight("tok", T0), "tok", T0, stores.ReceiptExpired},
		{"after the timeout", inFlight("tok", T0.Add(-us)), "tok", T0, stores.ReceiptExpired},
		{"clock went back", inFlight("tok", T0.Add(time.Hour)), "tok", T0.Add(-time.Hour), stores.ReceiptCurrent},
	}
}

// WindowCase is an instant Now against a window of Window from Start.
type WindowCase struct {
	Name   string
	Start  time.Time
	Window time.Duration
	Now    time.Time
	Within bool
}

// span are the boundaries of a window of d from T0: its start, a
// microsecond before and exactly at its end, after it, and a clock that
// went back to before its start.
func span(d time.Duration) []WindowCase {
	return []WindowCase{
		{"at the start", T0, d, T0, true},
		{"one microsecond before the end", T0, d, T0.Add(d - us), true},
		{"exactly at the end", T0, d, T0.Add(d), false},
		{"after the end", T0, d, T0.Add(d + us), false},
		{"clock went back", T0, d, T0.Add(-time.Hour), true},
	}
}

// WindowCases are the cases of the windows: rules.Duplicate,
// rules.AttemptInWindow, rules.RecreateRefused, rules.PurgeRefused (with a
// Start that is not zero).
func WindowCases() []WindowCase {
	return append(span(5*time.Minute),
		WindowCase{"zero window", T0, 0, T0, false},
		WindowCase{"zero window, later", T0, 0, T0.Add(us), false},
		WindowCase{"zero window, clock went back", T0, 0, T0.Add(-us), true},
	)
}

// TombstoneCases are WindowCases of rules.TombstoneKept: Window is
// rules.TombstoneTTL.
func TombstoneCases() []WindowCase { return span(rules.TombstoneTTL) }

// RetentionCase is a message sent at SentAt, at Now, in a queue that
// retains messages for Retention.
type RetentionCase struct {
	Name      string
	Retention time.Duration
	SentAt    time.Time
	Now       time.Time
	Retained  bool
}

// RetentionCases are the cases of rules.Retained and rules.RetentionCutoff:
// a retention is a window from the send.
func RetentionCases() []RetentionCase {
	var cs []RetentionCase
	for _, w := range span(time.Hour) {
		cs = append(cs, RetentionCase{w.Name, w.Window, w.Start, w.Now, w.Within})
	}
	return append(cs,
		RetentionCase{"no retention", 0, T0, T0.Add(10000 * time.Hour), true},
		RetentionCase{"no retention, clock went back", 0, T0, T0.Add(-time.Hour), true},
	)
}

// RedriveCase is a message received Received times already, claimed from
// Queue under Redrive, whose dead-letter queue exists or not.
type RedriveCase struct {
	Name      string
	Redrive   *stores.Redrive
	Queue     string
	DLQExists bool
	Received  int
	Redrives  bool
}

// RedriveCases are the cases of rules.Redrives (Queue is "src", the
// dead-letter queue "dlq").
func RedriveCases() []RedriveCase {
	to := func(n int, q string) *stores.Redrive { return &stores.Redrive{MaxReceiveCount: n, QueueName: q} }
	return []RedriveCase{
		{"no policy", nil, "src", true, 9, false},
		{"below the count", to(3, "dlq"), "src", true, 2, false},
		{"at the count", to(3, "dlq"), "src", true, 3, true},
		{"above the count", to(3, "dlq"), "src", true, 4, true},
		{"count of one, never received", to(1, "dlq"), "src", true, 0, false},
		{"count of one, received once", to(1, "dlq"), "src", true, 1, true},
		{"count of zero", to(0, "dlq"), "src", true, 9, false},
		{"dead-letter queue is gone", to(3, "dlq"), "src", false, 9, false},
		{"dead-letter queue is the queue", to(3, "src"), "src", true, 9, false},
	}
}

// AttemptCase is a receive repeated at Now with the attempt id of a claim
// made at CreatedAt under Token, whose messages are now Deliveries.
type AttemptCase struct {
	Name       string
	CreatedAt  time.Time
	Window     time.Duration
	Token      string
	Deliveries []rules.Delivery
	Now        time.Time
	Replays    bool
	Left       []time.Time // where the claim left each message's visibility; nil: not kept
}

// AttemptCases are the cases of rules.AttemptReplays.
func AttemptCases() []AttemptCase {
	w := 5 * time.Minute
	held := rules.Delivery{Found: true, Token: "tok", VisibleAt: T0.Add(time.Hour)}
	return []AttemptCase{
		{"all still held", T0, w, "tok", []rules.Delivery{held, held}, T0.Add(time.Minute), true, nil},
		{"one microsecond before the window ends", T0, w, "tok", []rules.Delivery{held}, T0.Add(w - us), true, nil},
		{"exactly at the window's end", T0, w, "tok", []rules.Delivery{held}, T0.Add(w), false, nil},
		{"zero window", T0, 0, "tok", []rules.Delivery{held}, T0, false, nil},
		{"clock went back", T0, w, "tok", []rules.Delivery{held}, T0.Add(-time.Minute), true, nil},
		{"returned nothing", T0, w, "tok", nil, T0, false, nil},
		{"one deleted", T0, w, "tok", []rules.Delivery{held, {}}, T0, false, nil},
		{"one received again", T0, w, "tok", []rules.Delivery{held, {Found: true, Token: "other", VisibleAt: T0.Add(time.Hour)}}, T0, false, nil},
		{"one timed out", T0, w, "tok", []rules.Delivery{held, {Found: true, Token: "tok", VisibleAt: T0.Add(time.Minute)}}, T0.Add(time.Minute), false, nil},
		{"one moved (visible, no token)", T0, w, "tok", []rules.Delivery{held, {Found: true, VisibleAt: T0}}, T0, false, nil},
		{"both where the claim left them", T0, w, "tok", []rules.Delivery{held, held}, T0.Add(time.Minute), true,
			[]time.Time{held.VisibleAt, held.VisibleAt}},
		{"one's visibility changed since", T0, w, "tok", []rules.Delivery{held, {Found: true, Token: "tok", VisibleAt: T0.Add(2 * time.Hour)}},
			T0.Add(time.Minute), false, []time.Time{held.VisibleAt, held.VisibleAt}},
		{"changed by a microsecond", T0, w, "tok", []rules.Delivery{held}, T0.Add(time.Minute), false,
			[]time.Time{held.VisibleAt.Add(us)}},
	}
}

// MoveTaskStatuses are every status a move task has, and whether it is
// active.
func MoveTaskStatuses() map[string]bool {
	return map[string]bool{
		stores.MoveTaskRunning:    true,
		stores.MoveTaskCancelling: true,
		stores.MoveTaskCompleted:  false,
		stores.MoveTaskCancelled:  false,
		stores.MoveTaskFailed:     false,
		"":                        false,
	}
}
