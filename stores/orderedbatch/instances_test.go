package orderedbatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// twoInstances is one backend behind two protocol instances, each with its
// own cache of queue records, and a FIFO queue created through the first.
type twoInstances struct {
	t    *testing.T
	ctx  context.Context
	a, b *orderedbatch.Store
	q    *stores.Queue
	n    int
}

func newTwoInstances(t *testing.T) *twoInstances {
	docs := memdocs.New()
	e := newInstance(t, docs, orderedbatch.Options{Name: "memdocs"})
	e.b = orderedbatch.New(shared{docs}, orderedbatch.Options{Name: "memdocs"})
	return e
}

// newInstance is one protocol instance over docs, with the FIFO queue.
func newInstance(t *testing.T, docs docstore.Store, opts orderedbatch.Options) *twoInstances {
	e := &twoInstances{t: t, ctx: context.Background(), a: orderedbatch.New(docs, opts)}
	res, err := e.a.QueueCreate(e.ctx, &stores.QueueCreateParams{Now: time.Now(),
		Queue: &stores.Queue{Name: "q.fifo", ID: "0123456789abcdef", FIFO: true, Attributes: map[string]string{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.q = res.Queue
	return e
}

func (e *twoInstances) send(via *orderedbatch.Store, group string) string {
	e.t.Helper()
	e.n++
	id := fmt.Sprintf("00000000-0000-0000-0000-%012d", e.n)
	_, err := via.MessageSend(e.ctx, &stores.MessageSendParams{QueueName: e.q.Name, QueueID: e.q.ID, DedupWindow: 5 * time.Minute, Now: time.Now(),
		Messages: []stores.NewMessage{{ID: id, Body: "body " + id, GroupID: group, DedupID: id}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *twoInstances) claim(via *orderedbatch.Store) []stores.ClaimedMessage {
	e.t.Helper()
	res, err := via.MessageClaim(e.ctx, &stores.MessageClaimParams{QueueName: e.q.Name, QueueID: e.q.ID, Max: 10,
		VisibilityTimeout: 30 * time.Second, Token: fmt.Sprintf("tok%d", e.n), Now: time.Now()})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Messages
}

func (e *twoInstances) purge(via *orderedbatch.Store) {
	e.t.Helper()
	if err := via.QueuePurge(e.ctx, &stores.QueuePurgeParams{Name: e.q.Name, ID: e.q.ID, Now: time.Now()}); err != nil {
		e.t.Fatal(err)
	}
}

func ids(ms []stores.ClaimedMessage) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// An instance that trusts its cached queue record finds, after a purge and
// a send through another instance, the message sent since: a claim that
// comes up empty reads the record before it says so, so that a long poll
// woken for that message does not miss it.
func TestClaimAfterPurgeElsewhereFindsNewMessages(t *testing.T) {
	e := newTwoInstances(t)
	e.send(e.b, "g") // b now knows the queue, generation 0
	e.purge(e.a)
	sent := e.send(e.a, "g")
	if got := ids(e.claim(e.b)); len(got) != 1 || got[0] != sent {
		t.Fatalf("b's claim after a's purge and send returned %v, want [%s]", got, sent)
	}
}

// A delete through an instance whose cached record predates a purge
// elsewhere still deletes a message of the new generation (the transaction
// finds the newer group and runs again with the record read).
func TestDeleteAfterPurgeElsewhereApplies(t *testing.T) {
	e := newTwoInstances(t)
	e.send(e.b, "g")
	e.purge(e.a)
	sent := e.send(e.a, "g")
	got := e.claim(e.a)
	if len(got) != 1 || got[0].ID != sent {
		t.Fatalf("a's claim returned %v, want [%s]", ids(got), sent)
	}
	m := got[0]
	outs, err := e.b.MessageDelete(e.ctx, &stores.MessageDeleteParams{QueueName: e.q.Name, QueueID: e.q.ID, Now: time.Now(),
		Receipts: []stores.Receipt{{MessageID: m.ID, Token: m.Token, Locator: m.Locator}}})
	if err != nil {
		t.Fatal(err)
	}
	if outs.Outcomes[0] != stores.ReceiptCurrent {
		t.Errorf("b's delete of a's current receipt: outcome %v, want ReceiptCurrent", outs.Outcomes[0])
	}
	// Deleted: once its visibility would have ended it does not come back.
	res, err := e.a.MessageClaim(e.ctx, &stores.MessageClaimParams{QueueName: e.q.Name, QueueID: e.q.ID, Max: 10,
		VisibilityTimeout: 30 * time.Second, Token: "later", Now: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 0 {
		t.Errorf("after b's delete, a claim a minute later returned %v, want nothing", ids(res.Messages))
	}
}

// A purge through another instance reaches an instance's claims once its
// cached record is older than the time it is trusted (a second).
func TestPurgeElsewhereReachesClaimsWithinASecond(t *testing.T) {
	e := newTwoInstances(t)
	old := e.send(e.b, "g")
	e.purge(e.a)
	time.Sleep(time.Second + 100*time.Millisecond)
	if got := ids(e.claim(e.b)); len(got) != 0 {
		t.Errorf("b's claim a second after a's purge returned %v (the purged %s), want nothing", got, old)
	}
}

// Maintain removes expired dedup markers, unless the backend does
// (Options.ExpiredByBackend, a TTL policy): then it leaves them.
func TestMaintainLeavesExpiredToBackend(t *testing.T) {
	for _, byBackend := range []bool{false, true} {
		t.Run(fmt.Sprintf("ExpiredByBackend=%v", byBackend), func(t *testing.T) {
			docs := memdocs.New()
			e := newInstance(t, docs, orderedbatch.Options{Name: "memdocs", ExpiredByBackend: byBackend})
			st := e.a
			e.send(st, "g")
			markers := func() int64 {
				n, err := docs.Count(e.ctx, docstore.Query{Collection: "dedup"})
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n := markers(); n != 1 {
				t.Fatalf("%d dedup markers after a send, want 1", n)
			}
			if err := st.Maintain(e.ctx, &stores.MaintainParams{Now: time.Now().Add(10 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			if byBackend {
				want = 1
			}
			if n := markers(); n != want {
				t.Errorf("%d dedup markers after Maintain past the window, want %d", n, want)
			}
		})
	}
}

// rivalDocs runs rival before each transaction: another receiver that
// always gets to the candidates first.
type rivalDocs struct {
	docstore.Store
	rival func()
}

func (r rivalDocs) RunTx(ctx context.Context, fn func(context.Context, docstore.Tx) error) error {
	r.rival()
	return r.Store.RunTx(ctx, fn)
}

// A claim whose every try loses its candidates to another receiver, while
// messages keep arriving, reports Contended (so that a long poll looks
// again soon, and nobody remembers the queue as empty) instead of an empty
// answer that looks like an empty queue; a claim of an empty queue does
// not.
func TestClaimThatLosesEveryCandidateSaysContended(t *testing.T) {
	docs := memdocs.New()
	e := newInstance(t, docs, orderedbatch.Options{Name: "memdocs"})
	racing, rivals := false, 0
	loser := orderedbatch.New(rivalDocs{docs, func() {
		if !racing {
			return
		}
		rivals++
		res, err := e.a.MessageClaim(e.ctx, &stores.MessageClaimParams{QueueName: e.q.Name, QueueID: e.q.ID, Max: 10,
			VisibilityTimeout: time.Hour, Token: fmt.Sprintf("rival%d", rivals), Now: time.Now()})
		if err != nil || len(res.Messages) == 0 {
			t.Errorf("the rival took nothing (%v)", err)
		}
		e.send(e.a, fmt.Sprintf("g%d", rivals)) // the next try finds this one
	}}, orderedbatch.Options{Name: "memdocs"})
	claim := func() *stores.MessageClaimResult {
		t.Helper()
		res, err := loser.MessageClaim(e.ctx, &stores.MessageClaimParams{QueueName: e.q.Name, QueueID: e.q.ID, Max: 1,
			// A minute ahead, so that the messages the rival sends while
			// the claim runs are as receivable to it as those sent before.
			VisibilityTimeout: 30 * time.Second, Token: "loser", Now: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := claim(); res.Contended || len(res.Messages) != 0 {
		t.Fatalf("a claim of an empty queue: %d messages, contended %v; want none, false", len(res.Messages), res.Contended)
	}
	e.send(e.a, "g0")
	racing = true
	res := claim()
	racing = false
	if len(res.Messages) != 0 || !res.Contended {
		t.Fatalf("a claim that lost every try (%d tries): %d messages, contended %v; want none, true", rivals, len(res.Messages), res.Contended)
	}
	if got := e.claim(e.a); len(got) != 1 {
		t.Errorf("after the contended claim %d messages were receivable, want the 1 the rival left", len(got))
	}
}
