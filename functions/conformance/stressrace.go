package conformance

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

// testDedupRace: senders on two instances race identical sends (by
// MessageDeduplicationId, and by content), singly and in batches. Each
// deduplication id is stored once and every sender is told its MessageId
// and SequenceNumber.
func testDedupRace(e *env) {
	const senders, keys = 16, 5
	explicit := e.createFIFO("ids.fifo", nil)
	content := e.createFIFO("content.fifo", map[string]string{"ContentBasedDeduplication": "true"})
	svcs := []*service.Service{e.svc, e.newService()}
	type echo struct{ id, seq string }
	var mu sync.Mutex
	echoes := map[string][]echo{} // queue+key -> what each send was told
	var failures []string
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := svcs[i%2]
			rnd := rand.New(rand.NewPCG(uint64(i), 3))
			order := rnd.Perm(keys)
			<-start
			for _, url := range []string{explicit, content} {
				body := func(k int) string {
					if url == content {
						return "key-" + strconv.Itoa(k)
					}
					return fmt.Sprintf("from-%d-key-%d", i, k)
				}
				dedup := func(k int) *string {
					if url == content {
						return nil
					}
					return str("key-" + strconv.Itoa(k))
				}
				record := func(k int, id, seq string) {
					mu.Lock()
					echoes[url+strconv.Itoa(k)] = append(echoes[url+strconv.Itoa(k)], echo{id, seq})
					mu.Unlock()
				}
				fail := func(format string, args ...any) {
					mu.Lock()
					failures = append(failures, fmt.Sprintf(format, args...))
					mu.Unlock()
				}
				if i%4 < 2 {
					for _, k := range order {
						out, err := svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str(body(k)),
							MessageGroupId: str("g" + strconv.Itoa(k%2)), MessageDeduplicationId: dedup(k)})
						if err != nil {
							fail("SendMessage: %v", err)
							return
						}
						record(k, out.MessageId, out.SequenceNumber)
					}
					continue
				}
				var entries []contract.SendMessageBatchRequestEntry
				for _, k := range order {
					entries = append(entries, contract.SendMessageBatchRequestEntry{Id: strconv.Itoa(k), MessageBody: str(body(k)),
						MessageGroupId: str("g" + strconv.Itoa(k%2)), MessageDeduplicationId: dedup(k)})
				}
				out, err := svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
				if err != nil || len(out.Successful) != keys {
					fail("SendMessageBatch: err %v, %+v", err, out)
					return
				}
				for _, r := range out.Successful {
					k, _ := strconv.Atoi(r.Id)
					record(k, r.MessageId, r.SequenceNumber)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, f := range failures {
		e.t.Error(f)
	}
	for _, url := range []string{explicit, content} {
		want := map[string]string{} // MessageId -> key
		for k := range keys {
			es := echoes[url+strconv.Itoa(k)]
			if len(es) != senders {
				e.t.Errorf("%s key %d: %d sends answered, want %d", url, k, len(es), senders)
				continue
			}
			for _, x := range es {
				if x != es[0] {
					e.t.Errorf("%s key %d: racing duplicates were told %+v and %+v, want one MessageId and SequenceNumber", url, k, es[0], x)
					break
				}
			}
			want[es[0].id] = "key-" + strconv.Itoa(k)
		}
		e.wantCounts(url, keys, 0, 0)
		var got []contract.Message
		for range keys {
			ms := e.recv(url, 10)
			if len(ms) == 0 {
				break
			}
			got = append(got, ms...)
		}
		if len(got) != keys {
			e.t.Errorf("%s: received %d messages, want %d (one per deduplication id)", url, len(got), keys)
		}
		for _, m := range got {
			key, ok := want[m.MessageId]
			if !ok || !strings.HasSuffix(m.Body, key) {
				e.t.Errorf("%s: received %s %q, not the message the duplicates were told of", url, m.MessageId, m.Body)
			}
		}
	}
}

// testDeleteOutcomes: deletes racing on one queue from two instances, half
// with the current receipt and half with one from an earlier delivery, each
// get the answer of their own receipt (a store may combine them into shared
// transactions; the answers must not mix): on FIFO exactly the current ones
// delete, on Standard every one does.
func testDeleteOutcomes(e *env) {
	const n = 40
	other := e.newService()
	for _, fifo := range []bool{true, false} {
		var url string
		if fifo {
			url = e.createFIFO("f.fifo", nil)
		} else {
			url = e.create("std", nil)
		}
		for i := 0; i < n; i += 10 {
			var entries []contract.SendMessageBatchRequestEntry
			for j := i; j < i+10; j++ {
				en := contract.SendMessageBatchRequestEntry{Id: strconv.Itoa(j), MessageBody: str("m" + strconv.Itoa(j))}
				if fifo { // one group each, so all are in flight at once
					en.MessageGroupId, en.MessageDeduplicationId = str("g"+strconv.Itoa(j)), str(strconv.Itoa(j))
				}
				entries = append(entries, en)
			}
			out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
			wantOK(e.t, err, "SendMessageBatch")
			if len(out.Successful) != 10 {
				e.t.Fatalf("SendMessageBatch: %+v", out.Failed)
			}
		}
		take := func(vt int64) map[string]string { // body -> receipt
			got := map[string]string{}
			for range n {
				ms := e.recvVT(url, 10, vt)
				if len(ms) == 0 {
					break
				}
				for _, m := range ms {
					got[m.Body] = m.ReceiptHandle
				}
			}
			if len(got) != n {
				e.t.Fatalf("received %d distinct messages, want %d", len(got), n)
			}
			return got
		}
		old := take(20)
		e.clock.Advance(secs(21))
		current := take(100)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			body := "m" + strconv.Itoa(i)
			handle := current[body]
			if i%2 == 1 {
				handle = old[body]
			}
			svc := e.svc
			if i%4 >= 2 {
				svc = other
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle})
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			switch {
			case i%2 == 0 && err != nil:
				e.t.Errorf("fifo=%v: delete of m%d with its current receipt: %v", fifo, i, err)
			case i%2 == 1 && fifo:
				// docs: a FIFO queue refuses a receipt of an ended delivery.
				wantErr(e.t, err, contract.ErrReceiptHandleExpired(old["m"+strconv.Itoa(i)]))
			case i%2 == 1 && err != nil:
				// A Standard queue accepts it and deletes the message
				// (AWS, observed).
				e.t.Errorf("fifo=%v: delete of m%d with an earlier receipt: %v, want success", fifo, i, err)
			}
		}
		kept := 0
		if fifo {
			kept = n / 2
		}
		e.wantCounts(url, 0, kept, 0)
		e.clock.Advance(secs(101))
		var left []string
		for range n {
			ms := e.recv(url, 10)
			if len(ms) == 0 {
				break
			}
			left = append(left, bodies(ms)...)
		}
		var want []string
		for i := 1; fifo && i < n; i += 2 {
			want = append(want, "m"+strconv.Itoa(i))
		}
		wantBodySet(e.t, toMessages(left), want...)
	}
}

func toMessages(bodies []string) []contract.Message {
	ms := make([]contract.Message, len(bodies))
	for i, b := range bodies {
		ms[i].Body = b
	}
	return ms
}
