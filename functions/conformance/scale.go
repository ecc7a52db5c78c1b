package conformance

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

// The scale area goes past what one transaction of some backends may hold
// (Firestore: 500 writes and 10 MiB; Spanner: 80,000 mutations), so a
// store that must split its work proves that purge, queue deletion and
// move tasks still act on every message, and that 1 MiB bodies survive a
// redrive and a move. scaleN is kept to a few thousand so the area stays
// within seconds per store.
func testScale(t *testing.T, s suite) {
	s.test(t, "PurgeThousands", testPurgeThousands)
	s.test(t, "DeleteQueueOfThousands", testDeleteQueueOfThousands)
	s.test(t, "MoveTaskOfThousands", testMoveTaskOfThousands)
	s.test(t, "MaxSizeBodiesThroughRedriveAndMove", testMaxSizeBodies)
}

const scaleN = 3000

// fill sends n messages to url in batches of 10, from 8 senders on two
// instances, and returns MessageId -> body.
func (e *env) fill(url string, n int, fifo bool) map[string]string {
	e.t.Helper()
	svcs := []*service.Service{e.svc, e.newService()}
	sent := map[string]string{}
	var mu sync.Mutex
	var failures []string
	work := make(chan int, n/10+1)
	for i := 0; i < n; i += 10 {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := range work {
				var entries []contract.SendMessageBatchRequestEntry
				for j := first; j < min(first+10, n); j++ {
					en := contract.SendMessageBatchRequestEntry{Id: strconv.Itoa(j - first), MessageBody: str(fmt.Sprintf("m%05d", j))}
					if fifo {
						en.MessageGroupId, en.MessageDeduplicationId = str("g"+strconv.Itoa(j%50)), str(strconv.Itoa(j))
					}
					entries = append(entries, en)
				}
				out, err := svcs[w%2].SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, fmt.Sprintf("SendMessageBatch: %v", err))
				case len(out.Successful) != len(entries):
					failures = append(failures, fmt.Sprintf("SendMessageBatch: failed %+v", out.Failed))
				default:
					for _, r := range out.Successful {
						k, _ := strconv.Atoi(r.Id)
						sent[r.MessageId] = *entries[k].MessageBody
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, f := range failures {
		e.t.Error(f)
	}
	if len(sent) != n {
		e.t.Fatalf("sent %d messages, want %d", len(sent), n)
	}
	return sent
}

// drainAll receives everything receivable from url (deleting it in
// batches) and returns MessageId -> body; it fails on a duplicate.
func (e *env) drainAll(url string, limit int) map[string]string {
	e.t.Helper()
	got := map[string]string{}
	for range limit/10 + 10 {
		ms := e.recvVT(url, 10, 300)
		if len(ms) == 0 {
			break
		}
		var entries []contract.DeleteMessageBatchRequestEntry
		for i, m := range ms {
			if _, dup := got[m.MessageId]; dup {
				e.t.Errorf("%s (%s) delivered twice", m.MessageId, m.Body)
			}
			got[m.MessageId] = m.Body
			entries = append(entries, contract.DeleteMessageBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle})
		}
		out, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: entries})
		wantOK(e.t, err, "DeleteMessageBatch")
		if len(out.Failed) > 0 {
			e.t.Errorf("DeleteMessageBatch: failed %+v", out.Failed)
		}
	}
	return got
}

func testPurgeThousands(e *env) {
	for _, fifo := range []bool{false, true} {
		name := "big"
		if fifo {
			name = "big.fifo"
		}
		var url string
		if fifo {
			url = e.createFIFO(name, map[string]string{"DelaySeconds": "0"})
		} else {
			url = e.create(name, nil)
		}
		n := scaleN
		if fifo {
			n = scaleN / 3 // the FIFO run checks groups, not size again
		}
		e.fill(url, n, fifo)
		// Some in flight, so the purge must reach those too.
		inFlight := len(e.recvVT(url, 10, 600)) + len(e.recvVT(url, 10, 600))
		if inFlight == 0 {
			e.t.Fatal("nothing received before the purge")
		}
		e.clock.Advance(secs(1))
		_, err := e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "PurgeQueue")
		// design: counts are exact, so they drop at once.
		e.wantCounts(url, 0, 0, 0)
		e.wantEmpty(url)
		// What is sent after the purge is kept; nothing purged comes back,
		// not even once the purged deliveries' windows end.
		e.clock.Advance(secs(1))
		after := e.sendFIFOOrNot(url, "after", fifo)
		e.clock.Advance(secs(601))
		got := e.drainAll(url, n)
		if len(got) != 1 || got[after] != "after" {
			e.t.Errorf("after the purge, received %d messages (%v), want only the one sent after it", len(got), firstBodies(got, 5))
		}
		e.wantCounts(url, 0, 0, 0)
	}
}

func (e *env) sendFIFOOrNot(url, body string, fifo bool) string {
	e.t.Helper()
	if fifo {
		return e.sendFIFO(url, body, "g0", body).MessageId
	}
	return e.send(url, body).MessageId
}

func firstBodies(m map[string]string, n int) []string {
	var out []string
	for _, b := range m {
		if len(out) == n {
			break
		}
		out = append(out, b)
	}
	return out
}

func testDeleteQueueOfThousands(e *env) {
	url := e.create("big", nil)
	e.fill(url, scaleN, false)
	e.recvVT(url, 10, 600)
	_, err := e.svc.DeleteQueue(e.op(), &contract.DeleteQueueInput{QueueUrl: url})
	wantOK(e.t, err, "DeleteQueue")
	_, err = e.svc.GetQueueAttributes(e.op(), &contract.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []string{"All"}})
	wantErrCode(e.t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	// A queue of the same name, after the cooldown, starts empty.
	e.clock.Advance(secs(61))
	e.create("big", nil)
	e.wantCounts(url, 0, 0, 0)
	e.clock.Advance(secs(601))
	e.wantEmpty(url)
}

func testMoveTaskOfThousands(e *env) {
	dlq := e.create("dlq", nil)
	e.create("src", redrive("dlq", 1))
	dst := e.create("dst", nil)
	sent := e.fill(dlq, scaleN, false)
	_, err := e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst"))})
	wantOK(e.t, err, "StartMessageMoveTask")
	// At the default rate (500 a second) each pass moves 500: six passes.
	r := e.finishMoveTask(queueARN("dlq"))
	if r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != scaleN {
		e.t.Errorf("task = %s, want COMPLETED with %d moved", fmtTask(r), scaleN)
	}
	e.wantCounts(dlq, 0, 0, 0)
	e.wantCounts(dst, scaleN, 0, 0)
	// Moved messages are new ones, with new MessageIds: each body comes
	// back once, under an id that is none of the sent ones.
	got := e.drainAll(dst, scaleN)
	arrived := map[string]bool{}
	for id, body := range got {
		if _, old := sent[id]; old {
			e.t.Errorf("moved message %s kept its MessageId", id)
		}
		arrived[body] = true
	}
	missing := 0
	for _, body := range sent {
		if !arrived[body] {
			missing++
		}
	}
	if missing > 0 || len(got) != scaleN {
		e.t.Errorf("destination gave %d messages; %d of the %d moved are missing or changed", len(got), missing, scaleN)
	}
}

// maxBody returns a body of exactly size bytes that exercises the encoding:
// ASCII, 2-, 3- and 4-byte characters, XML's awkward ones, and a tag.
func maxBody(size int, tag string) string {
	var b strings.Builder
	b.WriteString(tag)
	pattern := []string{"a", "Z", "0", " ", "\t", "\n", "<", ">", "&", "\"", "é", "€", "𝄞", "\r"}
	for i := 0; b.Len() < size-4; i++ {
		b.WriteString(pattern[(i*7+i/13)%len(pattern)])
	}
	for b.Len() < size {
		b.WriteString("x")
	}
	return b.String()
}

func testMaxSizeBodies(e *env) {
	dlq := e.create("dlq", nil)
	src := e.create("src", map[string]string{"RedrivePolicy": redrive("dlq", 1)["RedrivePolicy"], "MaximumMessageSize": "1048576"})
	attrs := map[string]contract.MessageAttributeValue{"k": strAttr("x")} // 1+6+1 = 8 bytes
	const n = 3
	want := map[string]string{} // tag -> body (a move gives a message a new MessageId)
	for i := range n {
		body := maxBody(1048576-8, bigTag(i))
		out := e.sendIn(&contract.SendMessageInput{QueueUrl: src, MessageBody: &body, MessageAttributes: attrs})
		if out.MD5OfMessageBody != md5OfBody(body) {
			e.t.Errorf("send MD5OfMessageBody %s, want %s", out.MD5OfMessageBody, md5OfBody(body))
		}
		want[bigTag(i)] = body
	}
	check := func(where string, ms []contract.Message) {
		e.t.Helper()
		for _, m := range ms {
			tag, _, _ := strings.Cut(m.Body, ":")
			body, ok := want[tag+":"]
			switch {
			case !ok:
				e.t.Errorf("%s: unknown message %s", where, m.MessageId)
			case m.Body != body:
				e.t.Errorf("%s: %s came back with %d bytes, not the %d sent (first difference at byte %d)", where, m.MessageId, len(m.Body), len(body), firstDiff(m.Body, body))
			case m.MD5OfBody != md5OfBody(body) || m.MD5OfMessageAttributes != md5OfAttributes(attrs) || !attrsEqual(m.MessageAttributes, attrs):
				e.t.Errorf("%s: %s MD5OfBody %s, attributes %s (MD5 %s)", where, m.MessageId, m.MD5OfBody, fmtAttrs(m.MessageAttributes), m.MD5OfMessageAttributes)
			}
		}
		if len(ms) != n {
			e.t.Errorf("%s: %d messages, want %d", where, len(ms), n)
		}
	}
	all := func(url string, vt int64) []contract.Message {
		var ms []contract.Message
		for range 2 * n {
			got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(n), WaitTimeSeconds: i64(0),
				VisibilityTimeout: i64(vt), MessageAttributeNames: []string{"All"}})
			ms = append(ms, got...)
			if len(ms) >= n || len(got) == 0 {
				break
			}
		}
		return ms
	}
	check("first receive", all(src, 0))
	e.wantEmpty(src) // each received once: this receive moves them
	e.wantCounts(dlq, n, 0, 0)
	check("DLQ", all(dlq, 0))
	_, err := e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq")})
	wantOK(e.t, err, "StartMessageMoveTask")
	if r := e.finishMoveTask(queueARN("dlq")); r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != n {
		e.t.Errorf("task = %s, want COMPLETED with %d moved", fmtTask(r), n)
	}
	e.wantCounts(src, n, 0, 0)
	check("back in the source", all(src, 30))
}

func bigTag(i int) string { return fmt.Sprintf("big-%d:", i) }

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
