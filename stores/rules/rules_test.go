package rules_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
	"github.com/sluicehq/sluice/stores/rules/rulestest"
)

var t0 = rulestest.T0

func TestJudgeReceipt(t *testing.T) {
	for _, c := range rulestest.ReceiptCases() {
		if got := rules.JudgeReceipt(c.Delivery, c.Token, c.Now); got != c.Want {
			t.Errorf("%s: JudgeReceipt = %v, want %v", c.Name, got, c.Want)
		}
	}
}

func TestReceiptApplies(t *testing.T) {
	cases := []struct {
		o                stores.ReceiptOutcome
		keep, apply      bool
		deletes, changes bool
	}{
		{stores.ReceiptCurrent, false, false, true, true},
		{stores.ReceiptCurrent, true, false, true, true},
		{stores.ReceiptExpired, false, false, true, false},
		{stores.ReceiptExpired, true, true, false, true},
		{stores.ReceiptStale, false, true, false, false},
		{stores.ReceiptEarlier, false, false, true, false},
		{stores.ReceiptEarlier, true, true, false, true},
		{stores.ReceiptGone, false, true, false, false},
	}
	for _, c := range cases {
		if got := rules.DeleteApplies(c.o, c.keep); got != c.deletes {
			t.Errorf("DeleteApplies(%v, keepExpired %v) = %v, want %v", c.o, c.keep, got, c.deletes)
		}
		if got := rules.VisibilityChangeApplies(c.o, c.apply); got != c.changes {
			t.Errorf("VisibilityChangeApplies(%v, applyExpired %v) = %v, want %v", c.o, c.apply, got, c.changes)
		}
	}
}

func TestVisibilityTooLong(t *testing.T) {
	cap := 12 * time.Hour
	later := t0.Add(20 * time.Hour) // a redelivery's receive
	cases := []struct {
		name            string
		first, received time.Time
		cap             time.Duration
		until           time.Time
		want            bool
	}{
		{"well inside", t0, time.Time{}, cap, t0.Add(time.Hour), false},
		{"exactly at the cap", t0, time.Time{}, cap, t0.Add(cap), false},
		{"past the cap", t0, time.Time{}, cap, t0.Add(cap + time.Microsecond), true},
		{"no cap", t0, time.Time{}, 0, t0.Add(100 * cap), false},
		{"never received", time.Time{}, time.Time{}, cap, t0, false},
		{"clock went back", t0, time.Time{}, cap, t0.Add(-time.Hour), false},
		{"from the receipt's receive", t0, later, cap, later.Add(cap), false},
		{"past the receipt's receive's cap", t0, later, cap, later.Add(cap + time.Microsecond), true},
	}
	for _, c := range cases {
		if got := rules.VisibilityTooLong(c.first, c.received, c.cap, c.until); got != c.want {
			t.Errorf("%s: VisibilityTooLong = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestWindows(t *testing.T) {
	for _, c := range rulestest.WindowCases() {
		for name, rule := range map[string]func(time.Time, time.Duration, time.Time) bool{
			"Duplicate": rules.Duplicate, "AttemptInWindow": rules.AttemptInWindow,
			"RecreateRefused": rules.RecreateRefused, "PurgeRefused": rules.PurgeRefused,
		} {
			if got := rule(c.Start, c.Window, c.Now); got != c.Within {
				t.Errorf("%s: %s = %v, want %v", c.Name, name, got, c.Within)
			}
		}
	}
	if rules.PurgeRefused(time.Time{}, time.Minute, t0) {
		t.Error("PurgeRefused of a queue never purged = true, want false")
	}
}

func TestTombstones(t *testing.T) {
	for _, c := range rulestest.TombstoneCases() {
		if got := rules.TombstoneKept(c.Start, c.Now); got != c.Within {
			t.Errorf("%s: TombstoneKept = %v, want %v", c.Name, got, c.Within)
		}
		// The set form drops what is at or before the cutoff.
		if got := c.Start.After(rules.TombstoneCutoff(c.Now)); got != c.Within {
			t.Errorf("%s: deleted after TombstoneCutoff = %v, want %v", c.Name, got, c.Within)
		}
	}
}

func TestRetention(t *testing.T) {
	for _, c := range rulestest.RetentionCases() {
		if got := rules.Retained(c.SentAt, c.Retention, c.Now); got != c.Retained {
			t.Errorf("%s: Retained = %v, want %v", c.Name, got, c.Retained)
		}
		cut := rules.RetentionCutoff(c.Retention, c.Now)
		if got := cut.IsZero() || c.SentAt.After(cut); got != c.Retained {
			t.Errorf("%s: sent after RetentionCutoff %v = %v, want %v", c.Name, cut, got, c.Retained)
		}
	}
}

func TestRedrives(t *testing.T) {
	for _, c := range rulestest.RedriveCases() {
		if got := rules.Redrives(c.Redrive, c.Queue, c.DLQExists, c.Received); got != c.Redrives {
			t.Errorf("%s: Redrives = %v, want %v", c.Name, got, c.Redrives)
		}
		// A store looks the target up only when there is one.
		if c.Redrives && rules.RedriveTarget(c.Redrive, c.Queue) != c.Redrive.QueueName {
			t.Errorf("%s: RedriveTarget = %q, want %q", c.Name, rules.RedriveTarget(c.Redrive, c.Queue), c.Redrive.QueueName)
		}
	}
	if got := rules.RedriveTarget(&stores.Redrive{MaxReceiveCount: 3, QueueName: "src"}, "src"); got != "" {
		t.Errorf("RedriveTarget to the queue itself = %q, want none", got)
	}
}

func TestAttemptReplays(t *testing.T) {
	for _, c := range rulestest.AttemptCases() {
		if got := rules.AttemptReplays(c.CreatedAt, c.Window, c.Token, c.Left, c.Deliveries, c.Now); got != c.Replays {
			t.Errorf("%s: AttemptReplays = %v, want %v", c.Name, got, c.Replays)
		}
	}
}

func TestUpdateQueue(t *testing.T) {
	base := func() *stores.Queue {
		return &stores.Queue{Name: "q", ID: "i", Attributes: map[string]string{"A": "1", "B": "2"},
			Tags: map[string]string{"x": "1"}, Retention: time.Hour, CreatedAt: t0, ModifiedAt: t0, Version: 3}
	}
	now := t0.Add(time.Minute)
	cases := []struct {
		name     string
		p        stores.QueueUpdateParams
		attrs    map[string]string
		tags     map[string]string
		ret      time.Duration
		modified time.Time
	}{
		{"set and remove attributes", stores.QueueUpdateParams{SetAttributes: map[string]string{"A": "9", "B": "", "C": "3"}},
			map[string]string{"A": "9", "C": "3"}, map[string]string{"x": "1"}, time.Hour, now},
		{"tags only: not modified", stores.QueueUpdateParams{SetTags: map[string]string{"y": "2", "x": "0"}, RemoveTags: []string{"x", "none"}},
			map[string]string{"A": "1", "B": "2"}, map[string]string{"y": "2"}, time.Hour, t0},
		{"retention replaced", stores.QueueUpdateParams{Retention: 2 * time.Hour},
			map[string]string{"A": "1", "B": "2"}, map[string]string{"x": "1"}, 2 * time.Hour, now},
		{"nothing: only the version", stores.QueueUpdateParams{IfVersion: 3},
			map[string]string{"A": "1", "B": "2"}, map[string]string{"x": "1"}, time.Hour, t0},
	}
	for _, c := range cases {
		q := base()
		before := base()
		shared := q.Attributes
		if err := rules.UpdateQueue(q, &c.p, now); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !maps.Equal(q.Attributes, c.attrs) || !maps.Equal(q.Tags, c.tags) || q.Retention != c.ret ||
			!q.ModifiedAt.Equal(c.modified) || q.Version != 4 || !q.CreatedAt.Equal(t0) {
			t.Errorf("%s: got %+v", c.name, q)
		}
		if !maps.Equal(shared, before.Attributes) {
			t.Errorf("%s: the map the caller passed in changed: %v", c.name, shared)
		}
	}
	q := base()
	if err := rules.UpdateQueue(q, &stores.QueueUpdateParams{IfVersion: 2, SetAttributes: map[string]string{"A": "9"}}, now); !errors.Is(err, stores.ErrVersionConflict) {
		t.Errorf("stale IfVersion: %v, want ErrVersionConflict", err)
	}
	if q.Attributes["A"] != "1" || q.Version != 3 {
		t.Errorf("a refused update changed the queue: %+v", q)
	}
	empty := &stores.Queue{}
	if err := rules.UpdateQueue(empty, &stores.QueueUpdateParams{SetAttributes: map[string]string{"A": "1"}, SetTags: map[string]string{"t": "v"}}, now); err != nil ||
		empty.Attributes["A"] != "1" || empty.Tags["t"] != "v" {
		t.Errorf("update of a queue without maps: %v, %+v", err, empty)
	}
}

func TestSequenceNumber(t *testing.T) {
	cases := []struct {
		n    uint64
		want string
	}{
		{0, "10000000000000000000"},
		{1, "10000000000000000001"},
		{9, "10000000000000000009"},
		{1 << 62, "14611686018427387904"},
	}
	prev := ""
	for _, c := range cases {
		got := rules.SequenceNumber(c.n)
		if got != c.want || len(got) != 20 {
			t.Errorf("SequenceNumber(%d) = %q, want %q (20 digits)", c.n, got, c.want)
		}
		if strings.Compare(got, prev) <= 0 {
			t.Errorf("SequenceNumber(%d) = %q does not sort after %q", c.n, got, prev)
		}
		prev = got
	}
}

func TestMoveTaskActive(t *testing.T) {
	for status, active := range rulestest.MoveTaskStatuses() {
		if got := rules.MoveTaskActive(status); got != active {
			t.Errorf("MoveTaskActive(%q) = %v, want %v", status, got, active)
		}
	}
	set := rules.ActiveMoveTaskStatuses()
	set[0] = "changed"
	if !rules.MoveTaskActive(stores.MoveTaskRunning) {
		t.Error("changing the slice ActiveMoveTaskStatuses returned changed the rule")
	}
}

// Expiry is where Retained turns false: retained just before it, not at it.
func TestExpiryIsWhereRetainedEnds(t *testing.T) {
	for _, retention := range []time.Duration{time.Minute, 4 * 24 * time.Hour, time.Microsecond} {
		at, ok := rules.Expiry(t0, retention)
		if !ok || !rules.Retained(t0, retention, at.Add(-time.Nanosecond)) || rules.Retained(t0, retention, at) {
			t.Errorf("retention %s: Expiry %v (%v); Retained just before: %v, at it: %v", retention, at, ok,
				rules.Retained(t0, retention, at.Add(-time.Nanosecond)), rules.Retained(t0, retention, at))
		}
	}
	if _, ok := rules.Expiry(t0, 0); ok {
		t.Error("a retention of 0 keeps messages forever, but Expiry gave an instant")
	}
}

func TestFinishedPast(t *testing.T) {
	task := func(h, status string) *stores.MoveTask { return &stores.MoveTask{Handle: h, Status: status} }
	// Newest first; the running and cancelling ones are never dropped, nor
	// counted among the kept.
	tasks := []*stores.MoveTask{task("a", stores.MoveTaskRunning), task("b", stores.MoveTaskCompleted),
		task("c", stores.MoveTaskCancelling), task("d", stores.MoveTaskFailed), task("e", stores.MoveTaskCancelled),
		task("f", stores.MoveTaskCompleted)}
	var got []string
	for _, mt := range rules.FinishedPast(tasks, 2) {
		got = append(got, mt.Handle)
	}
	if want := []string{"e", "f"}; !slices.Equal(got, want) {
		t.Errorf("FinishedPast(…, 2) = %v, want %v", got, want)
	}
	if past := rules.FinishedPast(tasks, 10); len(past) != 0 {
		t.Errorf("FinishedPast(…, 10) = %d tasks, want none", len(past))
	}
}
