package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

func createQueue(t testing.TB, s *Store, name string, fifo bool) *stores.Queue {
	t.Helper()
	res, err := s.QueueCreate(context.Background(), &stores.QueueCreateParams{Queue: &stores.Queue{
		Name: name, ID: randomName("id-"), FIFO: fifo, Attributes: map[string]string{}, Retention: 4 * 24 * time.Hour,
	}})
	if err != nil {
		t.Fatalf("QueueCreate %s: %v", name, err)
	}
	return res.Queue
}

func newMsg(body, group, dedup string) stores.NewMessage {
	return stores.NewMessage{ID: randomName("m-"), Body: body, MD5OfBody: "x", GroupID: group, DedupID: dedup}
}

// N claimers on one FIFO queue, while senders keep adding to the same
// groups: a group is never with two claimers at once, every group is
// delivered in the order of its sequence numbers, nothing is lost and
// nothing is delivered twice.
func TestConcurrentFIFOClaims(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "c.fifo", true)

	const groups, perGroup, senders, claimers = 12, 25, 4, 8
	total := groups * perGroup

	var mu sync.Mutex
	sentSeq := map[string][]string{} // group -> sequence numbers, as sent
	bodyGroup := map[string]string{}
	owner := map[string]string{} // group -> token of the claim that holds it
	delivered := map[string][]string{}
	seen := map[string]bool{}
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}

	var sendWG sync.WaitGroup
	work := make(chan string, total)
	for g := 0; g < groups; g++ {
		for i := 0; i < perGroup; i++ {
			work <- fmt.Sprintf("g%02d", g)
		}
	}
	close(work)
	var n atomic.Int64
	for w := 0; w < senders; w++ {
		sendWG.Add(1)
		go func() {
			defer sendWG.Done()
			for {
				var batch []stores.NewMessage
				for len(batch) < 1+rand.IntN(4) {
					g, ok := <-work
					if !ok {
						break
					}
					body := fmt.Sprintf("%s-%04d", g, n.Add(1))
					batch = append(batch, newMsg(body, g, body))
				}
				if len(batch) == 0 {
					return
				}
				res, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
					Messages: batch, DedupWindow: 5 * time.Minute})
				if err != nil {
					fail("send: %v", err)
					return
				}
				mu.Lock()
				for i, r := range res.Results {
					if r.Duplicate {
						failures = append(failures, "unexpected duplicate "+batch[i].Body)
					}
					sentSeq[batch[i].GroupID] = append(sentSeq[batch[i].GroupID], r.SequenceNumber)
					bodyGroup[batch[i].Body] = batch[i].GroupID
				}
				mu.Unlock()
			}
		}()
	}

	deadline := time.Now().Add(60 * time.Second)
	var count atomic.Int64
	var claimWG sync.WaitGroup
	for w := 0; w < claimers; w++ {
		claimWG.Add(1)
		go func() {
			defer claimWG.Done()
			for count.Load() < int64(total) && time.Now().Before(deadline) {
				token := randomName("tok-")
				res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID,
					Max: 1 + rand.IntN(10), VisibilityTimeout: 5 * time.Minute, Token: token})
				if err != nil {
					fail("claim: %v", err)
					return
				}
				if len(res.Messages) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				// Take ownership of every group in this delivery.
				runs := map[string][]stores.ClaimedMessage{}
				var order []string
				mu.Lock()
				for _, m := range res.Messages {
					if seen[m.ID] {
						failures = append(failures, "delivered twice: "+m.Body)
					}
					seen[m.ID] = true
					if _, ok := runs[m.GroupID]; !ok {
						order = append(order, m.GroupID)
						if o := owner[m.GroupID]; o != "" {
							failures = append(failures, fmt.Sprintf("group %s handed to %s while %s holds it", m.GroupID, token, o))
						}
						owner[m.GroupID] = token
					}
					runs[m.GroupID] = append(runs[m.GroupID], m)
					delivered[m.GroupID] = append(delivered[m.GroupID], m.SequenceNumber)
				}
				mu.Unlock()
				count.Add(int64(len(res.Messages)))
				// Delete each group's run in order; give the group up just
				// before its last delete (from then on its head is the
				// last message, still in flight, so nobody can take it).
				for _, g := range order {
					run := runs[g]
					for i, m := range run {
						if i == len(run)-1 {
							mu.Lock()
							if owner[g] == token {
								delete(owner, g)
							}
							mu.Unlock()
						}
						outs, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
							Receipts: []stores.Receipt{{MessageID: m.ID, Token: m.Token}}, KeepExpired: true})
						if err != nil || len(outs) != 1 || outs[0] != stores.ReceiptCurrent {
							fail("delete %s: outcomes %v, err %v", m.Body, outs, err)
						}
					}
				}
			}
		}()
	}
	sendWG.Wait()
	claimWG.Wait()

	for _, f := range failures {
		t.Error(f)
	}
	if got := count.Load(); got != int64(total) {
		t.Fatalf("delivered %d messages, want %d", got, total)
	}
	for g, sent := range sentSeq {
		want := append([]string(nil), sent...)
		sort.Strings(want) // 20 digits: string order is numeric order
		if fmt.Sprint(delivered[g]) != fmt.Sprint(want) {
			t.Errorf("group %s delivered in order %v, want %v", g, delivered[g], want)
		}
	}
	st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID})
	if err != nil {
		t.Fatal(err)
	}
	if *st != (stores.QueueStats{}) {
		t.Errorf("stats after draining = %+v, want zero", *st)
	}
}

// N claimers on one standard queue: every message exactly once.
func TestConcurrentStandardClaims(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "std", false)
	const total, claimers = 400, 8
	for i := 0; i < total; i += 10 {
		var batch []stores.NewMessage
		for j := 0; j < 10; j++ {
			batch = append(batch, newMsg(fmt.Sprintf("m%04d", i+j), "", ""))
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: batch}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	var empty atomic.Int64
	for w := 0; w < claimers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for empty.Load() < 3 {
				res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID,
					Max: 10, VisibilityTimeout: 5 * time.Minute, Token: randomName("tok-")})
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Messages) == 0 {
					empty.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				mu.Lock()
				for _, m := range res.Messages {
					seen[m.Body]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != total {
		t.Errorf("delivered %d distinct messages, want %d", len(seen), total)
	}
	for b, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", b, n)
		}
	}
}

// Concurrent sends with one deduplication id store one message, and every
// sender is told its id and sequence number.
func TestConcurrentDedupSends(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "d.fifo", true)
	const senders = 16
	var wg sync.WaitGroup
	results := make([]stores.SendResult, senders)
	errs := make([]error, senders)
	start := make(chan struct{})
	for i := 0; i < senders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
				Messages: []stores.NewMessage{newMsg(fmt.Sprintf("body-%d", i), "g", "same-dedup-id")}, DedupWindow: 5 * time.Minute})
			errs[i] = err
			if err == nil {
				results[i] = res.Results[0]
			}
		}()
	}
	close(start)
	wg.Wait()
	stored := 0
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("send %d: %v", i, errs[i])
		}
		if !results[i].Duplicate {
			stored++
		}
		if results[i].MessageID != results[0].MessageID || results[i].SequenceNumber != results[0].SequenceNumber {
			t.Errorf("result %d = %+v, want the id and sequence number of %+v", i, results[i], results[0])
		}
	}
	if stored != 1 {
		t.Errorf("%d sends stored a message, want 1", stored)
	}
	st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID})
	if err != nil {
		t.Fatal(err)
	}
	if st.Visible != 1 {
		t.Errorf("visible = %d, want 1", st.Visible)
	}
}

// Concurrent deletes on one queue share transactions (combiner): each
// caller still gets the outcome of its own receipts, current or stale, and
// exactly the current ones are deleted.
func TestConcurrentDeletesKeepTheirOutcomes(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	q := createQueue(t, s, "del", false)
	const n = 40
	var msgs []stores.NewMessage
	for i := range n {
		msgs = append(msgs, newMsg(fmt.Sprintf("m%d", i), "", ""))
	}
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: n,
		VisibilityTimeout: time.Hour, Token: "tok"})
	if err != nil || len(res.Messages) != n {
		t.Fatalf("claim: %d messages, %v", len(res.Messages), err)
	}
	outs := make([][]stores.ReceiptOutcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, m := range res.Messages {
		token := m.Token
		if i%2 == 1 {
			token = "not-the-token"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			outs[i], errs[i] = s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
				Receipts: []stores.Receipt{{MessageID: m.ID, Token: token}}})
		}()
	}
	close(start)
	wg.Wait()
	for i := range outs {
		want := stores.ReceiptCurrent
		if i%2 == 1 {
			want = stores.ReceiptStale
		}
		if errs[i] != nil || len(outs[i]) != 1 || outs[i][0] != want {
			t.Errorf("delete %d: %v, %v; want [%v]", i, outs[i], errs[i], want)
		}
	}
	st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID})
	if err != nil {
		t.Fatal(err)
	}
	if st.InFlight != n/2 {
		t.Errorf("in flight = %d, want the %d with stale receipts", st.InFlight, n/2)
	}
}

// Several instances opening one fresh schema at once migrate it once.
func TestConcurrentOpen(t *testing.T) {
	dsn, schema := newSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 2})
			errs[i] = err
			if err == nil {
				s.Close()
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	s := openSchema(t, dsn, schema)
	var n int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	ms, _ := migrations()
	if n != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(ms))
	}
}
