package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
)

// claimOp is a fast claim of one message under token, as MessageClaim makes it.
func claimOp(q *stores.Queue, token string) queueOp {
	return queueOp{claim: fastClaimReq{p: &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
		VisibilityTimeout: time.Hour, Token: token}, fifo: q.FIFO}}
}

// sendOp is a send of msgs, as MessageSend makes it.
func sendOp(t *testing.T, q *stores.Queue, msgs ...stores.NewMessage) queueOp {
	t.Helper()
	enc, err := encodeMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return queueOp{send: &queueSend{p: &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs, DedupWindow: 5 * time.Minute}, enc: enc, fifo: q.FIFO}}
}

func deleteOp(q *stores.Queue, receipts ...stores.Receipt) queueOp {
	return queueOp{del: &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID, Receipts: receipts,
		KeepExpired: q.FIFO}}
}

// failsOnDeletedQueue deletes q, then runs ops in one batch, each of
// which must fail with ErrQueueNotFound.
func failsOnDeletedQueue(t *testing.T, s *Store, q *stores.Queue, ops ...queueOp) {
	t.Helper()
	ctx := context.Background()
	if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name, ID: q.ID}); err != nil {
		t.Fatal(err)
	}
	res, err := s.runQueueBatch(ctx, batchKey{}, ops)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !errors.Is(r.err, stores.ErrQueueNotFound) {
			t.Errorf("call %d on a deleted queue: %v, want ErrQueueNotFound", i, r.err)
		}
	}
}

// claimed is the one message a claim got.
func claimed(t *testing.T, got []stores.ClaimedMessage) stores.ClaimedMessage {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("claimed %d messages, want 1", len(got))
	}
	return got[0]
}

// holdGroup begins a transaction that holds the row lock of q's group, as
// a claim does; the test's end rolls it back.
func holdGroup(t *testing.T, s *Store, q *stores.Queue, group string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM fifo_groups WHERE queue_id = $1 AND group_id = $2 FOR NO KEY UPDATE`, q.ID, group); err != nil {
		t.Fatal(err)
	}
	return tx
}

// lockWaiters counts the backends that wait for locks the holders hold,
// directly or queued behind another such waiter. Lock tests wait for these
// to set the order of events, whatever the machine's load.
func lockWaiters(t *testing.T, s *Store, holders ...pgx.Tx) func() int {
	t.Helper()
	ctx := context.Background()
	var pids []int32
	for _, h := range holders {
		var pid int32
		if err := h.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return func() int {
		var n int
		if err := s.pool.QueryRow(ctx, `WITH RECURSIVE w(pid) AS (
				SELECT unnest($1::int[])
				UNION
				SELECT a.pid FROM pg_stat_activity a, w WHERE w.pid = ANY(pg_blocking_pids(a.pid)))
			SELECT count(*) - cardinality($1::int[]) FROM w`, pids).Scan(&n); err != nil {
			t.Error(err)
		}
		return n
	}
}

// waitQueued waits until n backends wait for the holders' locks.
func waitQueued(t *testing.T, s *Store, n int, holders ...pgx.Tx) {
	t.Helper()
	waiters := lockWaiters(t, s, holders...)
	waitFor(t, func() bool { return waiters() >= n })
}

// A batch of deletes and claims runs the deletes first, in the same
// transaction: a claim batched with the delete of its group's head gets
// the group's next message, wherever it stands in the batch.
func TestDeletesGoBeforeClaimsInABatch(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, randomName("q")+".fifo", true)
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{newMsg("first", "g", randomName("d")), newMsg("second", "g", randomName("d"))}}); err != nil {
		t.Fatal(err)
	}
	first := claimed(t, claimOne(t, s, q))

	res, err := s.runQueueBatch(ctx, batchKey{}, []queueOp{claimOp(q, "t2"),
		deleteOp(q, stores.Receipt{MessageID: first.ID, Token: first.Token})})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].err != nil || res[1].err != nil {
		t.Fatalf("errors: claim %v, delete %v", res[0].err, res[1].err)
	}
	if got := res[1].del.Outcomes; len(got) != 1 || got[0] != stores.ReceiptCurrent || res[1].del.Freed != 1 {
		t.Errorf("delete: outcomes %v, freed %d; want [current], 1", got, res[1].del.Freed)
	}
	if got := res[0].claim.Messages; len(got) != 1 || got[0].Body != "second" || got[0].Token != "t2" {
		t.Errorf("the claim batched with the head's delete got %+v, want the group's second message", got)
	}
}

// Each delete in a batch gets its own receipts' outcomes, also when the
// plain statement leaves some to sluice_delete_freeing, and a queue that is
// gone fails every call of its batch with ErrQueueNotFound.
func TestBatchedDeletesGetTheirOwnOutcomes(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, randomName("q"), false)
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{newMsg("a", "", ""), newMsg("b", "", ""), newMsg("c", "", "")}}); err != nil {
		t.Fatal(err)
	}
	a, b := claimed(t, claimOne(t, s, q)), claimed(t, claimOne(t, s, q))
	res, err := s.runQueueBatch(ctx, batchKey{}, []queueOp{
		deleteOp(q, stores.Receipt{MessageID: a.ID, Token: a.Token}),
		claimOp(q, "tc"),
		deleteOp(q, stores.Receipt{MessageID: b.ID, Token: "forged"}, stores.Receipt{MessageID: "m-none", Token: "x"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	if got := res[0].del.Outcomes; len(got) != 1 || got[0] != stores.ReceiptCurrent {
		t.Errorf("first delete: %v, want [current]", got)
	}
	if got := res[2].del.Outcomes; len(got) != 2 || got[0] != stores.ReceiptEarlier || got[1] != stores.ReceiptGone {
		t.Errorf("second delete: %v, want [earlier gone]", got)
	}
	if got := res[1].claim.Messages; len(got) != 1 || got[0].Body != "c" {
		t.Errorf("claim: %+v, want c", got)
	}

	failsOnDeletedQueue(t, s, q, deleteOp(q, stores.Receipt{MessageID: a.ID, Token: a.Token}), claimOp(q, "td"))
}

// A batch runs its Standard sends first, then its deletes, then its
// claims, in one transaction: each send gets its own messages' ids, and a
// claim in the batch gets the messages the batch sent. On a queue that is
// gone, every call of the batch fails with ErrQueueNotFound.
func TestStandardSendsGoFirstInABatch(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, randomName("q"), false)
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{newMsg("a", "", "")}}); err != nil {
		t.Fatal(err)
	}
	a := claimed(t, claimOne(t, s, q))

	b, c, d := newMsg("b", "", ""), newMsg("c", "", ""), newMsg("d", "", "")
	claim := claimOp(q, "t2")
	claim.claim.p.Max = 10
	res, err := s.runQueueBatch(ctx, batchKey{}, []queueOp{claim, sendOp(t, q, b, c),
		deleteOp(q, stores.Receipt{MessageID: a.ID, Token: a.Token}), sendOp(t, q, d)})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	for i, want := range map[int][]string{1: {b.ID, c.ID}, 3: {d.ID}} {
		var got []string
		for _, r := range res[i].send.Results {
			got = append(got, r.MessageID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("send %d: message ids %v, want %v", i, got, want)
		}
	}
	if got := res[2].del.Outcomes; len(got) != 1 || got[0] != stores.ReceiptCurrent {
		t.Errorf("delete: %v, want [current]", got)
	}
	var bodies []string
	for _, m := range res[0].claim.Messages {
		bodies = append(bodies, m.Body)
	}
	slices.Sort(bodies)
	if !slices.Equal(bodies, []string{"b", "c", "d"}) {
		t.Errorf("the claim batched with the sends got %v, want [b c d]", bodies)
	}

	failsOnDeletedQueue(t, s, q, sendOp(t, q, newMsg("e", "", "")), claimOp(q, "t3"))
}

// Through the store's methods, concurrent sends, receives and deletes of a
// queue share transactions (batches hold sends with deletes or claims, and
// deletes with claims), every message sent is received once and deleted,
// and a FIFO queue's groups keep their order.
func TestProducersAndConsumersShareTransactions(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		name := map[bool]string{false: "standard", true: "fifo"}[fifo]
		t.Run(name, func(t *testing.T) { producersAndConsumers(t, fifo) })
	}
}

func producersAndConsumers(t *testing.T, fifo bool) {
	s := newTestStore(t)
	ctx := context.Background()
	// Every tenth batch waits, so that the calls behind it queue up.
	var batches, withSends, delsAndClaims atomic.Int64
	run := s.queueOps.run
	s.queueOps.run = func(ctx context.Context, key batchKey, ops []queueOp) ([]queueRes, error) {
		if batches.Add(1)%10 == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		var sends, dels, claims bool
		for _, op := range ops {
			sends, dels, claims = sends || op.send != nil, dels || op.del != nil, claims || op.claim.p != nil
		}
		if sends && (dels || claims) {
			withSends.Add(1)
		}
		if dels && claims {
			delsAndClaims.Add(1)
		}
		return run(ctx, key, ops)
	}
	name := randomName("q")
	if fifo {
		name += ".fifo"
	}
	q := createQueue(t, s, name, fifo)
	// Each producer sends to a group of its own, one message at a time,
	// so a group's order is its producer's.
	const producers, perProducer = 4, 50
	var wg sync.WaitGroup
	sent := make(chan string, producers*perProducer)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			group := ""
			if fifo {
				group = string(rune('a' + p))
			}
			for i := range perProducer {
				m := newMsg(fmt.Sprintf("%c/%03d", 'a'+p, i), group, randomName("d"))
				res, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
					Messages: []stores.NewMessage{m}, DedupWindow: 5 * time.Minute})
				if err != nil || res.Results[0].MessageID != m.ID {
					t.Errorf("producer %d: %v %+v", p, err, res)
					return
				}
				sent <- m.ID
				time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
			}
		}()
	}
	var mu sync.Mutex
	received := map[string]int{}
	last := map[string]string{} // group → body last received
	var consumers sync.WaitGroup
	for w := range 4 {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			for empty := 0; empty < 40; {
				res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
					VisibilityTimeout: time.Hour, Token: randomName("t")})
				if err != nil {
					t.Errorf("consumer %d: %v", w, err)
					return
				}
				if len(res.Messages) == 0 {
					empty++
					time.Sleep(5 * time.Millisecond)
					continue
				}
				m := res.Messages[0]
				mu.Lock()
				received[m.ID]++
				if fifo && m.Body <= last[m.GroupID] {
					t.Errorf("group %s: %s after %s", m.GroupID, m.Body, last[m.GroupID])
				}
				last[m.GroupID] = m.Body
				mu.Unlock()
				// Consumers would otherwise keep in step, all claiming,
				// then all deleting.
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
				d, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
					Receipts: []stores.Receipt{{MessageID: m.ID, Token: m.Token}}, KeepExpired: fifo})
				if err != nil || d.Outcomes[0] != stores.ReceiptCurrent {
					t.Errorf("consumer %d: delete %v %+v", w, err, d)
					return
				}
			}
		}()
	}
	wg.Wait()
	consumers.Wait()
	close(sent)
	for id := range sent {
		if received[id] != 1 {
			t.Errorf("message %s received %d times, want once", id, received[id])
		}
	}
	if len(received) != producers*perProducer {
		t.Errorf("received %d messages, want %d", len(received), producers*perProducer)
	}
	if withSends.Load() == 0 {
		t.Error("no batch held both a send and a delete or claim")
	}
	if delsAndClaims.Load() == 0 {
		t.Error("no batch held both a delete and a claim")
	}
	t.Logf("of %d batches, %d held sends with deletes or claims, %d deletes and claims",
		batches.Load(), withSends.Load(), delsAndClaims.Load())
}

// A FIFO send goes first in its queue's batch too: a claim batched with
// the delete of a group's head and a send to the group gets the group's
// next message, and the send its SequenceNumber. Within the batch, a
// later send of an earlier one's dedup id is its duplicate, and a send
// with another dedup window is sent after the batch, with the same result
// it would have alone.
func TestFIFOSendsGoFirstInABatch(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, randomName("q")+".fifo", true)
	first, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{newMsg("a1", "g", "d1")}, DedupWindow: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	a1 := claimed(t, claimOne(t, s, q))

	a2, dup, other := newMsg("a2", "g", "d2"), newMsg("a2 again", "g", "d2"), newMsg("b1", "h", "d3")
	alone := sendOp(t, q, other)
	alone.send.p.DedupWindow = 0 // no markers: never in a batch with the others
	res, err := s.runQueueBatch(ctx, batchKey{}, []queueOp{claimOp(q, "t2"), sendOp(t, q, a2),
		deleteOp(q, stores.Receipt{MessageID: a1.ID, Token: a1.Token}), sendOp(t, q, dup), alone})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	got := res[1].send.Results
	if len(got) != 1 || got[0].MessageID != a2.ID || got[0].Duplicate || got[0].SequenceNumber <= first.Results[0].SequenceNumber {
		t.Errorf("send: %+v, want a2's id and a SequenceNumber after %s", got, first.Results[0].SequenceNumber)
	}
	if d := res[3].send.Results; len(d) != 1 || !d[0].Duplicate || d[0].MessageID != a2.ID || d[0].SequenceNumber != got[0].SequenceNumber {
		t.Errorf("the batch's second send of d2: %+v, want a duplicate of %+v", d, got)
	}
	if b := res[4].send.Results; len(b) != 1 || b[0].MessageID != other.ID || b[0].Duplicate || b[0].SequenceNumber <= got[0].SequenceNumber {
		t.Errorf("the send with another window: %+v, want b1 stored after a2", b)
	}
	if o := res[2].del.Outcomes; len(o) != 1 || o[0] != stores.ReceiptCurrent {
		t.Errorf("delete: %v, want [current]", o)
	}
	if m := res[0].claim.Messages; len(m) != 1 || m[0].ID != a2.ID {
		t.Errorf("the claim batched with the head's delete and a send to its group got %+v, want a2", m)
	}

	failsOnDeletedQueue(t, s, q, sendOp(t, q, newMsg("c", "g", "d4")), claimOp(q, "t3"))
}

// A visibility change in a FIFO queue takes the group's row before the
// message's, as claims do: a transaction that holds the group can still
// take the message while the change waits for the group.
func TestVisibilityChangeTakesTheGroupFirst(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, randomName("q")+".fifo", true)
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{newMsg("m", "g", randomName("d"))}}); err != nil {
		t.Fatal(err)
	}
	m := claimed(t, claimOne(t, s, q))

	holder := holdGroup(t, s, q, "g")
	changed := make(chan error, 1)
	go func() {
		_, err := s.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: q.Name, QueueID: q.ID,
			MessageID: m.ID, Token: m.Token, Timeout: 0})
		changed <- err
	}()
	waitQueued(t, s, 1, holder) // the change is waiting
	if _, err := holder.Exec(ctx, `SET LOCAL lock_timeout = '500ms'`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `UPDATE messages SET receive_count = receive_count WHERE message_id = $1`, m.ID); err != nil {
		t.Fatalf("the group's holder could not take its message while a visibility change waited: %v", err)
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-changed; err != nil {
		t.Fatal(err)
	}
}

// A receive that replays an earlier attempt takes its messages' groups
// before the messages, as claims do. Locking the messages alone (by id),
// it held one while waiting for the next, which a claim holding both
// groups had taken while waiting for the first: a deadlock, which
// PostgreSQL broke after deadlock_timeout (with retries off here, the
// victim's error).
func TestReplayTakesGroupsFirst(t *testing.T) {
	s := newTestStore(t)
	s.retries = 0
	ctx := context.Background()
	q := createQueue(t, s, randomName("q")+".fifo", true)
	t0 := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	// b's message is sent first (claims take group b first) and has the
	// greater id (the replay locks it second).
	mb, ma := newMsg("b", "b", randomName("d")), newMsg("a", "a", randomName("d"))
	mb.ID, ma.ID = "m-z-"+randomName(""), "m-a-"+randomName("")
	for _, m := range []stores.NewMessage{mb, ma} {
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Now: t0,
			Messages: []stores.NewMessage{m}}); err != nil {
			t.Fatal(err)
		}
	}
	attempt := func(token string, now time.Time) *stores.MessageClaimParams {
		return &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10, VisibilityTimeout: time.Second,
			Token: token, AttemptID: "att", AttemptWindow: 5 * time.Minute, Now: now}
	}
	if res, err := s.MessageClaim(ctx, attempt("t1", t0.Add(time.Second))); err != nil || len(res.Messages) != 2 {
		t.Fatalf("first receive: %+v, %v", res, err)
	}
	later := t0.Add(10 * time.Second) // the visibility is over, the attempt window is not

	// Another transaction holds a's message, so that the replay and then
	// a claim queue up on it.
	x, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Rollback(ctx)
	if _, err := x.Exec(ctx, `SELECT 1 FROM messages WHERE message_id = $1 FOR UPDATE`, ma.ID); err != nil {
		t.Fatal(err)
	}
	replayed, claimed := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := s.MessageClaim(ctx, attempt("t2", later))
		replayed <- err
	}()
	waitQueued(t, s, 1, x) // the replay waits for a's message
	go func() {
		_, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
			VisibilityTimeout: time.Minute, Token: "t3", Now: later})
		claimed <- err
	}()
	// The claim queues up behind the replay, or (the replay holding both
	// groups) gets nothing at once.
	waiters := lockWaiters(t, s, x)
	waitFor(t, func() bool { return len(claimed) > 0 || waiters() >= 2 })
	if err := x.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-replayed; err != nil {
		t.Errorf("the replay: %v", err)
	}
	if err := <-claimed; err != nil {
		t.Errorf("the claim: %v", err)
	}
}

// A receive that redrives in several rounds takes the groups of what it
// moves without waiting: it holds its earlier rounds' groups, and a delete
// that holds the later group may be waiting for one of those. Waiting, it
// deadlocked with the delete (with retries off here, the victim's error).
// The other transactions only hold locks to set the order of events.
func TestRedriveRoundsDoNotWaitForGroups(t *testing.T) {
	s := newTestStore(t)
	s.retries = 0
	ctx := context.Background()
	q := createQueue(t, s, randomName("q")+".fifo", true)
	dlq := createQueue(t, s, randomName("dlq")+".fifo", true)
	m1, c0, c1 := newMsg("m1", "m", randomName("d")), newMsg("c0", "c", randomName("d")), newMsg("c1", "c", randomName("d"))
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{m1, c0, c1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET receive_count = 5 WHERE message_id = ANY($1::text[])`, []string{m1.ID, c1.ID}); err != nil {
		t.Fatal(err)
	}
	hold := func(sql string, args ...any) pgx.Tx {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(ctx) })
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	groupC := holdGroup(t, s, q, "c")
	messageC0 := hold(`SELECT 1 FROM messages WHERE message_id = $1 FOR UPDATE`, c0.ID)
	sendM := hold(sendLockSQL, []string{groupSendKey(dlq.ID, "m")})
	receive := func(token string) (*stores.MessageClaimResult, error) {
		return s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
			VisibilityTimeout: time.Minute, Token: token, Redrive: &stores.Redrive{MaxReceiveCount: 3, QueueName: dlq.Name}})
	}
	received := make(chan error, 1)
	var first *stores.MessageClaimResult
	go func() {
		var err error
		first, err = receive("t")
		received <- err
	}()
	waitQueued(t, s, 1, sendM) // round 1 holds m and waits to move m1
	if err := groupC.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sendM.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, s, 1, messageC0) // round 2 holds c and waits for c0
	deleted := make(chan error, 1)
	go func() {
		_, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID, KeepExpired: true,
			Receipts: []stores.Receipt{{MessageID: c0.ID, Token: "x"}, {MessageID: m1.ID, Token: "x"}}})
		deleted <- err
	}()
	waitQueued(t, s, 2, messageC0) // the delete waits for c, held by the receive
	if err := messageC0.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-received; err != nil {
		t.Fatalf("the receive: %v", err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("the delete: %v", err)
	}
	// When the receive undoes its round it lets group c go, and the delete
	// waiting for c usually takes it first: then the first receive moved
	// m1 and left c's over-received c1 (its group busy), and the next moves
	// c1 and returns c0. If the receive's next statement comes first, the
	// first receive does all of that itself (a race on a loaded machine).
	// Either way neither deadlocked, c0 was returned once, and m1 and c1
	// were moved, in order.
	next, err := receive("t2")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first receive: %v, %d redriven; next: %v, %d redriven", ids(first.Messages), first.Redriven,
		ids(next.Messages), next.Redriven)
	if got := append(ids(first.Messages), ids(next.Messages)...); !slices.Equal(got, []string{c0.ID}) {
		t.Errorf("the two receives returned %v, want c0 once", got)
	}
	if n := first.Redriven + next.Redriven; n != 2 {
		t.Errorf("the two receives redrove %d messages, want 2 (m1, c1)", n)
	}
	if got := bodies(t, s, dlq); !slices.Equal(got, []string{"m1", "c1"}) {
		t.Errorf("dead-letter queue: %q, want m1, c1", got)
	}
}

// bodies are the bodies of q's messages, in order.
func bodies(t *testing.T, s *Store, q *stores.Queue) []string {
	t.Helper()
	var out []string
	if err := s.pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(body ORDER BY seq), '{}') FROM messages
		WHERE queue_id = $1 AND seq > 0`, q.ID).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Messages of one group redriven together keep their order in the
// dead-letter queue, also when their ids sort the other way and the
// queue is large enough for the lookup by id to walk the primary key.
func TestRedriveKeepsGroupOrder(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, randomName("q")+".fifo", true)
	dlq := createQueue(t, s, randomName("dlq")+".fifo", true)
	first, second := newMsg("first", "g", randomName("d")), newMsg("second", "g", randomName("d"))
	first.ID, second.ID = "m-z-"+randomName(""), "m-a-"+randomName("")
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{first, second}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET receive_count = 5 WHERE queue_id = $1`, q.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO messages (queue_id, message_id, seq, group_id, body, md5_body, sent_at, visible_at)
		SELECT $1, 'bulk-' || i, nextval('message_seq'), 'h', 'b', 'x', now(), now() + interval '1 hour'
		FROM generate_series(1, 20000) i`, q.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE messages`); err != nil {
		t.Fatal(err)
	}
	res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
		VisibilityTimeout: time.Minute, Token: "t", Redrive: &stores.Redrive{MaxReceiveCount: 3, QueueName: dlq.Name}})
	if err != nil || res.Redriven != 2 {
		t.Fatalf("receive: %+v, %v; want 2 redriven", res, err)
	}
	if got := bodies(t, s, dlq); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("dead-letter queue: %q, want first, second", got)
	}
}

// A purge forgets receive attempts before it takes the queue's groups, as
// a replay takes its attempt's row before its groups: taking them the
// other way round, the two deadlocked (retries off here: the victim's
// error).
func TestPurgeAndReplayTakeAttemptsFirst(t *testing.T) {
	s := newTestStore(t)
	s.retries = 0
	ctx := context.Background()
	q := createQueue(t, s, randomName("q")+".fifo", true)
	t0 := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	mz, ma := newMsg("z", "z", randomName("d")), newMsg("a", "a", randomName("d"))
	for _, m := range []stores.NewMessage{mz, ma} { // z first: the purge meets it first
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Now: t0,
			Messages: []stores.NewMessage{m}}); err != nil {
			t.Fatal(err)
		}
	}
	attempt := func(token string, now time.Time) *stores.MessageClaimParams {
		return &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10, VisibilityTimeout: time.Minute,
			Token: token, AttemptID: "att", AttemptWindow: 5 * time.Minute, Now: now}
	}
	if res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
		VisibilityTimeout: time.Hour, Token: "other", Now: t0.Add(time.Second)}); err != nil || len(res.Messages) != 1 {
		t.Fatalf("z: %+v, %v", res, err)
	}
	if res, err := s.MessageClaim(ctx, attempt("t1", t0.Add(time.Second))); err != nil || len(res.Messages) != 1 {
		t.Fatalf("the attempt: %+v, %v", res, err)
	}
	// Another transaction holds z's message, so that the purge waits there
	// holding every group, and the replay queues up behind it.
	x, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Rollback(ctx)
	if _, err := x.Exec(ctx, `SELECT 1 FROM messages WHERE message_id = $1 FOR UPDATE`, mz.ID); err != nil {
		t.Fatal(err)
	}
	purged, replayed := make(chan error, 1), make(chan error, 1)
	go func() {
		purged <- s.QueuePurge(ctx, &stores.QueuePurgeParams{Name: q.Name, ID: q.ID, Now: t0.Add(2 * time.Second)})
	}()
	waitQueued(t, s, 1, x) // the purge waits for z's message
	go func() {
		_, err := s.MessageClaim(ctx, attempt("t2", t0.Add(3*time.Second)))
		replayed <- err
	}()
	waitQueued(t, s, 2, x) // and the replay behind it
	if err := x.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-purged; err != nil {
		t.Errorf("the purge: %v", err)
	}
	if err := <-replayed; err != nil {
		t.Errorf("the replay: %v", err)
	}
}

// A receive combined behind a send that waits for its group's send lock
// counts its visibility timeout from when it claims, not from when the
// batch's transaction began: counted from before the wait, the timeout
// would be over by the time the message is handed out, and a second
// receiver would get it at once.
func TestCombinedClaimCountsItsTimeoutFromItsOwnClock(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, randomName("q")+".fifo", true)
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
		Messages: []stores.NewMessage{newMsg("a", "a", randomName("d"))}, DedupWindow: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	// Another transaction holds group g's send lock for 1.5 s.
	const held, timeout = 1500 * time.Millisecond, time.Second
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, groupSendKey(q.ID, "g")); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(held); _ = tx.Rollback(ctx) }()

	first := queueOp{claim: fastClaimReq{p: &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
		VisibilityTimeout: timeout, Token: "first"}, fifo: true}}
	res, err := s.runQueueBatch(ctx, batchKey{}, []queueOp{sendOp(t, q, newMsg("b", "g", randomName("d"))), first})
	if err != nil || res[1].err != nil {
		t.Fatal(err, res[1].err)
	}
	got := claimed(t, res[1].claim.Messages)
	again, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
		VisibilityTimeout: timeout, Token: "second"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range again.Messages {
		if m.ID == got.ID {
			t.Errorf("message %s, received with a visibility timeout of %s behind a send that waited %s, went to a second receiver at once",
				got.Body, timeout, held)
		}
	}
}

// Two Standard deletes combined: one with a current receipt, deleted in
// the batch, which commits; one with a receipt that is not current, which
// a second statement judges after the batch. When that second statement
// fails, the first delete still succeeds: its message is gone, and an
// error would tell its caller otherwise.
func TestCombinedDeleteKeepsItsOutcomeWhenAnotherFailsAfter(t *testing.T) {
	s := newTestStore(t)
	q := createQueue(t, s, randomName("q"), false)
	ctx := context.Background()
	res, err := s.runQueueBatch(ctx, batchKey{}, []queueOp{sendOp(t, q, newMsg("a", "", ""), newMsg("b", "", ""))})
	if err != nil || res[0].err != nil {
		t.Fatal(err, res[0].err)
	}
	got, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 2,
		VisibilityTimeout: time.Hour, Token: "t"})
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("claimed %v, %v; want both messages", got, err)
	}
	a, b := got.Messages[0], got.Messages[1]
	// b's row is locked elsewhere, so the statement that judges its
	// earlier receipt waits for it until the batch's context ends.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM messages WHERE message_id = $1 FOR UPDATE`, b.ID); err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err = s.runQueueBatch(bctx, batchKey{}, []queueOp{
		deleteOp(q, stores.Receipt{MessageID: a.ID, Token: a.Token}),
		deleteOp(q, stores.Receipt{MessageID: b.ID, Token: "an earlier one"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[1].err == nil {
		t.Fatalf("the delete whose receipt could not be judged succeeded: %+v", res[1].del)
	}
	if res[0].err != nil || res[0].del == nil || !slices.Equal(res[0].del.Outcomes, []stores.ReceiptOutcome{stores.ReceiptCurrent}) {
		t.Errorf("the delete of a current receipt, committed: %v, %+v; want its outcome, current", res[0].err, res[0].del)
	}
}
