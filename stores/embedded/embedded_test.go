package embedded

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
)

var (
	ctx = context.Background()
	t0  = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
)

func at(d time.Duration) time.Time { return t0.Add(d) }

const sec = time.Second

func open(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// must returns v, or panics (failing the test) on an error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

func eq[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func createQueue(t testing.TB, s stores.Store, name string, fifo bool, now time.Time) *stores.Queue {
	t.Helper()
	res := must(s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{
		Name: name, ID: name + "-id", FIFO: fifo, Retention: 4 * 24 * time.Hour,
		Attributes: map[string]string{"VisibilityTimeout": "30"}, Tags: map[string]string{"team": "core"},
	}, Now: now}))
	return res.Queue
}

func send(t testing.TB, s stores.Store, queue string, now time.Time, group string, ids ...string) []stores.SendResult {
	t.Helper()
	var msgs []stores.NewMessage
	for _, id := range ids {
		v := "attr of " + id
		msgs = append(msgs, stores.NewMessage{ID: id, Body: "body of " + id, GroupID: group, DedupID: id,
			Attributes: map[string]stores.Attribute{"a": {DataType: "String", StringValue: &v}, "b": {DataType: "Binary", BinaryValue: []byte{0, 0xff, 0xfe}}},
			MD5OfBody:  "md5-" + id})
	}
	return must(s.MessageSend(ctx, &stores.MessageSendParams{QueueName: queue, Messages: msgs, DedupWindow: 5 * time.Minute, Now: now})).Results
}

func claim(t testing.TB, s stores.Store, queue string, now time.Time, max int, token, attempt string) *stores.MessageClaimResult {
	t.Helper()
	return must(s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: queue, Max: max, VisibilityTimeout: 30 * sec,
		Token: token, AttemptID: attempt, AttemptWindow: 5 * time.Minute, Now: now}))
}

func claimedIDs(res *stores.MessageClaimResult) []string {
	out := []string{}
	for _, m := range res.Messages {
		out = append(out, m.ID)
	}
	return out
}

func TestReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	std := createQueue(t, s, "std", false, t0)
	fifo := createQueue(t, s, "f.fifo", true, t0)
	createQueue(t, s, "gone", false, t0)
	must(0, s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: "gone", Now: at(sec)}))
	send(t, s, "std", t0, "", "s1", "s2")
	seqs := send(t, s, "f.fifo", t0, "g", "f1", "f2", "f3")
	// Odd bytes survive exactly.
	odd := "\xff\xfe not utf-8 <&> \x00"
	must(s.MessageSend(ctx, &stores.MessageSendParams{QueueName: "std", Messages: []stores.NewMessage{{ID: "odd", Body: odd}}, Now: t0}))
	inflight := claim(t, s, "std", at(sec), 1, "TOK1", "")
	fclaim := claim(t, s, "f.fifo", at(sec), 2, "TOK2", "ATT")
	task := &stores.MoveTask{Handle: "h1", SourceName: "std", SourceArn: "arn:std", Status: "RUNNING", ToMove: 3, StartedAt: at(2 * sec), UpdatedAt: at(2 * sec)}
	must(0, s.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: task}))
	before := must(s.QueueList(ctx, &stores.QueueListParams{}))
	statsStd := must(s.QueueStats(ctx, &stores.QueueStatsParams{Name: "std", Now: at(2 * sec)}))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.QueueList(ctx, &stores.QueueListParams{}); err == nil {
		t.Fatal("operation after Close succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}

	s = open(t, dir)
	defer s.Close()
	eq(t, "queues", must(s.QueueList(ctx, &stores.QueueListParams{})), before)
	eq(t, "std", must(s.QueueGet(ctx, &stores.QueueGetParams{Name: "std"})), std)
	eq(t, "fifo", must(s.QueueGet(ctx, &stores.QueueGetParams{Name: "f.fifo"})), fifo)
	eq(t, "stats", must(s.QueueStats(ctx, &stores.QueueStatsParams{Name: "std", Now: at(2 * sec)})), statsStd)

	// The in-flight delivery's receipt still works; the message is intact.
	m := inflight.Messages[0]
	eq(t, "receipt", must(s.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: "std", MessageID: m.ID, Token: "TOK1", Now: at(3 * sec)})).Outcome, stores.ReceiptCurrent)
	again := claim(t, s, "std", at(3*sec), 10, "TOK3", "")
	eq(t, "std order", claimedIDs(again), []string{"s1", "s2", "odd"})
	got := again.Messages[0]
	eq(t, "body", got.Body, m.Body)
	eq(t, "attributes", got.Attributes, m.Attributes)
	eq(t, "sent", got.SentAt, m.SentAt)
	eq(t, "first received", got.FirstReceivedAt, m.FirstReceivedAt)
	eq(t, "receive count", got.ReceiveCount, 2)
	eq(t, "odd body", again.Messages[2].Body, odd)

	// FIFO: attempt replay, group blocking, dedup, sequence counter.
	replay := claim(t, s, "f.fifo", at(4*sec), 10, "TOK4", "ATT")
	eq(t, "replay", replay.Messages, fclaim.Messages)
	eq(t, "blocked", claimedIDs(claim(t, s, "f.fifo", at(4*sec), 10, "TOK5", "")), []string{})
	eq(t, "dedup", send(t, s, "f.fifo", at(5*sec), "g", "f1")[0], stores.SendResult{MessageID: "f1", SequenceNumber: seqs[0].SequenceNumber, Duplicate: true})
	next := send(t, s, "f.fifo", at(5*sec), "g", "f4")[0]
	eq(t, "sequence continues", next.SequenceNumber, "10000000000000000003")

	// Tasks, tombstones.
	task.Version = 1 // the store's
	eq(t, "task", must(s.MoveTaskGet(ctx, &stores.MoveTaskGetParams{Handle: "h1"})), task)
	if _, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: "gone"}, RecreateCooldown: time.Minute, Now: at(5 * sec)}); !errors.Is(err, stores.ErrQueueDeletedRecently) {
		t.Fatalf("cooldown lost: %v", err)
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	old := lockTimeout
	lockTimeout = 200 * time.Millisecond
	defer func() { lockTimeout = old }()
	dir := t.TempDir()
	s := open(t, dir)
	start := time.Now()
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second open: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("second open took %v", d)
	}
	s.Close()
	s = open(t, dir)
	s.Close()
}

// TestFailedCommitRebuilds: a commit that fails for another reason than a
// full disk (here bbolt refuses a key over its 32 KiB limit, which the
// service's limits never let through) fails its request with an error that
// is not stores.ErrUnavailable (the service answers InternalError); the
// store rebuilds its memory from disk, so the failed change is nowhere,
// and serves everything again.
func TestFailedCommitRebuilds(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer func() { s.Close() }()
	createQueue(t, s, "q", false, t0)
	send(t, s, "q", t0, "", "m1", "m2")
	_, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: strings.Repeat("n", 40<<10), ID: "long"}, Now: t0})
	if err == nil || !strings.Contains(err.Error(), "commit failed") || errors.Is(err, stores.ErrUnavailable) {
		t.Fatalf("create with a key bbolt refuses: %v; want a failed commit, not ErrUnavailable", err)
	}
	qs := must(s.QueueList(ctx, &stores.QueueListParams{}))
	if len(qs) != 1 || qs[0].Name != "q" {
		t.Fatalf("queues after the failed commit: %d (the failed creation stayed in memory?)", len(qs))
	}
	if err := s.Health(ctx); err != nil {
		t.Fatalf("health after the failed commit: %v", err)
	}
	send(t, s, "q", at(sec), "", "m3")
	if got := claim(t, s, "q", at(2*sec), 10, "T", ""); len(got.Messages) != 3 {
		t.Fatalf("received %d messages after the failed commit, want 3", len(got.Messages))
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close after a failed commit the store recovered from: %v", err)
	}
	s = open(t, dir)
	if qs := must(s.QueueList(ctx, &stores.QueueListParams{})); len(qs) != 1 {
		t.Fatalf("queues after a restart: %d, want 1", len(qs))
	}
	st := must(s.QueueStats(ctx, &stores.QueueStatsParams{Name: "q", Now: at(time.Hour)}))
	if st.Visible != 3 {
		t.Fatalf("messages after a restart: %+v, want 3 visible", st)
	}
}

func TestFailStop(t *testing.T) {
	s := open(t, t.TempDir())
	createQueue(t, s, "q", false, t0)
	// Pull the journal and the database from under the committer: the
	// next commit fails, and so does the rebuild from disk.
	s.c.j.close()
	s.db.Close()
	_, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: "q", Messages: []stores.NewMessage{{ID: "m"}}, Now: t0})
	if err == nil || !strings.Contains(err.Error(), "commit failed") {
		t.Fatalf("send after commit failure: %v", err)
	}
	// Everything after fails too, reads included: the memory holds a send
	// that is not on disk.
	if _, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: "q", Now: t0}); err == nil {
		t.Fatal("read after commit failure succeeded")
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close hid the commit failure")
	}
}

// TestAgainstMemstore runs the same random operations on an embedded store
// and on a memstore, closing and reopening the embedded store now and then,
// and requires identical answers.
func TestAgainstMemstore(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { differential(t, seed, 300) })
	}
	// With generations of 4 KiB, folds run in the background all along,
	// and a store reopened replays a journal beside a database they wrote.
	old := foldBytes
	t.Cleanup(func() { foldBytes = old })
	foldBytes = 4 << 10
	for seed := uint64(5); seed <= 8; seed++ {
		t.Run(strconv.FormatUint(seed, 10)+"-small-generations", func(t *testing.T) { differential(t, seed, 300) })
	}
}

type lcg struct{ s uint64 }

func (r *lcg) intn(n int) int {
	r.s = r.s*6364136223846793005 + 1442695040888963407
	return int((r.s >> 33) % uint64(n))
}

func differential(t *testing.T, seed uint64, steps int) {
	dir := t.TempDir()
	emb := open(t, dir)
	defer func() { emb.Close() }()
	mem := memstore.New()
	rnd := &lcg{s: seed}
	queues := []string{"a", "b.fifo", "dlq", "dlq.fifo"}
	now := t0
	n := 0
	tokens := map[string]string{}
	type result struct {
		V   any
		Err string
	}
	do := func(what string, f func(s stores.Store) (any, error)) {
		t.Helper()
		mv, merr := f(mem)
		ev, eerr := f(emb)
		m, e := result{mv, fmt.Sprint(merr)}, result{ev, fmt.Sprint(eerr)}
		if !reflect.DeepEqual(m, e) {
			t.Fatalf("%s: memstore %+v, embedded %+v", what, m, e)
		}
	}
	for _, q := range queues {
		do("create "+q, func(s stores.Store) (any, error) {
			return s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: q, ID: q, FIFO: strings.HasSuffix(q, ".fifo"), Retention: 300 * sec}, Now: now})
		})
	}
	for i := 0; i < steps; i++ {
		now = now.Add(time.Duration(rnd.intn(8)) * sec)
		q := queues[rnd.intn(len(queues))]
		fifo := strings.HasSuffix(q, ".fifo")
		step := fmt.Sprintf("step %d on %s", i, q)
		switch op := rnd.intn(21); {
		case op < 6:
			var msgs []stores.NewMessage
			for k := rnd.intn(3) + 1; k > 0; k-- {
				n++
				id := fmt.Sprintf("m%d", n)
				m := stores.NewMessage{ID: id, Body: strings.Repeat(id, rnd.intn(50)), GroupID: string(rune('A' + rnd.intn(3)))}
				if fifo {
					m.DedupID = strconv.Itoa(rnd.intn(30))
				}
				msgs = append(msgs, m)
			}
			do(step+" send", func(s stores.Store) (any, error) {
				return s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q, Messages: msgs, DedupWindow: 60 * sec, Now: now})
			})
		case op < 11:
			p := stores.MessageClaimParams{QueueName: q, Max: rnd.intn(4) + 1, VisibilityTimeout: time.Duration(rnd.intn(3)) * 10 * sec,
				Token: fmt.Sprintf("t%d", i), Now: now}
			if rnd.intn(2) == 0 {
				p.Redrive = &stores.Redrive{MaxReceiveCount: 2, QueueName: queues[2+rnd.intn(2)]}
			}
			if fifo && rnd.intn(2) == 0 {
				p.AttemptID, p.AttemptWindow = strconv.Itoa(rnd.intn(3)), 40*sec
			}
			var res *stores.MessageClaimResult
			do(step+" claim", func(s stores.Store) (any, error) {
				pp := p
				r, err := s.MessageClaim(ctx, &pp)
				res = r
				return r, err
			})
			for _, m := range res.Messages {
				tokens[m.ID] = m.Token
			}
		case op < 15:
			if n == 0 {
				continue
			}
			id := fmt.Sprintf("m%d", rnd.intn(n)+1)
			if rnd.intn(2) == 0 {
				do(step+" delete", func(s stores.Store) (any, error) {
					return s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q, Receipts: []stores.Receipt{{MessageID: id, Token: tokens[id]}}, KeepExpired: fifo, Now: now})
				})
			} else {
				timeout := time.Duration(rnd.intn(3)) * 10 * sec
				do(step+" visibility", func(s stores.Store) (any, error) {
					return s.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: q, MessageID: id, Token: tokens[id],
						Timeout: timeout, ApplyExpired: !fifo, Now: now})
				})
			}
		case op < 16:
			from := queues[2+rnd.intn(2)]
			max := rnd.intn(3) + 1
			do(step+" move", func(s stores.Store) (any, error) {
				k := 0 // the same ids, in the same order, for both stores
				newID := func() string { k++; return fmt.Sprintf("mv%d-%d", i, k) }
				return s.MessageMove(ctx, &stores.MessageMoveParams{FromName: from, Max: max, NewID: newID, Now: now})
			})
		case op < 17:
			do(step+" purge", func(s stores.Store) (any, error) {
				return nil, s.QueuePurge(ctx, &stores.QueuePurgeParams{Name: q, MinInterval: 60 * sec, Now: now})
			})
		case op < 18:
			h := fmt.Sprintf("h%d", rnd.intn(5))
			status := []string{"RUNNING", "COMPLETED"}[rnd.intn(2)]
			create := rnd.intn(2) == 0
			version := int64(rnd.intn(3))
			do(step+" task", func(s stores.Store) (any, error) {
				if create {
					return nil, s.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: &stores.MoveTask{Handle: h, SourceArn: q, Status: status, StartedAt: now}})
				}
				return s.MoveTaskUpdate(ctx, &stores.MoveTaskUpdateParams{Task: &stores.MoveTask{Handle: h, SourceArn: q, Status: status, StartedAt: now, Moved: int64(i)}, IfVersion: version})
			})
		case op < 19:
			do(step+" maintain", func(s stores.Store) (any, error) { return nil, s.Maintain(ctx, &stores.MaintainParams{Now: now}) })
		case op < 20:
			// The queue again under its name: it gives out its sequence
			// numbers again, so new messages take keys that earlier ones,
			// perhaps folded into the database, had.
			do(step+" delete and create again", func(s stores.Store) (any, error) {
				if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q, Now: now}); err != nil {
					return nil, err
				}
				return s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: q, ID: fmt.Sprintf("%s-%d", q, i), FIFO: fifo, Retention: 300 * sec}, Now: now})
			})
		default:
			if err := emb.Close(); err != nil {
				t.Fatal(err)
			}
			emb = open(t, dir)
		}
		do(step+" stats", func(s stores.Store) (any, error) {
			return s.QueueStats(ctx, &stores.QueueStatsParams{Name: q, Now: now})
		})
	}
	do("tasks", func(s stores.Store) (any, error) { return s.MoveTaskList(ctx, &stores.MoveTaskListParams{}) })
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	emb = open(t, dir)
	for _, q := range queues {
		do("final drain "+q, func(s stores.Store) (any, error) {
			return s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q, Max: 1 << 20, VisibilityTimeout: sec, Token: "final", Now: now.Add(time.Minute)})
		})
	}
}

// TestConcurrentUse hammers one store from many goroutines (for the race
// detector and the committer's ordering), then checks that a reopened store
// agrees with what the callers were told.
func TestConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	createQueue(t, s, "q", false, t0)
	createQueue(t, s, "f.fifo", true, t0)
	const workers, each = 8, 40
	var mu sync.Mutex
	deleted := map[string]bool{}
	sent := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := worker(s, w, each, &mu, sent, deleted); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	left := map[string]bool{}
	for _, q := range []string{"q", "f.fifo"} {
		res := must(s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q, Max: 1 << 20, Token: "x", Now: time.Now().Add(2 * time.Hour)}))
		for _, m := range res.Messages {
			left[m.ID] = true
		}
	}
	for id := range sent {
		if deleted[id] == left[id] {
			t.Fatalf("message %s: deleted %v, still stored %v", id, deleted[id], left[id])
		}
	}
	eq(t, "accounted", len(deleted)+len(left), workers*each)
}

func worker(s *Store, w, each int, mu *sync.Mutex, sent, deleted map[string]bool) error {
	for i := range each {
		id := fmt.Sprintf("w%d-%d", w, i)
		q := "q"
		if i%2 == 1 {
			q = "f.fifo"
		}
		_, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q, DedupWindow: time.Minute,
			Messages: []stores.NewMessage{{ID: id, Body: id, GroupID: strconv.Itoa(w), DedupID: id}}})
		if err != nil {
			return err
		}
		mu.Lock()
		sent[id] = true
		mu.Unlock()
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q, Max: 2, VisibilityTimeout: time.Hour, Token: id})
		if err != nil {
			return err
		}
		for _, m := range res.Messages {
			outs, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q, Receipts: []stores.Receipt{{MessageID: m.ID, Token: m.Token}}})
			if err != nil {
				return err
			}
			if len(outs.Outcomes) == 1 && outs.Outcomes[0] == stores.ReceiptCurrent {
				mu.Lock()
				deleted[m.ID] = true
				mu.Unlock()
			}
		}
	}
	return nil
}
