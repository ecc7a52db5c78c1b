package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/rules"
)

var (
	ctx = context.Background()
	t0  = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

func at(d time.Duration) time.Time { return t0.Add(d) }

const sec = time.Second

// fixture is an engine with a recorder that checks, after every operation,
// that the change lists describe the engine's state exactly and that every
// index is consistent.
type fixture struct {
	t   *testing.T
	e   *Engine
	rec *recorder
}

func newFixture(t *testing.T) *fixture {
	r := newRecorder()
	return &fixture{t: t, e: New(r), rec: r}
}

func (f *fixture) check() {
	f.t.Helper()
	checkInvariants(f.t, f.e)
	sameState(f.t, f.e, f.rec)
}

func (f *fixture) queue(name string, fifo bool) *stores.Queue {
	f.t.Helper()
	res, err := f.e.QueueCreate(ctx, &stores.QueueCreateParams{
		Queue: &stores.Queue{Name: name, ID: name + "-id", FIFO: fifo, Retention: 4 * 24 * time.Hour,
			Attributes: map[string]string{"VisibilityTimeout": "30"}},
		Now: t0,
	})
	if err != nil || !res.Created {
		f.t.Fatalf("create %s: %v %+v", name, err, res)
	}
	f.check()
	return res.Queue
}

type sendOpt struct {
	group, dedup, scope string
	delay               time.Duration
}

func (f *fixture) send(queue string, now time.Time, ids ...string) []stores.SendResult {
	f.t.Helper()
	return f.sendOpts(queue, now, sendOpt{}, ids...)
}

func (f *fixture) sendOpts(queue string, now time.Time, o sendOpt, ids ...string) []stores.SendResult {
	f.t.Helper()
	var msgs []stores.NewMessage
	for _, id := range ids {
		d := o.dedup
		if d == "" {
			d = id
		}
		msgs = append(msgs, stores.NewMessage{ID: id, Body: "body of " + id, GroupID: o.group, DedupID: d, DedupScope: o.scope, Delay: o.delay})
	}
	res, err := f.e.MessageSend(ctx, &stores.MessageSendParams{QueueName: queue, Messages: msgs, DedupWindow: 5 * time.Minute, Now: now})
	if err != nil {
		f.t.Fatalf("send: %v", err)
	}
	f.check()
	return res.Results
}

// sendGroups sends messages "g:n" to their groups, one by one in order.
func (f *fixture) sendGroups(queue string, now time.Time, ids ...string) {
	f.t.Helper()
	for _, id := range ids {
		f.sendOpts(queue, now, sendOpt{group: id[:1]}, id)
	}
}

type claimOpt struct {
	vt      time.Duration
	attempt string
	redrive *stores.Redrive
}

func (f *fixture) claim(queue string, now time.Time, max int, token string, o claimOpt) *stores.MessageClaimResult {
	f.t.Helper()
	if o.vt == 0 {
		o.vt = 30 * sec
	}
	res, err := f.e.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: queue, Max: max, VisibilityTimeout: o.vt,
		Token: token, AttemptID: o.attempt, AttemptWindow: 5 * time.Minute, Redrive: o.redrive, Now: now})
	if err != nil {
		f.t.Fatalf("claim: %v", err)
	}
	f.check()
	return res
}

func ids(res *stores.MessageClaimResult) []string {
	out := []string{}
	for _, m := range res.Messages {
		out = append(out, m.ID)
	}
	return out
}

// sentAs names claimed messages by the id they were sent with (their body
// says it), which a move does not keep.
func sentAs(res *stores.MessageClaimResult) []string {
	out := []string{}
	for _, m := range res.Messages {
		out = append(out, strings.TrimPrefix(m.Body, "body of "))
	}
	return out
}

func (f *fixture) claimIDs(queue string, now time.Time, max int, token string) []string {
	f.t.Helper()
	return ids(f.claim(queue, now, max, token, claimOpt{}))
}

func (f *fixture) del(queue, id, token string, now time.Time) stores.ReceiptOutcome {
	f.t.Helper()
	outs, err := f.e.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: queue, Receipts: []stores.Receipt{{MessageID: id, Token: token}}, Now: now})
	if err != nil {
		f.t.Fatal(err)
	}
	f.check()
	if len(outs.Outcomes) != 1 {
		f.t.Fatalf("delete: %d outcomes for one receipt", len(outs.Outcomes))
	}
	return outs.Outcomes[0]
}

func (f *fixture) stats(queue string, now time.Time) stores.QueueStats {
	f.t.Helper()
	st, err := f.e.QueueStats(ctx, &stores.QueueStatsParams{Name: queue, Now: now})
	if err != nil {
		f.t.Fatal(err)
	}
	f.check()
	return *st
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// ---- queues

func TestQueueLifecycle(t *testing.T) {
	f := newFixture(t)
	q := f.queue("alpha", false)
	eq(t, "version", q.Version, int64(1))
	eq(t, "created", q.CreatedAt, t0)

	// Existing name: unchanged, Created false.
	res, err := f.e.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: "alpha", ID: "other"}, Now: at(sec)})
	if err != nil || res.Created || res.Queue.ID != "alpha-id" || res.Queue.Attributes["VisibilityTimeout"] != "30" {
		t.Fatalf("re-create: %v %+v", err, res)
	}
	f.queue("beta", false)
	f.queue("alphabet", true)
	f.queue("gamma", false)

	list := func(p stores.QueueListParams) []string {
		qs, err := f.e.QueueList(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, q := range qs {
			out = append(out, q.Name)
		}
		return out
	}
	eq(t, "all", list(stores.QueueListParams{}), []string{"alpha", "alphabet", "beta", "gamma"})
	eq(t, "prefix", list(stores.QueueListParams{Prefix: "alpha"}), []string{"alpha", "alphabet"})
	eq(t, "after", list(stores.QueueListParams{After: "alpha"}), []string{"alphabet", "beta", "gamma"})
	eq(t, "prefix+after", list(stores.QueueListParams{Prefix: "alpha", After: "alpha"}), []string{"alphabet"})
	eq(t, "limit", list(stores.QueueListParams{After: "alphabet", Limit: 1}), []string{"beta"})
	eq(t, "none", list(stores.QueueListParams{Prefix: "zeta"}), []string{})

	// Update: version guard, attributes, tags, retention.
	_, err = f.e.QueueUpdate(ctx, &stores.QueueUpdateParams{Name: "alpha", IfVersion: 7, SetAttributes: map[string]string{"A": "1"}})
	if !errors.Is(err, stores.ErrVersionConflict) {
		t.Fatalf("want version conflict, got %v", err)
	}
	_, err = f.e.QueueUpdate(ctx, &stores.QueueUpdateParams{Name: "alpha", ID: "wrong", SetTags: map[string]string{"t": "1"}})
	if !errors.Is(err, stores.ErrQueueNotFound) {
		t.Fatalf("want not found, got %v", err)
	}
	u, err := f.e.QueueUpdate(ctx, &stores.QueueUpdateParams{Name: "alpha", ID: "alpha-id", IfVersion: 1,
		SetAttributes: map[string]string{"DelaySeconds": "5", "VisibilityTimeout": ""}, SetTags: map[string]string{"team": "x", "env": "y"},
		Retention: time.Hour, Now: at(10 * sec)})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "attrs", u.Attributes, map[string]string{"DelaySeconds": "5"})
	eq(t, "tags", u.Tags, map[string]string{"team": "x", "env": "y"})
	eq(t, "version", u.Version, int64(2))
	eq(t, "modified", u.ModifiedAt, at(10*sec))
	eq(t, "retention", u.Retention, time.Hour)
	u, err = f.e.QueueUpdate(ctx, &stores.QueueUpdateParams{Name: "alpha", RemoveTags: []string{"env"}, Now: at(20 * sec)})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "tags", u.Tags, map[string]string{"team": "x"})
	eq(t, "version", u.Version, int64(3))
	eq(t, "modified unchanged by tags", u.ModifiedAt, at(10*sec))
	f.check()

	// Returned values are copies.
	u.Attributes["DelaySeconds"] = "99"
	u.Tags["team"] = "changed"
	g, _ := f.e.QueueGet(ctx, &stores.QueueGetParams{Name: "alpha"})
	eq(t, "copy attrs", g.Attributes["DelaySeconds"], "5")
	eq(t, "copy tags", g.Tags["team"], "x")

	if _, err := f.e.QueueGet(ctx, &stores.QueueGetParams{Name: "nope"}); !errors.Is(err, stores.ErrQueueNotFound) {
		t.Fatalf("get missing: %v", err)
	}
}

func TestRecreateCooldown(t *testing.T) {
	f := newFixture(t)
	f.queue("q", true)
	f.sendOpts("q", t0, sendOpt{group: "g"}, "m1")
	if err := f.e.QueueDelete(ctx, &stores.QueueDeleteParams{Name: "q", ID: "bad", Now: at(sec)}); !errors.Is(err, stores.ErrQueueNotFound) {
		t.Fatalf("delete with wrong id: %v", err)
	}
	if err := f.e.QueueDelete(ctx, &stores.QueueDeleteParams{Name: "q", ID: "q-id", Now: at(10 * sec)}); err != nil {
		t.Fatal(err)
	}
	f.check()
	create := func(now time.Time) error {
		_, err := f.e.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: "q", ID: "q2", FIFO: true},
			RecreateCooldown: 60 * sec, Now: now})
		f.check()
		return err
	}
	if err := create(at(69 * sec)); !errors.Is(err, stores.ErrQueueDeletedRecently) {
		t.Fatalf("inside cooldown: %v", err)
	}
	if err := create(at(70 * sec)); err != nil {
		t.Fatalf("after cooldown: %v", err)
	}
	// The new incarnation starts empty, with no dedup markers.
	st := f.stats("q", at(70*sec))
	eq(t, "stats", st, stores.QueueStats{})
	r := f.sendOpts("q", at(71*sec), sendOpt{group: "g"}, "m1")
	eq(t, "not a duplicate", r[0].Duplicate, false)
	// An old-incarnation id guard fails.
	if _, err := f.e.QueueStats(ctx, &stores.QueueStatsParams{Name: "q", ID: "q-id"}); !errors.Is(err, stores.ErrQueueNotFound) {
		t.Fatalf("old incarnation: %v", err)
	}
}

// ---- send, sequence numbers, dedup

func TestSequenceAndDedup(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	r := f.sendOpts("q.fifo", t0, sendOpt{group: "g"}, "a", "b")
	eq(t, "seq a", r[0].SequenceNumber, "10000000000000000000")
	eq(t, "seq b", r[1].SequenceNumber, "10000000000000000001")
	for _, x := range r {
		if len(x.SequenceNumber) != 20 || x.Duplicate {
			t.Fatalf("bad result %+v", x)
		}
	}

	// Same dedup id within a batch: the second echoes the first.
	r = f.sendOpts("q.fifo", at(sec), sendOpt{group: "g", dedup: "D"}, "c", "d")
	eq(t, "batch dup", r[1], stores.SendResult{MessageID: "c", SequenceNumber: r[0].SequenceNumber, Duplicate: true})
	eq(t, "stored", f.stats("q.fifo", at(sec)).Visible, int64(3))

	// Echo after the original was received and deleted.
	got := f.claim("q.fifo", at(2*sec), 10, "T", claimOpt{})
	eq(t, "claimed", ids(got), []string{"a", "b", "c"})
	for _, m := range got.Messages {
		eq(t, "delete", f.del("q.fifo", m.ID, "T", at(3*sec)), stores.ReceiptCurrent)
	}
	r = f.sendOpts("q.fifo", at(4*sec), sendOpt{group: "other", dedup: "D"}, "e")
	eq(t, "echo after delete", r[0], stores.SendResult{MessageID: "c", SequenceNumber: "10000000000000000002", Duplicate: true})
	eq(t, "nothing stored", f.stats("q.fifo", at(4*sec)), stores.QueueStats{})

	// Scopes partition dedup ids (per-group dedup).
	r = f.sendOpts("q.fifo", at(5*sec), sendOpt{group: "g1", dedup: "S", scope: "g1"}, "s1")
	r2 := f.sendOpts("q.fifo", at(5*sec), sendOpt{group: "g2", dedup: "S", scope: "g2"}, "s2")
	if r[0].Duplicate || r2[0].Duplicate {
		t.Fatal("different scopes deduplicated")
	}

	// The window: a marker 5 minutes old no longer applies.
	r = f.sendOpts("q.fifo", at(sec+5*time.Minute-1), sendOpt{group: "g", dedup: "D"}, "x")
	eq(t, "still dup", r[0].Duplicate, true)
	r = f.sendOpts("q.fifo", at(sec+5*time.Minute), sendOpt{group: "g", dedup: "D"}, "y")
	eq(t, "window over", r[0], stores.SendResult{MessageID: "y", SequenceNumber: "10000000000000000005"})

	// Standard queues have no sequence numbers and no dedup.
	f.queue("std", false)
	r = f.sendOpts("std", t0, sendOpt{dedup: "same"}, "1", "2")
	eq(t, "std", r, []stores.SendResult{{MessageID: "1"}, {MessageID: "2"}})
}

// A marker that no longer dedups under a shorter window, though it has not
// expired, is replaced by the next send of its id: the change lists delete
// the old record (its key holds when it was written) and put the new one.
func TestDedupMarkerReplacedUnderAShorterWindow(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.sendOpts("q.fifo", t0, sendOpt{group: "g", dedup: "D"}, "a")
	res, err := f.e.MessageSend(ctx, &stores.MessageSendParams{QueueName: "q.fifo", DedupWindow: time.Minute, Now: at(2 * time.Minute),
		Messages: []stores.NewMessage{{ID: "b", Body: "b", GroupID: "g", DedupID: "D"}}})
	if err != nil || res.Results[0].Duplicate {
		t.Fatalf("send under a 1-minute window two minutes later: %+v %v, want stored", res, err)
	}
	f.check()
	var markers []string
	for _, r := range f.rec.records() {
		if d, ok := r.(*DedupRecord); ok {
			markers = append(markers, d.MessageID)
		}
	}
	eq(t, "markers of D", markers, []string{"b"})
}

func TestDedupMarkersExpireInMaintain(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.sendOpts("q.fifo", t0, sendOpt{group: "g"}, "a")
	if err := f.e.Maintain(ctx, &stores.MaintainParams{Now: at(5 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	f.check()
	for _, r := range f.rec.records() {
		if r.Kind() == KindDedup {
			t.Fatalf("marker survived: %+v", r)
		}
	}
}

// ---- FIFO claims

func TestFIFOGroupsAndRuns(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.sendGroups("q.fifo", t0, "A1", "B1", "A2", "C1", "B2", "A3")

	// Groups in the order of their heads; from each a contiguous run.
	eq(t, "first", f.claimIDs("q.fifo", at(sec), 4, "T1"), []string{"A1", "A2", "A3", "B1"})
	// A and B are blocked (B2 is visible but B1 is in flight); C is free.
	eq(t, "second", f.claimIDs("q.fifo", at(sec), 10, "T2"), []string{"C1"})
	eq(t, "blocked", f.claimIDs("q.fifo", at(2*sec), 10, "T3"), []string{})
	eq(t, "stats", f.stats("q.fifo", at(2*sec)), stores.QueueStats{Visible: 1, InFlight: 5})

	// A visibility reset of the head makes it receivable while later
	// members are still in flight: the run from the head stops at them.
	cv, err := f.e.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: "q.fifo", MessageID: "A1", Token: "T1", Now: at(3 * sec)})
	if err != nil || cv.Outcome != stores.ReceiptCurrent {
		t.Fatal(err, cv)
	}
	f.check()
	eq(t, "A head only", f.claimIDs("q.fifo", at(3*sec), 10, "T4"), []string{"A1"})

	// Deleting B1 frees B.
	eq(t, "del B1", f.del("q.fifo", "B1", "T1", at(4*sec)), stores.ReceiptCurrent)
	eq(t, "B2", f.claimIDs("q.fifo", at(4*sec), 10, "T5"), []string{"B2"})

	// A2 and A3 are visible again at 31s but stay behind A1 (until 33s).
	eq(t, "A held by its head", f.claimIDs("q.fifo", at(31*sec), 10, "T6"), []string{"C1"})
	res := f.claim("q.fifo", at(33*sec), 10, "T7", claimOpt{})
	eq(t, "A again", ids(res), []string{"A1", "A2", "A3"})
	for i, m := range res.Messages {
		eq(t, "rc "+m.ID, m.ReceiveCount, []int{3, 2, 2}[i])
		eq(t, "token", m.Token, "T7")
		eq(t, "first received", m.FirstReceivedAt, at(sec))
	}
	eq(t, "next change", res.NextChange, at(34*sec)) // B2 until 4+30
}

func TestFIFOExtendMiddle(t *testing.T) {
	// Extending one member hides it and every later member of its group;
	// earlier ones come back when their own timeout ends.
	for pos, want := range [][]string{{}, {"m0"}, {"m0", "m1"}} {
		f := newFixture(t)
		f.queue("q.fifo", true)
		f.sendOpts("q.fifo", t0, sendOpt{group: "g"}, "m0", "m1", "m2")
		got := f.claim("q.fifo", t0, 5, "T", claimOpt{vt: 2 * sec})
		eq(t, "all", ids(got), []string{"m0", "m1", "m2"})
		_, err := f.e.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: "q.fifo",
			MessageID: got.Messages[pos].ID, Token: "T", Timeout: 8 * sec, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		eq(t, fmt.Sprint("extended ", pos), f.claimIDs("q.fifo", at(5*sec), 5, "U"), want)
	}
}

func TestFIFORunStopsAtDelayed(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.sendOpts("q.fifo", t0, sendOpt{group: "A"}, "A1")
	f.sendOpts("q.fifo", t0, sendOpt{group: "A", delay: 10 * sec}, "A2")
	f.sendOpts("q.fifo", t0, sendOpt{group: "A"}, "A3")
	f.sendOpts("q.fifo", t0, sendOpt{group: "B", delay: 10 * sec}, "B1")
	f.sendOpts("q.fifo", t0, sendOpt{group: "B"}, "B2")
	eq(t, "stats", f.stats("q.fifo", t0), stores.QueueStats{Visible: 3, Delayed: 2})
	res := f.claim("q.fifo", t0, 10, "T", claimOpt{})
	eq(t, "run stops at A2; B's head is delayed", ids(res), []string{"A1"})
	eq(t, "next change", res.NextChange, at(10*sec))
	f.del("q.fifo", "A1", "T", at(sec))
	eq(t, "A2 still delayed", f.claimIDs("q.fifo", at(sec), 10, "T"), []string{})
	eq(t, "later", f.claimIDs("q.fifo", at(10*sec), 10, "T2"), []string{"A2", "A3", "B1", "B2"})
}

func TestFIFOVisibilityZeroAndSameClaim(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.sendGroups("q.fifo", t0, "A1", "A2")
	// A zero visibility timeout leaves the messages visible; one claim still
	// returns each message once.
	res, err := f.e.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: "q.fifo", Max: 10, Token: "T", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	f.check()
	eq(t, "once", ids(res), []string{"A1", "A2"})
	eq(t, "again", f.claimIDs("q.fifo", t0, 10, "U"), []string{"A1", "A2"})
}

func TestStandardOldestFirstAndGroupsIgnored(t *testing.T) {
	f := newFixture(t)
	f.queue("std", false)
	f.sendOpts("std", t0, sendOpt{group: "g"}, "m1", "m2")
	f.sendOpts("std", at(sec), sendOpt{delay: 5 * sec}, "m3")
	f.sendOpts("std", at(2*sec), sendOpt{group: "g"}, "m4")
	eq(t, "first", f.claimIDs("std", at(2*sec), 1, "T"), []string{"m1"})
	// Fair-queue groups do not block: m2 comes although m1 of its group is in flight.
	eq(t, "second", f.claimIDs("std", at(2*sec), 1, "T"), []string{"m2"})
	eq(t, "rest", f.claimIDs("std", at(6*sec), 10, "T"), []string{"m3", "m4"})
	// m1 times out and comes back before newer messages.
	f.send("std", at(40*sec), "m5")
	eq(t, "after timeout", f.claimIDs("std", at(40*sec), 10, "T"), []string{"m1", "m2", "m3", "m4", "m5"})
}

// ---- receive attempt ids

func TestAttemptReplay(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.sendGroups("q.fifo", t0, "A1", "A2", "B1")
	first := f.claim("q.fifo", at(sec), 2, "T1", claimOpt{attempt: "X"})
	eq(t, "first", ids(first), []string{"A1", "A2"})

	// Same attempt id: same messages and token, visibility restarts, receive
	// count unchanged.
	again := f.claim("q.fifo", at(20*sec), 10, "T2", claimOpt{attempt: "X"})
	eq(t, "replayed", ids(again), []string{"A1", "A2"})
	for _, m := range again.Messages {
		eq(t, "token", m.Token, "T1")
		eq(t, "rc", m.ReceiveCount, 1)
	}
	eq(t, "visibility restarted", f.claimIDs("q.fifo", at(45*sec), 10, "T3"), []string{"B1"})

	// Once the messages are no longer held (timed out at 50s), the same
	// attempt id claims anew.
	res := f.claim("q.fifo", at(51*sec), 10, "T4", claimOpt{attempt: "X"})
	eq(t, "fresh claim", ids(res), []string{"A1", "A2"})
	for _, m := range res.Messages {
		eq(t, "token", m.Token, "T4")
		eq(t, "rc", m.ReceiveCount, 2)
	}
	// A deleted message breaks the replay too.
	f.del("q.fifo", "A1", "T4", at(52*sec))
	res = f.claim("q.fifo", at(53*sec), 10, "T5", claimOpt{attempt: "X"})
	eq(t, "after delete", ids(res), []string{}) // A2 in flight blocks A; B1 in flight
	// The window: an attempt older than 5 minutes is not replayed.
	f.sendGroups("q.fifo", at(54*sec), "C1")
	r1 := f.claim("q.fifo", at(55*sec), 10, "T6", claimOpt{attempt: "Y", vt: time.Hour})
	eq(t, "C1", ids(r1), []string{"C1"})
	r2 := f.claim("q.fifo", at(55*sec+5*time.Minute), 10, "T7", claimOpt{attempt: "Y"})
	// B1 came back at 75s, A2 at 81s: B first.
	eq(t, "expired attempt: a fresh claim", ids(r2), []string{"B1", "A2"})
	eq(t, "fresh token", r2.Messages[0].Token, "T7")
}

// ---- redrive

func TestRedriveInClaim(t *testing.T) {
	f := newFixture(t)
	f.queue("src", false)
	f.queue("dlq.fifo", true)
	rd := &stores.Redrive{MaxReceiveCount: 2, QueueName: "dlq.fifo"}
	f.send("src", t0, "m1", "m2")
	eq(t, "r1", ids(f.claim("src", at(sec), 1, "T1", claimOpt{redrive: rd})), []string{"m1"})
	eq(t, "r1b", ids(f.claim("src", at(sec), 1, "T1", claimOpt{redrive: rd})), []string{"m2"})
	eq(t, "r2", ids(f.claim("src", at(40*sec), 10, "T2", claimOpt{redrive: rd})), []string{"m1", "m2"})
	f.send("src", at(41*sec), "m3")
	// Third receive: m1 and m2 are moved, m3 is returned.
	got := f.claim("src", at(80*sec), 10, "T3", claimOpt{redrive: rd})
	eq(t, "r3", ids(got), []string{"m3"})
	eq(t, "redriven reported", got.Redriven, 2)
	eq(t, "src stats", f.stats("src", at(80*sec)), stores.QueueStats{InFlight: 1})
	eq(t, "dlq stats", f.stats("dlq.fifo", at(80*sec)), stores.QueueStats{Visible: 2})
	// The old receipt is gone.
	eq(t, "old receipt", f.del("src", "m1", "T2", at(80*sec)), stores.ReceiptGone)

	d := f.claim("dlq.fifo", at(81*sec), 10, "D", claimOpt{})
	eq(t, "dlq", ids(d), []string{"m1", "m2"})
	m := d.Messages[0]
	eq(t, "rc kept and incremented", m.ReceiveCount, 3)
	eq(t, "first received kept", m.FirstReceivedAt, at(sec))
	// A FIFO dead-letter queue enqueues it anew (a Standard one keeps
	// both: the conformance case DeadLetter/MessageAttributesKept).
	eq(t, "sent at the move", m.SentAt, at(80*sec))
	eq(t, "dedup id is the MessageId", m.DedupID, "m1")
	eq(t, "source", m.DeadLetterSource, "src")
	eq(t, "seq in dlq", m.SequenceNumber, "10000000000000000000")
	eq(t, "body", m.Body, "body of m1")

	// A missing dead-letter queue: delivered normally.
	rd2 := &stores.Redrive{MaxReceiveCount: 1, QueueName: "nowhere"}
	eq(t, "no dlq", ids(f.claim("src", at(200*sec), 10, "T4", claimOpt{redrive: rd2})), []string{"m3"})
}

func TestRedriveFIFOHeadUnblocks(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.queue("dlq", false)
	rd := &stores.Redrive{MaxReceiveCount: 1, QueueName: "dlq"}
	f.sendGroups("q.fifo", t0, "A1")
	eq(t, "first", ids(f.claim("q.fifo", t0, 10, "T", claimOpt{redrive: rd})), []string{"A1"})
	f.sendGroups("q.fifo", at(sec), "A2", "A3")
	got := f.claim("q.fifo", at(31*sec), 10, "U", claimOpt{redrive: rd})
	eq(t, "head moved, run continues", ids(got), []string{"A2", "A3"})
	d := f.claim("dlq", at(31*sec), 10, "D", claimOpt{})
	eq(t, "in dlq", ids(d), []string{"A1"})
	eq(t, "no seq on standard dlq", d.Messages[0].SequenceNumber, "")
	eq(t, "group kept", d.Messages[0].GroupID, "A")
}

// ---- receipts

func TestReceiptOutcomes(t *testing.T) {
	f := newFixture(t)
	f.queue("q", false)
	f.send("q", t0, "m")
	f.claimIDs("q", t0, 1, "T1")
	cv := func(token string, now time.Time, timeout time.Duration, applyExpired bool) stores.MessageChangeVisibilityResult {
		t.Helper()
		r, err := f.e.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: "q", MessageID: "m", Token: token,
			Timeout: timeout, MaxSinceReceive: 12 * time.Hour, ApplyExpired: applyExpired, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		f.check()
		return *r
	}
	eq(t, "current", cv("T1", at(10*sec), 60*sec, false), stores.MessageChangeVisibilityResult{Outcome: stores.ReceiptCurrent})
	eq(t, "still in flight at 69s", f.claimIDs("q", at(69*sec), 1, "X"), []string{})
	eq(t, "too long", cv("T1", at(11*time.Hour), 2*time.Hour, false), stores.MessageChangeVisibilityResult{Outcome: stores.ReceiptExpired})
	eq(t, "expired, applied", cv("T1", at(11*time.Hour), 2*time.Hour, true), stores.MessageChangeVisibilityResult{Outcome: stores.ReceiptExpired, TooLong: true})
	eq(t, "expired, applied", cv("T1", at(11*time.Hour), time.Hour-1, true), stores.MessageChangeVisibilityResult{Outcome: stores.ReceiptExpired})
	eq(t, "in flight again", f.stats("q", at(11*time.Hour)), stores.QueueStats{InFlight: 1})
	eq(t, "visible now", cv("T1", at(11*time.Hour+sec), 0, false), stores.MessageChangeVisibilityResult{Outcome: stores.ReceiptCurrent, Earlier: true})
	eq(t, "visible", f.stats("q", at(11*time.Hour+sec)), stores.QueueStats{Visible: 1})

	// Expired: delete keeps with KeepExpired, deletes without.
	outs, _ := f.e.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: "q", Receipts: []stores.Receipt{{MessageID: "m", Token: "T1"}}, KeepExpired: true, Now: at(12 * time.Hour)})
	eq(t, "keep expired", outs.Outcomes, []stores.ReceiptOutcome{stores.ReceiptExpired})
	eq(t, "kept", f.stats("q", at(12*time.Hour)).Visible, int64(1))

	// Earlier after another receive: applied only as an expired one is.
	f.claimIDs("q", at(12*time.Hour), 1, "T2")
	eq(t, "earlier cv, not applied", cv("T1", at(12*time.Hour), 0, false).Outcome, stores.ReceiptEarlier)
	outs, _ = f.e.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: "q", Receipts: []stores.Receipt{{MessageID: "m", Token: "T1"}}, KeepExpired: true, Now: at(12 * time.Hour)})
	eq(t, "earlier delete, kept", outs.Outcomes, []stores.ReceiptOutcome{stores.ReceiptEarlier})
	eq(t, "forged", f.del("q", "m", "", at(12*time.Hour)), stores.ReceiptStale)
	eq(t, "still there", f.stats("q", at(12*time.Hour)).InFlight, int64(1))
	eq(t, "earlier cv, applied", cv("T1", at(12*time.Hour), 0, true), stores.MessageChangeVisibilityResult{Outcome: stores.ReceiptEarlier, Earlier: true})
	eq(t, "visible through the earlier receipt", f.stats("q", at(12*time.Hour)), stores.QueueStats{Visible: 1})
	eq(t, "current again", cv("T2", at(12*time.Hour), 30*time.Minute, true).Outcome, stores.ReceiptExpired)
	eq(t, "expired delete", f.del("q", "m", "T2", at(13*time.Hour)), stores.ReceiptExpired)
	eq(t, "gone", f.del("q", "m", "T2", at(13*time.Hour)), stores.ReceiptGone)
	eq(t, "gone cv", cv("T2", at(13*time.Hour), 0, true).Outcome, stores.ReceiptGone)
	eq(t, "never received", f.del("q", "nope", "T2", at(13*time.Hour)), stores.ReceiptGone)

	f.send("q", at(13*time.Hour), "fresh")
	eq(t, "never delivered", f.del("q", "fresh", "", at(13*time.Hour)), stores.ReceiptStale)
}

// ---- stats, time going back, retention

func TestStatsExact(t *testing.T) {
	f := newFixture(t)
	f.queue("q", false)
	f.send("q", t0, "v1", "v2", "v3")
	f.sendOpts("q", t0, sendOpt{delay: 10 * sec}, "d1", "d2")
	f.claimIDs("q", t0, 1, "T")
	eq(t, "t0", f.stats("q", t0), stores.QueueStats{Visible: 2, InFlight: 1, Delayed: 2})
	eq(t, "t10", f.stats("q", at(10*sec)), stores.QueueStats{Visible: 4, InFlight: 1})
	eq(t, "t30", f.stats("q", at(30*sec)), stores.QueueStats{Visible: 5})
	// The clock may go back (callers' clocks differ): counts follow it.
	eq(t, "back to t0", f.stats("q", t0), stores.QueueStats{Visible: 2, InFlight: 1, Delayed: 2})
	eq(t, "claim at t0", f.claimIDs("q", t0, 10, "U"), []string{"v2", "v3"})
	eq(t, "t5", f.stats("q", at(5*sec)), stores.QueueStats{InFlight: 3, Delayed: 2})
}

func TestClockBackFIFO(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.sendGroups("q.fifo", t0, "A1", "A2")
	f.claimIDs("q.fifo", t0, 1, "T") // A1 until 30s
	eq(t, "later: A free", f.claimIDs("q.fifo", at(31*sec), 0, "X"), []string{})
	eq(t, "stats later", f.stats("q.fifo", at(31*sec)), stores.QueueStats{Visible: 2})
	// Back in time A1 is in flight again and blocks its group.
	eq(t, "back", f.claimIDs("q.fifo", at(29*sec), 10, "U"), []string{})
	eq(t, "stats back", f.stats("q.fifo", at(29*sec)), stores.QueueStats{Visible: 1, InFlight: 1})
}

func TestRetention(t *testing.T) {
	f := newFixture(t)
	f.queue("q", false)
	if _, err := f.e.QueueUpdate(ctx, &stores.QueueUpdateParams{Name: "q", Retention: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f.send("q", t0, "old")
	f.send("q", at(30*sec), "new")
	f.claimIDs("q", at(30*sec), 1, "T") // "old" in flight
	eq(t, "before", f.stats("q", at(59*sec)), stores.QueueStats{Visible: 1, InFlight: 1})
	eq(t, "old gone", f.stats("q", at(60*sec)), stores.QueueStats{Visible: 1})
	eq(t, "receipt gone", f.del("q", "old", "T", at(61*sec)), stores.ReceiptGone)
	f.send("q", at(61*sec), "newer")
	if err := f.e.Maintain(ctx, &stores.MaintainParams{Now: at(90 * sec)}); err != nil {
		t.Fatal(err)
	}
	f.check()
	eq(t, "maintain dropped", f.stats("q", at(89*sec)), stores.QueueStats{Visible: 1})
	eq(t, "survivor", f.claimIDs("q", at(89*sec), 10, "U"), []string{"newer"})
}

// ---- purge, move, tasks

func TestPurgeInterval(t *testing.T) {
	f := newFixture(t)
	f.queue("q.fifo", true)
	f.sendGroups("q.fifo", t0, "A1", "B1")
	purge := func(now time.Time) error {
		err := f.e.QueuePurge(ctx, &stores.QueuePurgeParams{Name: "q.fifo", MinInterval: 60 * sec, Now: now})
		f.check()
		return err
	}
	if err := purge(at(sec)); err != nil {
		t.Fatal(err)
	}
	eq(t, "empty", f.stats("q.fifo", at(sec)), stores.QueueStats{})
	if err := purge(at(60 * sec)); !errors.Is(err, stores.ErrPurgeInProgress) {
		t.Fatalf("want in progress, got %v", err)
	}
	// A purge forgets deduplication ids too (as SQS does).
	r := f.sendOpts("q.fifo", at(2*sec), sendOpt{group: "A"}, "A1")
	eq(t, "not a dup", r[0].Duplicate, false)
	if err := purge(at(61 * sec)); err != nil {
		t.Fatal(err)
	}
}

func TestMessageMove(t *testing.T) {
	f := newFixture(t)
	f.queue("a", false)
	f.queue("b.fifo", true)
	f.queue("dlq", false)
	f.queue("gone", false)
	for _, src := range []string{"a", "b.fifo", "gone"} {
		f.sendOpts(src, t0, sendOpt{group: "g"}, src+"1", src+"2")
	}
	// Get everything into the DLQ by redrive.
	rd := &stores.Redrive{MaxReceiveCount: 1, QueueName: "dlq"}
	for _, src := range []string{"a", "b.fifo", "gone"} {
		f.claim(src, at(sec), 10, "T", claimOpt{redrive: rd})
		f.claim(src, at(40*sec), 10, "T", claimOpt{redrive: rd})
		f.claim(src, at(40*sec), 10, "T", claimOpt{redrive: rd}) // FIFO's second message after the first moved
	}
	eq(t, "dlq full", f.stats("dlq", at(40*sec)).Visible, int64(6))
	if err := f.e.QueueDelete(ctx, &stores.QueueDeleteParams{Name: "gone", Now: at(41 * sec)}); err != nil {
		t.Fatal(err)
	}
	// One message in flight in the DLQ is not moved.
	inflight := f.claimIDs("dlq", at(42*sec), 1, "D")
	eq(t, "in flight", inflight, []string{"a1"})

	mv := func(to string, max int) stores.MessageMoveResult {
		t.Helper()
		r, err := f.e.MessageMove(ctx, &stores.MessageMoveParams{NewID: uuid.NewString, FromName: "dlq", ToName: to, Max: max, Now: at(50 * sec)})
		if err != nil {
			t.Fatal(err)
		}
		f.check()
		return *r
	}
	eq(t, "first", mv("", 2), stores.MessageMoveResult{Moved: 2, MovedTo: map[string]int{"a": 1, "b.fifo": 1}})
	eq(t, "rest", mv("", 10), stores.MessageMoveResult{Moved: 1, MovedTo: map[string]int{"b.fifo": 1}, Failed: 2})

	a := f.claim("a", at(50*sec), 10, "X", claimOpt{})
	eq(t, "back in a", sentAs(a), []string{"a2"})
	if a.Messages[0].ID == "a2" {
		t.Error("a moved message kept its MessageId")
	}
	eq(t, "sent at the move", a.Messages[0].SentAt, at(50*sec))
	eq(t, "reset rc", a.Messages[0].ReceiveCount, 1)
	eq(t, "reset first", a.Messages[0].FirstReceivedAt, at(50*sec))
	eq(t, "no source", a.Messages[0].DeadLetterSource, "")
	b := f.claim("b.fifo", at(50*sec), 10, "X", claimOpt{})
	eq(t, "back in b", sentAs(b), []string{"b.fifo1", "b.fifo2"})
	eq(t, "new seq", b.Messages[0].SequenceNumber, "10000000000000000002")

	// Explicit destination.
	eq(t, "explicit", mv("a", 10), stores.MessageMoveResult{Moved: 2, MovedTo: map[string]int{"a": 2}, Exhausted: true})
	eq(t, "in a", sentAs(f.claim("a", at(50*sec), 10, "Y", claimOpt{})), []string{"gone1", "gone2"})
	if _, err := f.e.MessageMove(ctx, &stores.MessageMoveParams{NewID: uuid.NewString, FromName: "dlq", ToName: "nope", Max: 1}); !errors.Is(err, stores.ErrQueueNotFound) {
		t.Fatalf("missing destination: %v", err)
	}
}

func TestMoveTasks(t *testing.T) {
	f := newFixture(t)
	mk := func(h, src, status string, started time.Duration) *stores.MoveTask {
		return &stores.MoveTask{Handle: h, SourceArn: src, Status: status, StartedAt: at(started)}
	}
	for _, tk := range []*stores.MoveTask{mk("h1", "arn:1", "COMPLETED", 1), mk("h2", "arn:1", "RUNNING", 2), mk("h3", "arn:2", "CANCELLING", 3)} {
		if err := f.e.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: tk}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.e.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: mk("h4", "arn:1", "RUNNING", 4)}); !errors.Is(err, stores.ErrMoveTaskRunning) {
		t.Fatalf("running: %v", err)
	}
	if err := f.e.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: mk("h4", "arn:2", "RUNNING", 4)}); !errors.Is(err, stores.ErrMoveTaskRunning) {
		t.Fatalf("cancelling: %v", err)
	}
	f.check()
	list := func(p stores.MoveTaskListParams) []string {
		ts, err := f.e.MoveTaskList(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, tk := range ts {
			out = append(out, tk.Handle)
		}
		return out
	}
	eq(t, "all", list(stores.MoveTaskListParams{}), []string{"h3", "h2", "h1"})
	eq(t, "source", list(stores.MoveTaskListParams{SourceArn: "arn:1"}), []string{"h2", "h1"})
	eq(t, "status", list(stores.MoveTaskListParams{Status: "RUNNING"}), []string{"h2"})
	eq(t, "limit", list(stores.MoveTaskListParams{Limit: 1}), []string{"h3"})

	upd := mk("h2", "arn:1", "COMPLETED", 2)
	upd.Moved = 7
	got, err := f.e.MoveTaskUpdate(ctx, &stores.MoveTaskUpdateParams{Task: upd, IfVersion: 2})
	if !errors.Is(err, stores.ErrVersionConflict) || got.Status != "RUNNING" || got.Version != 1 {
		t.Fatalf("conflict: %v %+v", err, got)
	}
	got, err = f.e.MoveTaskUpdate(ctx, &stores.MoveTaskUpdateParams{Task: upd, IfVersion: 1})
	if err != nil || got.Moved != 7 || got.Version != 2 {
		t.Fatalf("update: %v %+v", err, got)
	}
	got.Moved = 100
	g, _ := f.e.MoveTaskGet(ctx, &stores.MoveTaskGetParams{Handle: "h2"})
	eq(t, "stored", g.Moved, int64(7))
	if _, err := f.e.MoveTaskGet(ctx, &stores.MoveTaskGetParams{Handle: "nope"}); !errors.Is(err, stores.ErrMoveTaskNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := f.e.MoveTaskUpdate(ctx, &stores.MoveTaskUpdateParams{Task: mk("nope", "", "", 0)}); !errors.Is(err, stores.ErrMoveTaskNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	f.check()
}

// ---- what results report for wake-ups, copies

// A visibility change reports Earlier exactly when the message becomes
// visible sooner than it would have: the service wakes receivers then.
func TestVisibilityChangeReportsEarlier(t *testing.T) {
	f := newFixture(t)
	f.queue("q", false)
	f.send("q", t0, "a")
	f.claimIDs("q", t0, 1, "T") // visible again at t0+30s
	change := func(now time.Time, d time.Duration) *stores.MessageChangeVisibilityResult {
		t.Helper()
		r, err := f.e.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: "q", MessageID: "a",
			Token: "T", Timeout: d, ApplyExpired: true, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		f.check()
		return r
	}
	eq(t, "extended", change(t0, time.Minute).Earlier, false)
	eq(t, "shortened", change(t0, 10*sec).Earlier, true)
	eq(t, "reset", change(at(sec), 0).Earlier, true)
	eq(t, "already visible, extended", change(at(2*sec), 0).Earlier, false)
}

func TestReturnedMessagesAreCopies(t *testing.T) {
	f := newFixture(t)
	f.queue("q", false)
	s := "v"
	attrs := map[string]stores.Attribute{"k": {DataType: "String", StringValue: &s}, "b": {DataType: "Binary", BinaryValue: []byte{1, 2}}}
	_, err := f.e.MessageSend(ctx, &stores.MessageSendParams{QueueName: "q", Messages: []stores.NewMessage{{ID: "m", Body: "x", Attributes: attrs}}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	s = "changed by sender"
	attrs["b"].BinaryValue[0] = 9
	res := f.claim("q", t0, 1, "T", claimOpt{vt: time.Nanosecond})
	m := res.Messages[0]
	eq(t, "string", *m.Attributes["k"].StringValue, "v")
	eq(t, "binary", m.Attributes["b"].BinaryValue, []byte{1, 2})
	*m.Attributes["k"].StringValue = "changed by receiver"
	m.Attributes["b"].BinaryValue[1] = 9
	delete(m.Attributes, "k")
	res = f.claim("q", at(sec), 1, "U", claimOpt{})
	eq(t, "string", *res.Messages[0].Attributes["k"].StringValue, "v")
	eq(t, "binary", res.Messages[0].Attributes["b"].BinaryValue, []byte{1, 2})
}

func TestClosedAndFailed(t *testing.T) {
	e := New(nil)
	e.Close()
	if _, err := e.QueueList(ctx, &stores.QueueListParams{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	e2 := New(failing{})
	_, err := e2.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: "q"}})
	if err == nil || err.Error() != "disk on fire" {
		t.Fatalf("commit failure not returned: %v", err)
	}
}

type failing struct{}

func (failing) Submit([]Change) func() error {
	return func() error { return errors.New("disk on fire") }
}

// ---- restore

func TestRestoreRebuildsEverything(t *testing.T) {
	f := newFixture(t)
	f.queue("std", false)
	f.queue("q.fifo", true)
	f.queue("dlq", false)
	f.sendGroups("q.fifo", t0, "A1", "A2", "B1", "C1")
	f.sendOpts("q.fifo", t0, sendOpt{group: "D", delay: time.Minute}, "D1")
	f.send("std", t0, "s1", "s2", "s3")
	f.claim("q.fifo", at(sec), 2, "T1", claimOpt{attempt: "X"})
	f.claimIDs("std", at(sec), 1, "T2")
	f.claim("std", at(sec), 1, "T3", claimOpt{redrive: &stores.Redrive{MaxReceiveCount: 1, QueueName: "dlq"}})
	if err := f.e.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: &stores.MoveTask{Handle: "h", SourceArn: "arn", Status: "RUNNING"}}); err != nil {
		t.Fatal(err)
	}
	f.queue("tmp", false)
	if err := f.e.QueueDelete(ctx, &stores.QueueDeleteParams{Name: "tmp", Now: at(2 * sec)}); err != nil {
		t.Fatal(err)
	}
	f.check()

	r2 := newRecorder()
	e2 := New(r2)
	if err := e2.Restore(f.rec.records()); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.rec.records() {
		r2.recs[recKey(r.Kind(), r.Key())] = r
	}
	g := &fixture{t: t, e: e2, rec: r2}
	// Both engines answer every question alike.
	for _, now := range []time.Time{at(2 * sec), at(31 * sec), at(2 * time.Minute)} {
		for _, q := range []string{"std", "q.fifo", "dlq"} {
			eq(t, "stats "+q, g.stats(q, now), f.stats(q, now))
		}
	}
	eq(t, "replay", ids(g.claim("q.fifo", at(3*sec), 10, "Z", claimOpt{attempt: "X"})), []string{"A1", "A2"})
	eq(t, "replay token", g.claim("q.fifo", at(3*sec), 10, "Z", claimOpt{attempt: "X"}).Messages[0].Token, "T1")
	eq(t, "blocking", ids(g.claim("q.fifo", at(3*sec), 10, "Z", claimOpt{})), []string{"B1", "C1"})
	eq(t, "receipt", g.del("std", "s1", "T2", at(3*sec)), stores.ReceiptCurrent)
	eq(t, "seq continues", g.sendOpts("q.fifo", at(3*sec), sendOpt{group: "E"}, "E1")[0].SequenceNumber, "10000000000000000005")
	eq(t, "dedup kept", g.sendOpts("q.fifo", at(3*sec), sendOpt{group: "A"}, "A1")[0].Duplicate, true)
	if _, err := e2.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: "tmp"}, RecreateCooldown: time.Minute, Now: at(3 * sec)}); !errors.Is(err, stores.ErrQueueDeletedRecently) {
		t.Fatalf("tombstone lost: %v", err)
	}
	if tk, err := e2.MoveTaskGet(ctx, &stores.MoveTaskGetParams{Handle: "h"}); err != nil || tk.Status != "RUNNING" {
		t.Fatalf("task lost: %v", err)
	}
	if err := New(nil).Restore([]Record{&MessageRecord{Queue: "nope"}}); err == nil {
		t.Fatal("orphan message accepted")
	}
}

// ---- randomized: the store against a brute-force model of its records

// TestRandomAgainstModel runs random operations and checks every claim and
// every count against a brute-force computation over the records the engine
// emitted (which sameState proves equal to its state).
func TestRandomAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) { randomRun(t, seed, 300) })
	}
}

type lcg struct{ s uint64 }

func (r *lcg) intn(n int) int {
	r.s = r.s*6364136223846793005 + 1442695040888963407
	return int((r.s >> 33) % uint64(n))
}

func randomRun(t *testing.T, seed int64, steps int) {
	f := newFixture(t)
	rnd := &lcg{s: uint64(seed)}
	queues := []string{"s", "f.fifo", "dlq", "dlq.fifo"}
	for _, q := range queues {
		f.queue(q, len(q) > 5 && q[len(q)-5:] == ".fifo")
	}
	_, _ = f.e.QueueUpdate(ctx, &stores.QueueUpdateParams{Name: "s", Retention: 200 * sec})
	now := t0
	n := 0
	tokens := map[string]string{} // message id -> a token it was claimed with
	for i := 0; i < steps; i++ {
		switch rnd.intn(10) {
		case 0: // clock jitter backwards
			now = now.Add(-time.Duration(rnd.intn(5)) * sec)
		case 1, 2:
			now = now.Add(time.Duration(rnd.intn(20)) * sec)
		}
		q := queues[rnd.intn(len(queues))]
		fifo := len(q) > 5
		switch op := rnd.intn(10); {
		case op < 3:
			var msgs []stores.NewMessage
			for k := rnd.intn(3) + 1; k > 0; k-- {
				n++
				id := fmt.Sprintf("m%d", n)
				m := stores.NewMessage{ID: id, Body: id, GroupID: string(rune('A' + rnd.intn(3)))}
				if fifo {
					m.DedupID = strconv.Itoa(rnd.intn(40))
				} else {
					m.Delay = time.Duration(rnd.intn(3)) * 5 * sec
				}
				msgs = append(msgs, m)
			}
			_, err := f.e.MessageSend(ctx, &stores.MessageSendParams{QueueName: q, Messages: msgs, DedupWindow: 30 * sec, Now: now})
			if err != nil {
				t.Fatal(err)
			}
		case op < 6:
			p := &stores.MessageClaimParams{QueueName: q, Max: rnd.intn(4) + 1, VisibilityTimeout: time.Duration(rnd.intn(3)) * 10 * sec,
				Token: fmt.Sprintf("t%d", i), Now: now}
			if rnd.intn(2) == 0 {
				p.Redrive = &stores.Redrive{MaxReceiveCount: 2, QueueName: queues[2+rnd.intn(2)]}
			}
			if fifo && rnd.intn(2) == 0 {
				p.AttemptID = strconv.Itoa(rnd.intn(3))
				p.AttemptWindow = 40 * sec
			}
			want, replay := modelClaim(f, p)
			res, err := f.e.MessageClaim(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if !replay {
				eq(t, fmt.Sprintf("step %d claim %s", i, q), ids(res), want)
			}
			for _, m := range res.Messages {
				tokens[m.ID] = m.Token
			}
		case op < 8:
			if n == 0 {
				continue
			}
			id := fmt.Sprintf("m%d", rnd.intn(n)+1)
			if rnd.intn(2) == 0 {
				_, err := f.e.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q, Receipts: []stores.Receipt{{MessageID: id, Token: tokens[id]}}, KeepExpired: fifo, Now: now})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				_, err := f.e.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: q, MessageID: id, Token: tokens[id],
					Timeout: time.Duration(rnd.intn(3)) * 10 * sec, ApplyExpired: !fifo, Now: now})
				if err != nil {
					t.Fatal(err)
				}
			}
		case op < 9:
			from := queues[2+rnd.intn(2)]
			_, err := f.e.MessageMove(ctx, &stores.MessageMoveParams{NewID: uuid.NewString, FromName: from, Max: rnd.intn(3) + 1, Now: now})
			if err != nil {
				t.Fatal(err)
			}
		default:
			if rnd.intn(2) == 0 {
				if err := f.e.Maintain(ctx, &stores.MaintainParams{Now: now}); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.check()
		want := modelStats(f, q, now)
		eq(t, fmt.Sprintf("step %d stats %s", i, q), f.stats(q, now), want)
	}
	// Everything rebuilds.
	e2 := New(nil)
	if err := e2.Restore(f.rec.records()); err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		st, err := e2.QueueStats(ctx, &stores.QueueStatsParams{Name: q, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "restored stats "+q, *st, modelStats(f, q, now))
	}
	checkInvariants(t, e2)
}

func modelMessages(recs []Record, queue string, now time.Time) []*MessageRecord {
	var retention time.Duration
	var out []*MessageRecord
	for _, r := range recs {
		if qr, ok := r.(*QueueRecord); ok && qr.Queue.Name == queue {
			retention = qr.Queue.Retention
		}
	}
	for _, r := range recs {
		if m, ok := r.(*MessageRecord); ok && m.Queue == queue {
			if retention > 0 && !m.Message.SentAt.Add(retention).After(now) {
				continue
			}
			out = append(out, m)
		}
	}
	// records() sorts by key, which orders a queue's messages by Seq.
	return out
}

func modelStats(f *fixture, queue string, now time.Time) stores.QueueStats {
	var st stores.QueueStats
	for _, m := range modelMessages(f.rec.view(f.t), queue, now) {
		switch {
		case !m.VisibleAt.After(now):
			st.Visible++
		case m.Message.ReceiveCount > 0:
			st.InFlight++
		default:
			st.Delayed++
		}
	}
	return st
}

// modelClaim computes which messages a claim returns; replay reports that
// an attempt-id replay may apply (then the result is not predicted here).
func modelClaim(f *fixture, p *stores.MessageClaimParams) (want []string, replay bool) {
	now := p.Now
	recs := f.rec.view(f.t)
	msgs := modelMessages(recs, p.QueueName, now)
	fifo := false
	dlqExists := false
	for _, r := range recs {
		if qr, ok := r.(*QueueRecord); ok {
			if qr.Queue.Name == p.QueueName {
				fifo = qr.Queue.FIFO
			}
			if p.Redrive != nil && qr.Queue.Name == p.Redrive.QueueName {
				dlqExists = true
			}
		}
		if a, ok := r.(*AttemptRecord); ok && p.AttemptID != "" && a.Queue == p.QueueName && a.AttemptID == p.AttemptID && now.Before(a.CreatedAt.Add(p.AttemptWindow)) {
			replay = true
		}
	}
	moved := func(m *MessageRecord) bool {
		return p.Redrive != nil && dlqExists && p.Redrive.QueueName != p.QueueName && m.Message.ReceiveCount >= p.Redrive.MaxReceiveCount
	}
	visible := func(m *MessageRecord) bool { return !m.VisibleAt.After(now) }
	want = []string{}
	if !fifo {
		for _, m := range msgs {
			if len(want) == p.Max {
				break
			}
			if visible(m) && !moved(m) {
				want = append(want, m.Message.ID)
			}
		}
		return want, false
	}
	groups := map[string][]*MessageRecord{}
	var order []string
	for _, m := range msgs {
		g := m.Message.GroupID
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], m)
	}
	// Groups by when their head became receivable, then by the head's Seq.
	slices.SortStableFunc(order, func(a, b string) int {
		return groups[a][0].VisibleAt.Compare(groups[b][0].VisibleAt)
	})
	for _, g := range order {
		for _, m := range groups[g] {
			if len(want) == p.Max || !visible(m) {
				break
			}
			if !moved(m) {
				want = append(want, m.Message.ID)
			}
		}
	}
	return want, replay
}

// lastChanges is a Committer that keeps the change list of the latest
// operation.
type lastChanges struct{ changes []Change }

func (l *lastChanges) Submit(c []Change) func() error { l.changes = c; return nil }

// A delivery (receive, visibility change) writes the message's delivery
// state only, never its record with the body: on a full disk a queue can
// still be drained.
func TestDeliveryWritesOnlyDeliveryState(t *testing.T) {
	l := &lastChanges{}
	e := New(l)
	for _, name := range []string{"std", "q.fifo"} {
		if _, err := e.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: name, FIFO: strings.HasSuffix(name, ".fifo")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.MessageSend(ctx, &stores.MessageSendParams{QueueName: name, Now: t0,
			Messages: []stores.NewMessage{{ID: name + "-m", Body: strings.Repeat("b", 1000), GroupID: "g"}}}); err != nil {
			t.Fatal(err)
		}
		only := func(what string) {
			t.Helper()
			if len(l.changes) == 0 {
				t.Fatalf("%s %s: no change", name, what)
			}
			for _, c := range l.changes {
				if c.Kind != KindDelivery && c.Kind != KindAttempt {
					t.Fatalf("%s %s writes a %s record", name, what, c.Kind)
				}
			}
		}
		p := &stores.MessageClaimParams{QueueName: name, Max: 1, VisibilityTimeout: 30 * sec, Token: "T", Now: at(sec)}
		if strings.HasSuffix(name, ".fifo") {
			p.AttemptID, p.AttemptWindow = "A", time.Minute
		}
		res, err := e.MessageClaim(ctx, p)
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("claim: %v %v", res, err)
		}
		only("receive")
		if _, err := e.MessageClaim(ctx, p); err != nil { // an attempt replay on FIFO, nothing on Standard
			t.Fatal(err)
		}
		if _, err := e.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: name, MessageID: name + "-m", Token: "T",
			Timeout: time.Minute, Now: at(2 * sec)}); err != nil {
			t.Fatal(err)
		}
		only("visibility change")
		if _, err := e.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: name,
			Receipts: []stores.Receipt{{MessageID: name + "-m", Token: "T"}}, Now: at(3 * sec)}); err != nil {
			t.Fatal(err)
		}
		var kinds []Kind
		for _, c := range l.changes {
			if c.Record != nil {
				t.Fatalf("delete writes %+v", c.Record)
			}
			kinds = append(kinds, c.Kind)
		}
		eq(t, "a delete removes", kinds, []Kind{KindMessage, KindDelivery})
	}
}

// Records written before delivery state was split out hold the latest
// delivery state in the message record, and no DeliveryRecord; they restore
// as they were. A DeliveryRecord overrides what its message record holds.
func TestRestoreReadsWholeMessageRecords(t *testing.T) {
	q := &QueueRecord{Queue: stores.Queue{Name: "q", Retention: time.Hour}}
	old := &MessageRecord{Queue: "q", Seq: rules.FirstSequence, VisibleAt: at(time.Minute), Token: "T1",
		Message: stores.StoredMessage{ID: "old", Body: "b", SentAt: t0, ReceiveCount: 2, FirstReceivedAt: at(sec)}}
	split := &MessageRecord{Queue: "q", Seq: rules.FirstSequence + 1, VisibleAt: t0, Message: stores.StoredMessage{ID: "new", Body: "c", SentAt: t0}}
	d := &DeliveryRecord{Queue: "q", Seq: split.Seq, VisibleAt: at(time.Minute), Token: "T2", ReceiveCount: 1, FirstReceivedAt: at(2 * sec)}
	e := New(nil)
	if err := e.Restore([]Record{d, split, old, q}); err != nil {
		t.Fatal(err)
	}
	st, err := e.QueueStats(ctx, &stores.QueueStatsParams{Name: "q", Now: at(10 * sec)})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "stats", *st, stores.QueueStats{InFlight: 2})
	outs, err := e.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: "q", Now: at(10 * sec),
		Receipts: []stores.Receipt{{MessageID: "old", Token: "T1"}, {MessageID: "new", Token: "T2"}}})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "receipts", outs.Outcomes, []stores.ReceiptOutcome{stores.ReceiptCurrent, stores.ReceiptCurrent})
	orphan := &DeliveryRecord{Queue: "q", Seq: rules.FirstSequence + 9}
	if err := New(nil).Restore([]Record{q, orphan}); err == nil {
		t.Fatal("delivery state of no message restored")
	}
}

// Reset puts the engine back to the records it is given, whatever it held:
// what a durable store does after a commit it could not write.
func TestResetReplacesState(t *testing.T) {
	f := newFixture(t)
	f.queue("std", false)
	f.queue("q.fifo", true)
	f.send("std", t0, "a", "b")
	f.sendGroups("q.fifo", t0, "A1")
	saved := f.rec.records()
	want := map[string]stores.QueueStats{"std": f.stats("std", at(sec)), "q.fifo": f.stats("q.fifo", at(sec))}
	// Changes the disk would not take.
	f.send("std", t0, "c")
	f.claimIDs("std", at(sec), 1, "T")
	f.queue("extra", false)
	if err := f.e.Reset(func() ([]Record, error) { return saved, nil }); err != nil {
		t.Fatal(err)
	}
	f.rec.recs = map[string]Record{} // the recorder is the disk: it never took them either
	for _, r := range saved {
		f.rec.recs[recKey(r.Kind(), r.Key())] = r
	}
	for q, st := range want {
		eq(t, "stats "+q, f.stats(q, at(sec)), st)
	}
	if _, err := f.e.QueueGet(ctx, &stores.QueueGetParams{Name: "extra"}); !errors.Is(err, stores.ErrQueueNotFound) {
		t.Fatalf("a queue created after the saved state survived the reset: %v", err)
	}
	checkInvariants(t, f.e)

	// A load that fails stops the engine; a closed engine still runs load
	// (the store fails its waiters there) and stays closed.
	if err := f.e.Reset(func() ([]Record, error) { return nil, errors.New("unreadable") }); err == nil {
		t.Fatal("failed load accepted")
	}
	if _, err := f.e.QueueList(ctx, &stores.QueueListParams{}); err == nil || f.e.Health(ctx) == nil {
		t.Fatal("engine serves after a failed reset")
	}
	e := New(nil)
	e.Close()
	ran := false
	if err := e.Reset(func() ([]Record, error) { ran = true; return nil, nil }); !errors.Is(err, ErrClosed) || !ran {
		t.Fatalf("reset of a closed engine: %v, load ran %v", err, ran)
	}
}
