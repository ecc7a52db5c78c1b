package conformance

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func testConcurrency(t *testing.T, s suite) {
	s.test(t, "StandardNoDoubleDelivery", func(e *env) {
		// Concurrent receivers never get the same message within its
		// visibility timeout (the store's claim is atomic).
		url := e.create("q", nil)
		const n = 60
		for i := 0; i < n; i += 10 {
			entries := make([]contract.SendMessageBatchRequestEntry, 10)
			for j := range entries {
				entries[j] = contract.SendMessageBatchRequestEntry{Id: strconv.Itoa(j), MessageBody: str("m" + strconv.Itoa(i+j))}
			}
			_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
			wantOK(e.t, err, "SendMessageBatch")
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					out, err := e.svc.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(3), WaitTimeSeconds: i64(0)})
					if err != nil {
						e.t.Errorf("ReceiveMessage: %v", err)
						return
					}
					if len(out.Messages) == 0 {
						return
					}
					mu.Lock()
					for _, m := range out.Messages {
						seen[m.Body]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for b, c := range seen {
			if c > 1 {
				e.t.Errorf("%s delivered %d times while in flight", b, c)
			}
		}
		if len(seen) != n {
			e.t.Errorf("concurrent receivers got %d distinct messages, want %d", len(seen), n)
		}
		e.wantCounts(url, 0, n, 0)
	})

	s.test(t, "FIFOGroupOwnedByOneReceiver", func(e *env) {
		// At any moment at most one receive holds a group's messages, and
		// what it holds is a run from the group's head.
		url := e.createFIFO("f.fifo", nil)
		const groups, per = 6, 4
		for i := range per {
			for g := range groups {
				e.sendFIFO(url, fmt.Sprintf("g%d-%d", g, i), "g"+strconv.Itoa(g), fmt.Sprintf("d%d-%d", g, i))
			}
		}
		var mu sync.Mutex
		var results [][]contract.Message
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := e.svc.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(10), WaitTimeSeconds: i64(0),
					MessageSystemAttributeNames: []string{"MessageGroupId"}})
				if err != nil {
					e.t.Errorf("ReceiveMessage: %v", err)
					return
				}
				mu.Lock()
				results = append(results, out.Messages)
				mu.Unlock()
			}()
		}
		wg.Wait()
		owner := map[string]int{}
		for i, r := range results {
			next := map[string]int{}
			for _, m := range r {
				g := m.Attributes["MessageGroupId"]
				if o, ok := owner[g]; ok && o != i {
					e.t.Errorf("group %s handed to two concurrent receives", g)
				}
				owner[g] = i
				want := fmt.Sprintf("%s-%d", g, next[g])
				if m.Body != want {
					e.t.Errorf("receive %d got %s, want %s (a run from the group's head, in order)", i, m.Body, want)
				}
				next[g]++
			}
		}
	})

	s.test(t, "FIFOConcurrentSendsKeepOrder", func(e *env) {
		// Sequence numbers increase in the order sends were acknowledged
		// per group, even with concurrent senders.
		url := e.createFIFO("f.fifo", nil)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g := "w" + strconv.Itoa(w)
				prev := ""
				for i := range 10 {
					out, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str(fmt.Sprintf("%s-%d", g, i)),
						MessageGroupId: &g, MessageDeduplicationId: str(fmt.Sprintf("%s-%d", g, i))})
					if err != nil {
						e.t.Errorf("SendMessage: %v", err)
						return
					}
					if prev != "" && !seqLess(prev, out.SequenceNumber) {
						e.t.Errorf("%s: SequenceNumber %s after %s", g, out.SequenceNumber, prev)
					}
					prev = out.SequenceNumber
				}
			}()
		}
		wg.Wait()
		next := map[string]int{}
		for range 10 {
			got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(10), WaitTimeSeconds: i64(0),
				MessageSystemAttributeNames: []string{"MessageGroupId"}})
			if len(got) == 0 {
				break
			}
			for _, m := range got {
				g := m.Attributes["MessageGroupId"]
				if want := fmt.Sprintf("%s-%d", g, next[g]); m.Body != want {
					e.t.Errorf("got %s, want %s", m.Body, want)
				}
				next[g]++
				e.del(url, m.ReceiptHandle)
			}
		}
		for w := range 4 {
			if next["w"+strconv.Itoa(w)] != 10 {
				e.t.Errorf("group w%d: received %d, want 10", w, next["w"+strconv.Itoa(w)])
			}
		}
	})

	s.test(t, "ConcurrentDedup", func(e *env) {
		// Racing sends of one deduplication id store one message and all
		// report its MessageId.
		url := e.createFIFO("f.fifo", nil)
		var wg sync.WaitGroup
		ids := make([]string, 8)
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("same"), MessageGroupId: str("g"), MessageDeduplicationId: str("race")})
				if err != nil {
					e.t.Errorf("SendMessage: %v", err)
					return
				}
				ids[i] = out.MessageId
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				e.t.Errorf("racing duplicates got MessageIds %q, want one", ids)
				break
			}
		}
		e.wantCounts(url, 1, 0, 0)
	})
}
