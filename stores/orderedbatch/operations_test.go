package orderedbatch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// ops counts what a backend would bill the protocol, as Firestore bills:
// a document read per key read and per document a query returns (one for
// an empty answer), a write per Set or Create, a delete per Delete.
type ops struct {
	docstore.Store
	mu                    sync.Mutex
	reads, writes, dels   int
	groupReads, queueRead int // reads in transactions of group and queue records
	aggregations          int // Count and Sum queries (each also a read)
}

type opsTx struct {
	docstore.Tx
	o *ops
}

func (o *ops) add(r, w, d int) {
	o.mu.Lock()
	o.reads, o.writes, o.dels = o.reads+r, o.writes+w, o.dels+d
	o.mu.Unlock()
}

func (o *ops) take() (r, w, d, groups, queues int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, w, d, groups, queues = o.reads, o.writes, o.dels, o.groupReads, o.queueRead
	o.reads, o.writes, o.dels, o.groupReads, o.queueRead = 0, 0, 0, 0, 0
	return
}

func (o *ops) Get(ctx context.Context, keys ...docstore.Key) ([]*docstore.Doc, error) {
	o.add(len(keys), 0, 0)
	return o.Store.Get(ctx, keys...)
}

func (o *ops) Query(ctx context.Context, q docstore.Query) ([]*docstore.Doc, error) {
	d, err := o.Store.Query(ctx, q)
	o.add(max(len(d), 1), 0, 0)
	return d, err
}

// takeAggregations returns the aggregation queries since the last call.
func (o *ops) takeAggregations() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.aggregations
	o.aggregations = 0
	return n
}

func (o *ops) Count(ctx context.Context, q docstore.Query) (int64, error) {
	o.add(1, 0, 0)
	o.mu.Lock()
	o.aggregations++
	o.mu.Unlock()
	return o.Store.Count(ctx, q)
}

func (o *ops) Sum(ctx context.Context, q docstore.Query, f string) (int64, error) {
	o.add(1, 0, 0)
	o.mu.Lock()
	o.aggregations++
	o.mu.Unlock()
	return o.Store.Sum(ctx, q, f)
}

func (o *ops) RunTx(ctx context.Context, fn func(context.Context, docstore.Tx) error) error {
	return o.Store.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error { return fn(ctx, opsTx{tx, o}) })
}

func (t opsTx) Get(ctx context.Context, keys ...docstore.Key) ([]*docstore.Doc, error) {
	t.o.add(len(keys), 0, 0)
	t.o.mu.Lock()
	for _, k := range keys {
		switch k.Collection {
		case "groups":
			t.o.groupReads++
		case "queues":
			t.o.queueRead++
		}
	}
	t.o.mu.Unlock()
	return t.Tx.Get(ctx, keys...)
}

func (t opsTx) Set(k docstore.Key, f docstore.Fields) error { t.o.add(0, 1, 0); return t.Tx.Set(k, f) }
func (t opsTx) Create(k docstore.Key, f docstore.Fields) error {
	t.o.add(0, 1, 0)
	return t.Tx.Create(k, f)
}
func (t opsTx) Delete(k docstore.Key) error { t.o.add(0, 0, 1); return t.Tx.Delete(k) }

// The operations of an unbatched FIFO lifecycle, in steady state (the
// group and the cached queue record known): what the README's Firestore
// table says, 12 in all.
func TestLifecycleOperations(t *testing.T) {
	o := &ops{Store: memdocs.New()}
	e := newInstance(t, o, orderedbatch.Options{Name: "memdocs"})
	st := e.a
	for round := range 3 {
		e.send(st, "g")
		sr, sw, sd, _, _ := o.take()
		got := e.claim(st)
		if len(got) != 1 {
			t.Fatalf("round %d: claimed %d messages, want 1", round, len(got))
		}
		cr, cw, cd, _, _ := o.take()
		m := got[0]
		if _, err := st.MessageDelete(e.ctx, &stores.MessageDeleteParams{QueueName: e.q.Name, QueueID: e.q.ID, Now: time.Now(),
			Receipts: []stores.Receipt{{MessageID: m.ID, Token: m.Token, Locator: m.Locator}}}); err != nil {
			t.Fatal(err)
		}
		dr, dw, dd, _, _ := o.take()
		if round == 0 {
			continue // the group's first send also numbers it
		}
		for _, c := range []struct {
			call         string
			r, w, d      int
			wantR, wantW int
			wantD        int
		}{
			{"send", sr, sw, sd, 2, 3, 0},   // queue, group; manifest, group, dedup marker (created unread)
			{"claim", cr, cw, cd, 3, 1, 0},  // candidate query, group, manifest; group
			{"delete", dr, dw, dd, 1, 1, 1}, // group; group; manifest
		} {
			if c.r != c.wantR || c.w != c.wantW || c.d != c.wantD {
				t.Errorf("round %d: %s: %d reads, %d writes, %d deletes; want %d, %d, %d", round, c.call, c.r, c.w, c.d, c.wantR, c.wantW, c.wantD)
			}
		}
	}
}

// A receive of ten that the oldest group can fill reads that group in its
// transaction, not every candidate the query found.
func TestClaimReadsTheGroupsItNeeds(t *testing.T) {
	o := &ops{Store: memdocs.New()}
	e := newInstance(t, o, orderedbatch.Options{Name: "memdocs"})
	st := e.a
	for range 10 {
		e.send(st, "g0")
	}
	time.Sleep(time.Millisecond) // the other groups' heads are younger
	for i := 1; i < 10; i++ {
		e.send(st, fmt.Sprintf("g%d", i))
	}
	o.take()
	got := e.claim(st)
	if len(got) != 10 {
		t.Fatalf("claimed %d messages, want 10", len(got))
	}
	for _, m := range got {
		if m.GroupID != "g0" {
			t.Fatalf("claimed a message of %s, want all ten from g0, the oldest", m.GroupID)
		}
	}
	if _, _, _, groups, _ := o.take(); groups != 1 {
		t.Errorf("the claim's transaction read %d group records, want 1", groups)
	}
	// The rest is claimed group by group, in rounds, all in one receive.
	if got := e.claim(st); len(got) != 9 {
		t.Errorf("the next claim got %d messages, want the other nine groups' heads", len(got))
	}
}

// A delete that leaves a message never received at the group's head ranks
// the group from that message's send, which the group remembers: it reads
// the group record only, not the next manifest.
func TestDeleteBeforeABacklogReadsTheGroupOnly(t *testing.T) {
	o := &ops{Store: memdocs.New()}
	e := newInstance(t, o, orderedbatch.Options{Name: "memdocs"})
	st := e.a
	e.send(st, "g")
	e.send(st, "g")
	e.send(st, "g")
	for round := range 2 {
		res, err := st.MessageClaim(e.ctx, &stores.MessageClaimParams{QueueName: e.q.Name, QueueID: e.q.ID, Max: 1,
			VisibilityTimeout: 30 * time.Second, Token: fmt.Sprintf("t%d", round), Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Messages
		if len(got) != 1 {
			t.Fatalf("round %d: claimed %d messages, want 1 (the group's head; the rest waits behind it)", round, len(got))
		}
		o.take()
		m := got[0]
		if _, err := st.MessageDelete(e.ctx, &stores.MessageDeleteParams{QueueName: e.q.Name, QueueID: e.q.ID, Now: time.Now(),
			Receipts: []stores.Receipt{{MessageID: m.ID, Token: m.Token, Locator: m.Locator}}}); err != nil {
			t.Fatal(err)
		}
		if r, w, d, _, _ := o.take(); r != 1 || w != 1 || d != 1 {
			t.Errorf("round %d: delete with messages behind: %d reads, %d writes, %d deletes; want 1, 1, 1", round, r, w, d)
		}
	}
}

// The same Standard receipt twice in one delete: the second finds its
// message deleted by the first (stores.ReceiptGone), as the store contract
// says, so the service counts one deletion.
func TestSameStandardReceiptTwiceInOneDelete(t *testing.T) {
	st := orderedbatch.New(memdocs.New(), orderedbatch.Options{Name: "memdocs"})
	ctx := context.Background()
	now := time.Now()
	q, err := st.QueueCreate(ctx, &stores.QueueCreateParams{Now: now, Queue: &stores.Queue{Name: "q", ID: "0123456789abcdef", Attributes: map[string]string{}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.MessageSend(ctx, &stores.MessageSendParams{QueueName: "q", QueueID: q.Queue.ID, Now: now,
		Messages: []stores.NewMessage{{ID: "00000000-0000-0000-0000-000000000001", Body: "b"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := st.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: "q", QueueID: q.Queue.ID, Max: 1, VisibilityTimeout: time.Minute, Token: "t", Now: now})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("claim: %v, %d messages", err, len(res.Messages))
	}
	m := res.Messages[0]
	r := stores.Receipt{MessageID: m.ID, Token: m.Token, Locator: m.Locator}
	del, err := st.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: "q", QueueID: q.Queue.ID, Now: now, Receipts: []stores.Receipt{r, r}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []stores.ReceiptOutcome{stores.ReceiptCurrent, stores.ReceiptGone}; !slices.Equal(del.Outcomes, want) {
		t.Errorf("outcomes %v, want %v", del.Outcomes, want)
	}
}
