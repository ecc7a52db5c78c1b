package conformance

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
)

func redrive(dlqName string, max int) map[string]string {
	return map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, queueARN(dlqName), max)}
}

func testDeadLetter(t *testing.T, s suite) {
	s.test(t, "MessageAttributesKept", func(e *env) {
		// snapshot test_dead_letter_queue_message_attributes.
		dlq := e.create("dl-queue", nil)
		src := e.create("queue", redrive("dl-queue", 1))
		userAttrs := map[string]contract.MessageAttributeValue{"MyAttribute": strAttr("foobar")}
		s1 := e.sendIn(&contract.SendMessageInput{QueueUrl: src, MessageBody: str("message-1"), MessageAttributes: userAttrs,
			MessageSystemAttributes: map[string]contract.MessageAttributeValue{"AWSTraceHeader": strAttr(traceHeader)}})
		s2 := e.send(src, "message-2")
		sent := e.clock.Now()
		e.clock.Advance(secs(1))
		var got []contract.Message
		for range 4 {
			got = append(got, e.receive(&contract.ReceiveMessageInput{QueueUrl: src, WaitTimeSeconds: i64(0), VisibilityTimeout: i64(0),
				AttributeNames: []string{"All"}, MessageAttributeNames: []string{"All"}})...)
		}
		wantBodySet(e.t, got, "message-1", "message-2") // each once, then moved
		for _, m := range got {
			if m.Attributes["ApproximateReceiveCount"] != "1" {
				e.t.Errorf("%s ApproximateReceiveCount = %q, want 1", m.Body, m.Attributes["ApproximateReceiveCount"])
			}
			if _, ok := m.Attributes["DeadLetterQueueSourceArn"]; ok {
				e.t.Errorf("%s carries DeadLetterQueueSourceArn before any redrive", m.Body)
			}
		}
		e.wantCounts(src, 0, 0, 0)
		e.wantCounts(dlq, 2, 0, 0)
		moved := e.recvAll(dlq, 10)
		if len(moved) != 2 {
			e.t.Fatalf("DLQ returned %d messages, want 2", len(moved))
		}
		sort.Slice(moved, func(i, j int) bool { return moved[i].Body < moved[j].Body })
		for i, want := range []*contract.SendMessageOutput{s1, s2} {
			m := moved[i]
			if m.MessageId != want.MessageId || m.MD5OfBody != want.MD5OfMessageBody {
				e.t.Errorf("DLQ message %s: MessageId %s, MD5OfBody %s; want %s, %s", m.Body, m.MessageId, m.MD5OfBody, want.MessageId, want.MD5OfMessageBody)
			}
			a := m.Attributes
			wantA := map[string]string{"ApproximateReceiveCount": "2", "SentTimestamp": millis(sent), "ApproximateFirstReceiveTimestamp": millis(sent.Add(secs(1))),
				"SenderId": a["SenderId"], "DeadLetterQueueSourceArn": queueARN("queue")}
			if i == 0 {
				wantA["AWSTraceHeader"] = traceHeader
			}
			wantAttrs(e.t, a, wantA)
		}
		if moved[0].MD5OfMessageAttributes != "adb59cd4678ea5a855436b949cd07ab6" || !attrsEqual(moved[0].MessageAttributes, userAttrs) {
			e.t.Errorf("DLQ message-1 attributes = %s (MD5 %s), want MyAttribute (adb59cd4678ea5a855436b949cd07ab6)", fmtAttrs(moved[0].MessageAttributes), moved[0].MD5OfMessageAttributes)
		}
		if len(moved[1].MessageAttributes) != 0 || moved[1].MD5OfMessageAttributes != "" {
			e.t.Errorf("DLQ message-2 attributes = %s", fmtAttrs(moved[1].MessageAttributes))
		}
	})

	s.test(t, "MaxReceiveCount", func(e *env) {
		e.create("dlq", nil)
		src := e.create("src", map[string]string{"RedrivePolicy": redrive("dlq", 3)["RedrivePolicy"], "VisibilityTimeout": "10"})
		out := e.send(src, "m")
		for i := 1; i <= 3; i++ {
			got := e.recvAll(src, 1)
			if len(got) != 1 || got[0].Attributes["ApproximateReceiveCount"] != strconv.Itoa(i) {
				e.t.Fatalf("receive %d: %v", i, got)
			}
			e.clock.Advance(secs(11)) // the timeout expires unhandled
		}
		// docs: once received maxReceiveCount times, the next receive moves
		// it instead of returning it; it is never in both queues.
		e.wantCounts(queueURL("dlq"), 0, 0, 0)
		e.wantEmpty(src)
		e.wantCounts(src, 0, 0, 0)
		e.wantCounts(queueURL("dlq"), 1, 0, 0)
		m := e.recvOne(queueURL("dlq"))
		if m.MessageId != out.MessageId {
			e.t.Errorf("DLQ MessageId %s, want %s", m.MessageId, out.MessageId)
		}
	})

	s.test(t, "OnlyOverReceivedMove", func(e *env) {
		dlq := e.create("dlq", nil)
		src := e.create("src", redrive("dlq", 2))
		e.send(src, "old")
		e.recvVT(src, 1, 0)
		e.recvVT(src, 1, 0)
		e.send(src, "new")
		got := e.recvVT(src, 10, 0)
		wantBodies(e.t, got, "new")
		e.wantCounts(dlq, 1, 0, 0)
		wantBodies(e.t, e.recv(dlq, 10), "old")
	})

	s.test(t, "FIFO", func(e *env) {
		// validated test_dead_letter_queue_with_fifo_and_content_based_deduplication.
		dlq := e.createFIFO("test-dlq.fifo", map[string]string{"ContentBasedDeduplication": "true", "MessageRetentionPeriod": "1209600"})
		src := e.createFIFO("test-queue.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "60",
			"RedrivePolicy": redrive("test-dlq.fifo", 2)["RedrivePolicy"]})
		out := e.sendFIFO(src, "foobar", "1", "")
		e.sendFIFO(src, "second", "1", "")
		e.recvVT(src, 1, 0)
		e.recvVT(src, 1, 0)
		// This receive moves the head (whether the same receive already
		// serves the next message is not recorded); the group goes on.
		got := e.recvVT(src, 1, 0)
		if len(got) == 0 {
			got = e.recvVT(src, 1, 0)
		}
		wantBodies(e.t, got, "second")
		moved := e.receive(&contract.ReceiveMessageInput{QueueUrl: dlq, WaitTimeSeconds: i64(0), MessageSystemAttributeNames: []string{"All"}})
		if len(moved) != 1 {
			e.t.Fatalf("DLQ returned %d messages, want 1", len(moved))
		}
		if moved[0].MessageId != out.MessageId || moved[0].Body != "foobar" || moved[0].Attributes["MessageGroupId"] != "1" {
			e.t.Errorf("DLQ message = %+v, want %s foobar in group 1", moved[0], out.MessageId)
		}
		if moved[0].Attributes["DeadLetterQueueSourceArn"] != queueARN("test-queue.fifo") {
			e.t.Errorf("DeadLetterQueueSourceArn = %q", moved[0].Attributes["DeadLetterQueueSourceArn"])
		}
	})

	s.test(t, "FIFOEnqueuedAnew", func(e *env) {
		// docs (dead-letter queue retention; redrive): a FIFO message moved
		// to its dead-letter queue is enqueued there anew, so the DLQ's
		// retention counts from the move, and its deduplication ID becomes
		// its MessageId. Both queues keep messages 60 s.
		dlq := e.createFIFO("dlq.fifo", map[string]string{"MessageRetentionPeriod": "60"})
		src := e.createFIFO("src.fifo", map[string]string{"MessageRetentionPeriod": "60",
			"RedrivePolicy": redrive("dlq.fifo", 1)["RedrivePolicy"]})
		out := e.sendFIFO(src, "m", "g", "d")
		wantBodies(e.t, e.recvVT(src, 1, 0), "m")
		e.clock.Advance(secs(50))
		moved := e.clock.Now()
		wantBodies(e.t, e.recvVT(src, 1, 0)) // the receive moves it
		e.wantCounts(dlq, 1, 0, 0)
		e.clock.Advance(secs(20)) // 70 s after the send, 20 s after the move
		got := e.recvAll(dlq, 1)
		if len(got) != 1 {
			e.t.Fatalf("DLQ returned %d messages 20 s after the move, want 1 (retention counts from the move)", len(got))
		}
		m := got[0]
		if m.MessageId != out.MessageId {
			e.t.Errorf("DLQ MessageId %s, want %s", m.MessageId, out.MessageId)
		}
		wantAttrs(e.t, m.Attributes, map[string]string{"SentTimestamp": millis(moved), "MessageDeduplicationId": out.MessageId,
			"MessageGroupId": "g", "ApproximateReceiveCount": "2", "ApproximateFirstReceiveTimestamp": m.Attributes["ApproximateFirstReceiveTimestamp"],
			"SequenceNumber": m.Attributes["SequenceNumber"], "SenderId": m.Attributes["SenderId"], "DeadLetterQueueSourceArn": queueARN("src.fifo")})
	})

	s.test(t, "ListSources", func(e *env) {
		// validated test_dead_letter_queue_list_sources.
		dlq := e.create("dlq", nil)
		lone := e.create("lone", nil)
		e.create("s1", redrive("dlq", 50))
		s2 := e.create("s2", nil)
		e.setAttrs(s2, redrive("dlq", 50))
		e.create("s3", redrive("dlq", 5))
		list := func(url string, max int64, tok *string) *contract.ListDeadLetterSourceQueuesOutput {
			in := &contract.ListDeadLetterSourceQueuesInput{QueueUrl: url, NextToken: tok}
			if max > 0 {
				in.MaxResults = i64(max)
			}
			out, err := e.svc.ListDeadLetterSourceQueues(e.op(), in)
			wantOK(e.t, err, "ListDeadLetterSourceQueues")
			return out
		}
		out := list(dlq, 0, nil)
		got := append([]string(nil), out.QueueUrls...)
		sort.Strings(got)
		if !equalStrings(got, []string{queueURL("s1"), queueURL("s2"), queueURL("s3")}) || out.NextToken != "" {
			e.t.Errorf("sources = %q (NextToken %q), want s1, s2, s3", got, out.NextToken)
		}
		if out := list(lone, 0, nil); len(out.QueueUrls) != 0 {
			e.t.Errorf("sources of a queue that is no DLQ = %q", out.QueueUrls)
		}
		var paged []string
		var tok *string
		for range 5 {
			out := list(dlq, 1, tok)
			paged = append(paged, out.QueueUrls...)
			if out.NextToken == "" {
				break
			}
			tok = str(out.NextToken)
		}
		sort.Strings(paged)
		if !equalStrings(paged, got) {
			e.t.Errorf("paged by 1: %q, want %q", paged, got)
		}
		e.setAttrs(s2, map[string]string{"RedrivePolicy": ""})
		_, err := e.svc.DeleteQueue(e.op(), &contract.DeleteQueueInput{QueueUrl: queueURL("s3")})
		wantOK(e.t, err, "DeleteQueue")
		if out := list(dlq, 0, nil); !equalStrings(out.QueueUrls, []string{queueURL("s1")}) {
			e.t.Errorf("sources after changes = %q, want s1", out.QueueUrls)
		}
	})
}

func testMoveTasks(t *testing.T, s suite) {
	// pipe makes src -> dlq (maxReceiveCount 1) and moves n messages into
	// the DLQ the way the recorded tests do: two receives each.
	pipe := func(e *env, src, dlq string, n int) {
		e.t.Helper()
		e.create(dlq, nil)
		e.create(src, redrive(dlq, 1))
		for i := range n {
			e.send(queueURL(src), src+"-"+strconv.Itoa(i))
		}
		for range 2 * n {
			e.recvVT(queueURL(src), 10, 0)
		}
		e.wantCounts(queueURL(dlq), n, 0, 0)
	}
	start := func(e *env, in *contract.StartMessageMoveTaskInput) string {
		e.t.Helper()
		out, err := e.svc.StartMessageMoveTask(e.op(), in)
		wantOK(e.t, err, "StartMessageMoveTask")
		if out.TaskHandle == "" {
			e.t.Fatal("StartMessageMoveTask returned no TaskHandle")
		}
		return out.TaskHandle
	}

	s.test(t, "BackToSource", func(e *env) {
		// recorded test_move_task_workflow_with_default_destination.
		pipe(e, "src", "dlq", 2)
		e.clock.Advance(secs(1))
		started := e.clock.Now()
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq")})
		r := e.finishMoveTask(queueARN("dlq"))
		want := contract.ListMessageMoveTasksResultEntry{Status: "COMPLETED", SourceArn: queueARN("dlq"),
			ApproximateNumberOfMessagesMoved: 2, ApproximateNumberOfMessagesToMove: i64(2), StartedTimestamp: started.UnixMilli()}
		wantTask(e.t, r, want)
		e.wantCounts(queueURL("dlq"), 0, 0, 0)
		// The recorded test then collects them from the source although its
		// maxReceiveCount is 1: a redrive starts the receive count afresh.
		wantBodySet(e.t, e.recv(queueURL("src"), 10), "src-0", "src-1")
		e.wantCounts(queueURL("dlq"), 0, 0, 0)
	})

	s.test(t, "OldFinishedTasksGo", func(e *env) {
		// ListMessageMoveTasks shows a source's newest ten tasks at most:
		// the store keeps no more finished ones than that, however many
		// moves a DLQ has seen.
		var started []int64
		for i := range 13 {
			pipe(e, "src"+strconv.Itoa(i), "dlq", 1)
			e.clock.Advance(secs(1))
			started = append(started, e.clock.Now().UnixMilli())
			start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq")})
			e.finishMoveTask(queueARN("dlq"))
		}
		listed := e.listMoveTasks(queueARN("dlq"), 10)
		if len(listed) != 10 || listed[0].StartedTimestamp != started[12] || listed[9].StartedTimestamp != started[3] {
			e.t.Fatalf("ListMessageMoveTasks listed %d tasks, want the newest ten", len(listed))
		}
		kept, err := e.store.MoveTaskList(e.op(), &stores.MoveTaskListParams{SourceArn: queueARN("dlq")})
		wantOK(e.t, err, "MoveTaskList")
		// Dropped when a task starts: ten finished then, and the one it
		// started, finished since.
		if len(kept) != 11 {
			e.t.Errorf("the store keeps %d finished tasks of the source, want 11 (the ten a list could show when the last one started, and that one)", len(kept))
		}
	})

	s.test(t, "MovedAsNewMessages", func(e *env) {
		// docs (dead-letter queue redrive): a move task resets the retention
		// period; the moved messages are new messages, with a new MessageId
		// and enqueue time. The source keeps messages 60 s, its DLQ an hour.
		e.create("dlq", map[string]string{"MessageRetentionPeriod": "3600"})
		src := e.create("src", map[string]string{"MessageRetentionPeriod": "60", "RedrivePolicy": redrive("dlq", 1)["RedrivePolicy"]})
		out := e.send(src, "m")
		e.recvVT(src, 1, 0)
		e.recvVT(src, 1, 0) // moves it
		e.wantCounts(queueURL("dlq"), 1, 0, 0)
		e.clock.Advance(secs(100)) // past the source's retention, counted from the send
		from := e.clock.Now()
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq")})
		e.finishMoveTask(queueARN("dlq"))
		to := e.clock.Now()
		got := e.recvAll(src, 10)
		if len(got) != 1 || got[0].Body != "m" {
			e.t.Fatalf("source after the move returned %d messages, want m (retention counts from the move)", len(got))
		}
		m := got[0]
		if m.MessageId == out.MessageId || !uuidRE.MatchString(m.MessageId) {
			e.t.Errorf("moved MessageId %s, want a new one (sent as %s)", m.MessageId, out.MessageId)
		}
		if sent, _ := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64); sent < from.UnixMilli() || sent > to.UnixMilli() {
			e.t.Errorf("moved SentTimestamp %d, want the move's time, between %d and %d", sent, from.UnixMilli(), to.UnixMilli())
		}
		if m.Attributes["ApproximateReceiveCount"] != "1" {
			e.t.Errorf("moved ApproximateReceiveCount %s, want 1", m.Attributes["ApproximateReceiveCount"])
		}
		if _, ok := m.Attributes["DeadLetterQueueSourceArn"]; ok {
			e.t.Error("moved message still names a dead-letter source")
		}
		// Its receipt works like any other.
		_, err := e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: src, ReceiptHandle: m.ReceiptHandle})
		wantOK(e.t, err, "DeleteMessage")
		e.wantCounts(src, 0, 0, 0)
	})

	s.test(t, "FIFOKeepsGroupOrder", func(e *env) {
		// A FIFO move takes a group's messages from its head, as a receive
		// would: a group whose head is in flight gives nothing, and the task
		// ends without it. A later task moves the group in order.
		e.createFIFO("dlq.fifo", nil)
		src := e.createFIFO("src.fifo", map[string]string{"RedrivePolicy": redrive("dlq.fifo", 1)["RedrivePolicy"]})
		dst := e.createFIFO("dst.fifo", nil)
		e.sendFIFO(src, "a", "g", "a")
		e.sendFIFO(src, "b", "g", "b")
		e.sendFIFO(src, "c", "h", "c")
		for range 6 {
			e.recvVT(src, 10, 0)
		}
		dlq := queueURL("dlq.fifo")
		e.wantCounts(dlq, 3, 0, 0)
		wantBodies(e.t, e.recvVT(dlq, 1, 300), "a")
		move := func(moved int64, bodies ...string) {
			e.t.Helper()
			start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq.fifo"), DestinationArn: str(queueARN("dst.fifo"))})
			if r := e.finishMoveTask(queueARN("dlq.fifo")); r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != moved {
				e.t.Errorf("task = %s, want COMPLETED with %d moved", fmtTask(r), moved)
			}
			wantBodies(e.t, e.recvVT(dst, 10, 3600), bodies...)
		}
		move(1, "c")
		e.wantCounts(dlq, 1, 1, 0) // b waits behind a
		e.clock.Advance(secs(300)) // a comes back
		move(2, "a", "b")
		e.wantCounts(dlq, 0, 0, 0)
	})

	s.test(t, "FIFOHeldIsNoFailure", func(e *env) {
		// b waits behind a (in flight) in its group, so it stays, whether or
		// not its source still exists: staying for its group is no failure,
		// and the task completes.
		e.createFIFO("dlq.fifo", nil)
		s1 := e.createFIFO("s1.fifo", redrive("dlq.fifo", 1))
		s2 := e.createFIFO("s2.fifo", redrive("dlq.fifo", 1))
		e.sendFIFO(s1, "a", "g", "a")
		e.recvVT(s1, 10, 0)
		e.recvVT(s1, 10, 0)
		e.sendFIFO(s2, "b", "g", "b")
		e.recvVT(s2, 10, 0)
		e.recvVT(s2, 10, 0)
		dlq := queueURL("dlq.fifo")
		e.wantCounts(dlq, 2, 0, 0)
		_, err := e.svc.DeleteQueue(e.op(), &contract.DeleteQueueInput{QueueUrl: s2})
		wantOK(e.t, err, "DeleteQueue")
		wantBodies(e.t, e.recvVT(dlq, 1, 300), "a")
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq.fifo")})
		if r := e.finishMoveTask(queueARN("dlq.fifo")); r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != 0 {
			e.t.Errorf("task = %s, want COMPLETED with 0 moved (b waits behind a)", fmtTask(r))
		}
		e.wantCounts(dlq, 1, 1, 0)
	})

	s.test(t, "FIFONotHeldByExpired", func(e *env) {
		// A message past retention is gone (a receive passes over it), so
		// it holds nothing behind it in its group, even while more of them
		// are stored than a sweep in passing removes.
		dlq := e.createFIFO("dlq.fifo", map[string]string{"MessageRetentionPeriod": "60"})
		e.createFIFO("src.fifo", redrive("dlq.fifo", 1))
		dst := e.createFIFO("dst.fifo", nil)
		e.fill(dlq, 2500, true) // groups g0..g49
		e.clock.Advance(secs(61))
		e.sendFIFO(dlq, "m", "g7", "m")
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq.fifo"), DestinationArn: str(queueARN("dst.fifo"))})
		if r := e.finishMoveTask(queueARN("dlq.fifo")); r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != 1 {
			e.t.Errorf("task = %s, want COMPLETED with 1 moved", fmtTask(r))
		}
		wantBodies(e.t, e.recvVT(dst, 10, 300), "m")
	})

	s.test(t, "BackToSeveralSources", func(e *env) {
		// recorded test_move_task_workflow_with_multiple_sources_as_default_destination.
		pipe(e, "q1", "dlq", 2)
		q2 := e.create("q2", redrive("dlq", 1))
		e.send(q2, "q2-0")
		e.send(q2, "q2-1")
		for range 4 {
			e.recvVT(q2, 10, 0)
		}
		e.wantCounts(queueURL("dlq"), 4, 0, 0)
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq")})
		r := e.finishMoveTask(queueARN("dlq"))
		if r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != 4 {
			e.t.Errorf("task = %+v, want COMPLETED with 4 moved", r)
		}
		wantBodySet(e.t, e.recv(queueURL("q1"), 10), "q1-0", "q1-1")
		wantBodySet(e.t, e.recv(q2, 10), "q2-0", "q2-1")
		e.wantCounts(queueURL("dlq"), 0, 0, 0)
	})

	s.test(t, "ToDestination", func(e *env) {
		// recorded test_basic_move_task_workflow.
		pipe(e, "src", "dlq", 2)
		dst := e.create("dst", nil)
		started := e.clock.Now()
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst"))})
		r := e.finishMoveTask(queueARN("dlq"))
		wantTask(e.t, r, contract.ListMessageMoveTasksResultEntry{Status: "COMPLETED", SourceArn: queueARN("dlq"), DestinationArn: queueARN("dst"),
			ApproximateNumberOfMessagesMoved: 2, ApproximateNumberOfMessagesToMove: i64(2), StartedTimestamp: started.UnixMilli()})
		wantBodySet(e.t, e.recv(dst, 10), "src-0", "src-1")
		e.wantCounts(queueURL("src"), 0, 0, 0)
		e.wantCounts(queueURL("dlq"), 0, 0, 0)
	})

	s.test(t, "SourceMustBeDLQ", func(e *env) {
		// recorded test_source_needs_redrive_policy.
		e.create("plain", nil)
		e.create("dst", nil)
		_, err := e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("plain"), DestinationArn: str(queueARN("dst"))})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("Source queue must be configured as a Dead Letter Queue."))
	})

	s.test(t, "MissingQueues", func(e *env) {
		// recorded test_destination_needs_to_exist (and the same wording for the source).
		pipe(e, "src", "dlq", 1)
		_, err := e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst") + "doesntexist")})
		wantErr(e.t, err, contract.ErrResourceNotFound("The resource that you specified for the DestinationArn parameter doesn't exist."))
		_, err = e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("nothere")})
		wantErr(e.t, err, contract.ErrResourceNotFound("The resource that you specified for the SourceArn parameter doesn't exist."))
		e.wantCounts(queueURL("dlq"), 1, 0, 0)
		if rs := e.listMoveTasks(queueARN("dlq"), 10); len(rs) != 0 {
			e.t.Errorf("rejected starts left tasks: %+v", rs)
		}
	})

	s.test(t, "OneRunningPerSource", func(e *env) {
		// recorded test_start_multiple_move_tasks.
		pipe(e, "src", "dlq", 10)
		e.create("dst", nil)
		in := &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst")), MaxNumberOfMessagesPerSecond: i64(1)}
		start(e, in)
		_, err := e.svc.StartMessageMoveTask(e.op(), in)
		wantErr(e.t, err, contract.ErrInvalidParameterValue("There is already a task running. Only one active task is allowed for a source queue arn at a given time."))
		e.finishMoveTask(queueARN("dlq"))
		// After it completed, a new task may start (nothing left to move).
		start(e, in)
		rs := e.listMoveTasks(queueARN("dlq"), 10)
		if len(rs) != 2 {
			e.t.Fatalf("ListMessageMoveTasks MaxResults 10 = %d tasks, want 2", len(rs))
		}
		// docs: newest first; MaxResults defaults to 1.
		if rs[1].Status != "COMPLETED" || rs[1].ApproximateNumberOfMessagesMoved != 10 {
			e.t.Errorf("older task = %+v, want COMPLETED with 10 moved", rs[1])
		}
		if one := e.listMoveTasks(queueARN("dlq"), 0); len(one) != 1 || one[0].StartedTimestamp != rs[0].StartedTimestamp || one[0].Status != rs[0].Status {
			e.t.Errorf("default ListMessageMoveTasks = %+v, want only the newest task", one)
		}
	})

	s.test(t, "OneRunningPerSourceAnySpelling", func(e *env) {
		// design: a queue is one source however its ARN is spelled (the
		// partition is not read), and a listing under either spelling
		// shows its task.
		pipe(e, "src", "dlq", 10)
		e.create("dst", nil)
		other := strings.Replace(queueARN("dlq"), "arn:aws:", "arn:aws-cn:", 1)
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst")), MaxNumberOfMessagesPerSecond: i64(1)})
		_, err := e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: other, DestinationArn: str(queueARN("dst")), MaxNumberOfMessagesPerSecond: i64(1)})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("There is already a task running. Only one active task is allowed for a source queue arn at a given time."))
		for _, arn := range []string{queueARN("dlq"), other} {
			if rs := e.listMoveTasks(arn, 10); len(rs) != 1 || rs[0].SourceArn != queueARN("dlq") {
				e.t.Errorf("ListMessageMoveTasks(%s) = %+v, want the one task, under the queue's ARN", arn, rs)
			}
		}
	})

	s.test(t, "NotIntoItself", func(e *env) {
		// design: a task whose destination is its source would never end;
		// it is refused, and the source's other tasks and listings go on.
		pipe(e, "src", "dlq", 2)
		_, err := e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dlq"))})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("The source and destination queues must be different."))
		if rs := e.listMoveTasks(queueARN("dlq"), 10); len(rs) != 0 {
			e.t.Errorf("a refused start left tasks: %+v", rs)
		}
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq")})
		if r := e.finishMoveTask(queueARN("dlq")); r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != 2 {
			e.t.Errorf("a task back to the source after the refused one: %+v, want COMPLETED with 2 moved", r)
		}
	})

	s.test(t, "ProgressAndCancel", func(e *env) {
		// recorded test_move_task_cancel.
		pipe(e, "src", "dlq", 10)
		dst := e.create("dst", nil)
		h := start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst")), MaxNumberOfMessagesPerSecond: i64(1)})
		e.clock.Advance(secs(2))
		e.runMoveTasks()
		rs := e.listMoveTasks(queueARN("dlq"), 0)
		if len(rs) != 1 {
			e.t.Fatalf("ListMessageMoveTasks = %+v", rs)
		}
		r := rs[0]
		if r.Status != "RUNNING" || r.TaskHandle != h || r.ApproximateNumberOfMessagesToMove == nil || *r.ApproximateNumberOfMessagesToMove != 10 ||
			r.MaxNumberOfMessagesPerSecond == nil || *r.MaxNumberOfMessagesPerSecond != 1 || r.ApproximateNumberOfMessagesMoved >= 10 {
			e.t.Errorf("running task = %+v, want RUNNING with its handle, 10 to move, rate 1, not yet done", r)
		}
		out, err := e.svc.CancelMessageMoveTask(e.op(), &contract.CancelMessageMoveTaskInput{TaskHandle: h})
		wantOK(e.t, err, "CancelMessageMoveTask")
		if out.ApproximateNumberOfMessagesMoved < 0 || out.ApproximateNumberOfMessagesMoved >= 10 {
			e.t.Errorf("cancel reports %d moved", out.ApproximateNumberOfMessagesMoved)
		}
		r = e.finishMoveTask(queueARN("dlq"))
		if r.Status != "CANCELLED" {
			e.t.Errorf("status after cancel = %s, want CANCELLED", r.Status)
		}
		left := e.counts(queueURL("dlq")).Visible
		moved := e.counts(dst).Visible
		l, _ := strconv.Atoi(left)
		m, _ := strconv.Atoi(moved)
		if l == 0 || l+m != 10 || int64(m) != r.ApproximateNumberOfMessagesMoved {
			e.t.Errorf("after cancel: %d left in the DLQ, %d in the destination, task says %d moved; want some left and 10 in all", l, m, r.ApproximateNumberOfMessagesMoved)
		}
	})

	s.test(t, "TwoInstancesOneTask", func(e *env) {
		// design: two servers over one store share a task: every message
		// moved is counted once, and the rate is the task's, not each
		// instance's.
		const n, rate = 45, 10
		pipe(e, "src", "dlq", n)
		dst := e.create("dst", nil)
		start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst")), MaxNumberOfMessagesPerSecond: i64(rate)})
		svcs := []*service.Service{e.svc, e.newService()}
		for sec := 1; sec <= 10; sec++ {
			e.clock.Advance(time.Second)
			// Several steps from each instance at once, all at the same
			// instant: at most one of them may move this second's share.
			e.concurrentMoveSteps(svcs, 8)
			r := e.listMoveTasks(queueARN("dlq"), 0)[0]
			l, _ := strconv.Atoi(e.counts(queueURL("dlq")).Visible)
			m, _ := strconv.Atoi(e.counts(dst).Visible)
			if l+m != n || r.ApproximateNumberOfMessagesMoved != int64(m) || m > rate*sec {
				e.t.Fatalf("after %d s at %d/s: %d left, %d arrived, task says %d moved (%s); want %d in all, the count exact, at most %d moved",
					sec, rate, l, m, r.ApproximateNumberOfMessagesMoved, r.Status, n, rate*sec)
			}
			if r.Status != "RUNNING" {
				if r.Status != "COMPLETED" || m != n || sec < n/rate {
					e.t.Errorf("task ended %s after %d s with %d of %d moved", r.Status, sec, m, n)
				}
				return
			}
		}
		e.t.Error("task still running after 10 s at 10/s for 45 messages")
	})

	s.test(t, "StaleStepMovesNothing", func(e *env) {
		// design: a step read the task and then stalled (its instance
		// paused, or died) before moving. Other instances step the task
		// meanwhile; when the stale step comes back it moves nothing, so
		// nothing moves twice for one share of the rate. A step whose move
		// fails inside the store (here: its destination is gone) leaves the
		// task as it was.
		pipe(e, "src", "dlq", 12)
		dst := e.create("dst", nil)
		h := start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst")), MaxNumberOfMessagesPerSecond: i64(5)})
		stale, err := e.store.MoveTaskGet(e.op(), &stores.MoveTaskGetParams{Handle: h})
		wantOK(e.t, err, "MoveTaskGet")
		e.clock.Advance(secs(1))
		_, err = e.store.MessageMove(e.op(), &stores.MessageMoveParams{NewID: uuid.NewString, FromName: "dlq", ToName: "gone", Max: 5, Now: e.clock.Now(),
			Step: &stores.MoveTaskStep{Handle: h, IfVersion: stale.Version, PacedTo: e.clock.Now()}})
		if !errors.Is(err, stores.ErrQueueNotFound) {
			e.t.Fatalf("step to a missing queue: %v, want ErrQueueNotFound", err)
		}
		if tk, err := e.store.MoveTaskGet(e.op(), &stores.MoveTaskGetParams{Handle: h}); err != nil || *tk != *stale {
			e.t.Fatalf("failed step changed the task: %+v (%v), was %+v", tk, err, stale)
		}
		e.runMoveTasks() // another instance's step
		e.wantCounts(dst, 5, 0, 0)
		_, err = e.store.MessageMove(e.op(), &stores.MessageMoveParams{NewID: uuid.NewString, FromName: "dlq", ToName: "dst", Max: 5, Now: e.clock.Now(),
			Step: &stores.MoveTaskStep{Handle: h, IfVersion: stale.Version, PacedTo: e.clock.Now()}})
		if !errors.Is(err, stores.ErrVersionConflict) {
			e.t.Fatalf("stale step: %v, want ErrVersionConflict", err)
		}
		e.wantCounts(dst, 5, 0, 0)
		e.wantCounts(queueURL("dlq"), 7, 0, 0)
		r := e.finishMoveTask(queueARN("dlq"))
		if r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != 12 {
			e.t.Errorf("task = %s, want COMPLETED with 12 moved", fmtTask(r))
		}
		e.wantCounts(dst, 12, 0, 0)
	})

	s.test(t, "StepStoppedBeforeEnding", func(e *env) {
		// design: a step's move and count are one store transaction, so an
		// instance that stops mid-step either did nothing or moved and
		// counted; what it may leave undone is ending a finished task. The
		// next step, on any instance, ends it with the exact count.
		pipe(e, "src", "dlq", 3)
		dst := e.create("dst", nil)
		h := start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst"))})
		tk, err := e.store.MoveTaskGet(e.op(), &stores.MoveTaskGetParams{Handle: h})
		wantOK(e.t, err, "MoveTaskGet")
		e.clock.Advance(secs(1))
		res, err := e.store.MessageMove(e.op(), &stores.MessageMoveParams{NewID: uuid.NewString, FromName: "dlq", ToName: "dst", Max: 10, Now: e.clock.Now(),
			Step: &stores.MoveTaskStep{Handle: h, IfVersion: tk.Version, PacedTo: e.clock.Now()}})
		wantOK(e.t, err, "MessageMove with Step")
		if res.Moved != 3 || !res.Exhausted || res.Task == nil || res.Task.Moved != 3 || res.Task.Version <= tk.Version ||
			!res.Task.PacedTo.Equal(e.clock.Now()) || res.Task.Status != "RUNNING" {
			e.t.Fatalf("step = %+v, task %+v; want 3 moved and counted, a new version, PacedTo stored, still RUNNING", res, res.Task)
		}
		// The instance stops here.
		r := e.finishMoveTask(queueARN("dlq"))
		if r.Status != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != 3 {
			e.t.Errorf("task = %s, want COMPLETED with 3 moved", fmtTask(r))
		}
		e.wantCounts(dst, 3, 0, 0)
	})

	s.test(t, "CancelWhileStepping", func(e *env) {
		// design: a cancel on one instance while another steps the task
		// reports exactly what moved, and nothing moves after it.
		const n = 200
		pipe(e, "src", "dlq", n)
		dst := e.create("dst", nil)
		h := start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("dst")), MaxNumberOfMessagesPerSecond: i64(100)})
		other := e.newService()
		// The stepping stops after 1 s of the clock (100 of the 200 moved
		// at most), so the task is still running whenever the cancel comes.
		stepping := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				if i == 20 {
					close(stepping)
				}
				e.clock.Advance(10 * time.Millisecond)
				if err := other.RunMoveTasks(e.op()); err != nil {
					done <- err
					return
				}
				if tk, err := e.store.MoveTaskGet(e.op(), &stores.MoveTaskGetParams{Handle: h}); err != nil || tk.Status != "RUNNING" || i >= 100 {
					done <- err
					return
				}
			}
		}()
		<-stepping
		out, err := e.svc.CancelMessageMoveTask(e.op(), &contract.CancelMessageMoveTaskInput{TaskHandle: h})
		wantOK(e.t, err, "CancelMessageMoveTask")
		wantOK(e.t, <-done, "stepping")
		e.clock.Advance(secs(1))
		e.runMoveTasks()
		m, _ := strconv.Atoi(e.counts(dst).Visible)
		r := e.listMoveTasks(queueARN("dlq"), 0)[0]
		if r.Status != "CANCELLED" || out.ApproximateNumberOfMessagesMoved != int64(m) || r.ApproximateNumberOfMessagesMoved != int64(m) || m == 0 || m == n {
			e.t.Errorf("cancel reported %d moved, task %s, %d arrived; want CANCELLED part way, both counts what arrived",
				out.ApproximateNumberOfMessagesMoved, fmtTask(r), m)
		}
	})

	s.test(t, "BadInput", func(e *env) {
		// recorded test_cancel_with_invalid_task_handle.
		_, err := e.svc.CancelMessageMoveTask(e.op(), &contract.CancelMessageMoveTaskInput{TaskHandle: "foobared"})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("Value for parameter TaskHandle is invalid."))
		pipe(e, "src", "dlq", 1)
		// docs: the rate is at most 500 (wording not recorded).
		_, err = e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), MaxNumberOfMessagesPerSecond: i64(501)})
		wantErrCode(e.t, err, "InvalidParameterValue", 400)
		// A completed task cannot be cancelled (docs: only RUNNING ones).
		h := start(e, &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq")})
		e.finishMoveTask(queueARN("dlq"))
		_, err = e.svc.CancelMessageMoveTask(e.op(), &contract.CancelMessageMoveTaskInput{TaskHandle: h})
		if err == nil {
			e.t.Error("cancelling a completed task succeeded")
		}
	})
}

func wantTask(t *testing.T, got, want contract.ListMessageMoveTasksResultEntry) {
	t.Helper()
	// The recorded responses list no TaskHandle for a finished task.
	if got.Status != want.Status || got.SourceArn != want.SourceArn || got.DestinationArn != want.DestinationArn ||
		got.ApproximateNumberOfMessagesMoved != want.ApproximateNumberOfMessagesMoved || got.StartedTimestamp != want.StartedTimestamp ||
		got.FailureReason != "" || got.TaskHandle != "" ||
		(got.ApproximateNumberOfMessagesToMove == nil) != (want.ApproximateNumberOfMessagesToMove == nil) ||
		(got.ApproximateNumberOfMessagesToMove != nil && *got.ApproximateNumberOfMessagesToMove != *want.ApproximateNumberOfMessagesToMove) {
		t.Errorf("task = %s, want %s", fmtTask(got), fmtTask(want))
	}
}

func fmtTask(r contract.ListMessageMoveTasksResultEntry) string {
	toMove := "nil"
	if r.ApproximateNumberOfMessagesToMove != nil {
		toMove = strconv.FormatInt(*r.ApproximateNumberOfMessagesToMove, 10)
	}
	return fmt.Sprintf("{Status:%s Source:%s Destination:%q Moved:%d ToMove:%s Started:%d Handle:%q Failure:%q}",
		r.Status, r.SourceArn, r.DestinationArn, r.ApproximateNumberOfMessagesMoved, toMove, r.StartedTimestamp, r.TaskHandle, r.FailureReason)
}
