package conformance

import (
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func testFIFO(t *testing.T, s suite) {
	s.test(t, "GroupRequired", func(e *env) {
		// snapshot test_posting_to_fifo_requires_deduplicationid_group_id.
		url := e.createFIFO("f.fifo", nil)
		_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("m"), MessageDeduplicationId: str("d")})
		wantErr(e.t, err, contract.ErrMissingParameter("MessageGroupId"))
		_, err = e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("m"), MessageGroupId: str("g")})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"))
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "InvalidIds", func(e *env) {
		// snapshot test_message_deduplication_id_invalid and
		// test_send_message_to_standard_queue_with_invalid_message_group_id.
		f := e.createFIFO("f.fifo", nil)
		std := e.create("std", nil)
		long := repeat("a", 129)
		for _, v := range []string{"", long, "group 123", "tab\tid", "é"} {
			_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: f, MessageBody: str("Hello World!"), MessageGroupId: str("test"), MessageDeduplicationId: str(v)})
			wantErr(e.t, err, contract.ErrInvalidParameterValue("Value "+v+" for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length."))
			groupErr := contract.ErrInvalidParameterValue("Value " + v + " for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
			_, err = e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: std, MessageBody: str("message"), MessageGroupId: str(v)})
			wantErr(e.t, err, groupErr)
			_, err = e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: f, MessageBody: str("m"), MessageGroupId: str(v), MessageDeduplicationId: str("d")})
			wantErr(e.t, err, groupErr)
		}
		// snapshot test_message_deduplication_id_success: 128 is fine, and
		// so is every punctuation character (docs).
		e.sendFIFO(f, "Hello World!", "test", repeat("a", 128))
		punct := "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
		e.sendFIFO(f, "p", punct, punct)
		e.sendIn(&contract.SendMessageInput{QueueUrl: std, MessageBody: str("g"), MessageGroupId: str(repeat("g", 128))})
		e.wantCounts(f, 2, 0, 0)
		e.wantCounts(std, 1, 0, 0)
		// A deduplication id on a Standard queue is refused (docs: FIFO only; wording not recorded).
		_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: std, MessageBody: str("m"), MessageDeduplicationId: str("d")})
		wantErrCode(e.t, err, "InvalidParameterValue", 400)
	})

	s.test(t, "SequenceNumbers", func(e *env) {
		// validated test_sequence_number / test_fifo_sequence_number_increases;
		// docs: unique, and increasing within a message group (AWS promises
		// no order across groups).
		f := e.createFIFO("f.fifo", nil)
		seqs := newSeqCheck(e.t)
		for i := range 12 {
			g := "g" + strconv.Itoa(i%3)
			seqs.add(g, e.sendFIFO(f, "m"+strconv.Itoa(i), g, "d"+strconv.Itoa(i)).SequenceNumber)
		}
	})

	s.test(t, "OrderWithinGroup", func(e *env) {
		url := e.createFIFO("f.fifo", nil)
		seqs := map[string]string{}
		for i := range 25 {
			seqs["m"+strconv.Itoa(i)] = e.sendFIFO(url, "m"+strconv.Itoa(i), "g", "d"+strconv.Itoa(i)).SequenceNumber
		}
		var got []string
		for len(got) < 25 {
			batch := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(10), WaitTimeSeconds: i64(0),
				MessageSystemAttributeNames: []string{"SequenceNumber"}})
			if len(batch) == 0 {
				break
			}
			// A group's messages come several per receive, up to Max.
			if want := min(10, 25-len(got)); len(batch) != want {
				e.t.Errorf("receive returned %d of one group, want %d", len(batch), want)
			}
			for _, m := range batch {
				got = append(got, m.Body)
				if m.Attributes["SequenceNumber"] != seqs[m.Body] {
					e.t.Errorf("%s SequenceNumber = %q, want %q", m.Body, m.Attributes["SequenceNumber"], seqs[m.Body])
				}
				e.del(url, m.ReceiptHandle)
			}
		}
		for i, b := range got {
			if b != "m"+strconv.Itoa(i) {
				e.t.Fatalf("order = %q, want m0..m24", got)
			}
		}
		if len(got) != 25 {
			e.t.Errorf("received %d, want 25", len(got))
		}
	})

	s.test(t, "OrderAfterTimeout", func(e *env) {
		// validated test_fifo_messages_in_order_after_timeout.
		url := e.createFIFO("f.fifo", map[string]string{"VisibilityTimeout": "1"})
		for i := range 3 {
			e.sendFIFO(url, "message-"+strconv.Itoa(i), "1", strconv.Itoa(i))
		}
		wantBodies(e.t, e.recv(url, 10), "message-0", "message-1", "message-2")
		e.clock.Advance(secs(2))
		wantBodies(e.t, e.recv(url, 10), "message-0", "message-1", "message-2")
	})

	s.test(t, "SeveralGroupsOneReceive", func(e *env) {
		// validated test_fifo_receive_message_group_id_ordering.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "g1-m1", "group-1", "")
		e.sendFIFO(url, "g2-m1", "group-2", "")
		e.sendFIFO(url, "g1-m2", "group-1", "")
		e.sendFIFO(url, "g1-m3", "group-1", "")
		got := e.recv(url, 10)
		wantBodySet(e.t, got, "g1-m1", "g1-m2", "g1-m3", "g2-m1")
		wantGroupOrder(e.t, got, map[string][]string{"group-1": {"g1-m1", "g1-m2", "g1-m3"}, "group-2": {"g2-m1"}})
	})

	s.test(t, "GroupBlockedWhileInFlight", func(e *env) {
		// validated test_fifo_receive_message_visibility_timeout_shared_in_group;
		// docs: no more messages of a group while it has messages in flight.
		url := e.createFIFO("f.fifo", map[string]string{"VisibilityTimeout": "30", "ContentBasedDeduplication": "true"})
		for _, b := range []string{"g1-m1", "g1-m2", "g1-m3", "g1-m4"} {
			e.sendFIFO(url, b, "group-1", "")
		}
		e.sendFIFO(url, "g2-m1", "group-2", "")
		e.sendFIFO(url, "g3-m1", "group-3", "")
		wantBodies(e.t, e.recv(url, 2), "g1-m1", "g1-m2")
		wantBodies(e.t, e.recv(url, 1), "g2-m1")
		wantBodies(e.t, e.recv(url, 10), "g3-m1")
		e.wantEmpty(url)
		e.wantCounts(url, 2, 4, 0)
		e.clock.Advance(secs(31))
		got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(10), WaitTimeSeconds: i64(0), VisibilityTimeout: i64(0)})
		wantBodySet(e.t, got, "g1-m1", "g1-m2", "g1-m3", "g1-m4", "g2-m1", "g3-m1")
		wantGroupOrder(e.t, got, map[string][]string{"group-1": {"g1-m1", "g1-m2", "g1-m3", "g1-m4"}})
	})

	s.test(t, "PartialDelete", func(e *env) {
		// validated test_fifo_message_group_visibility_after_partial_delete
		// and test_fifo_message_group_visibility_after_delete.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "g1-m1", "group-1", "")
		e.sendFIFO(url, "g2-m1", "group-2", "")
		e.sendFIFO(url, "g1-m2", "group-1", "")
		e.sendFIFO(url, "g2-m2", "group-2", "")
		e.sendFIFO(url, "g1-m3", "group-1", "")
		e.sendFIFO(url, "g1-m4", "group-1", "")
		e.sendFIFO(url, "g3-m1", "group-3", "")
		first := e.recv(url, 2)
		wantBodies(e.t, first, "g1-m1", "g1-m2")
		if len(first) != 2 {
			return
		}
		e.del(url, first[0].ReceiptHandle)
		got := e.recv(url, 10)
		wantBodySet(e.t, got, "g2-m1", "g2-m2", "g3-m1")
		wantGroupOrder(e.t, got, map[string][]string{"group-2": {"g2-m1", "g2-m2"}})
		e.del(url, first[1].ReceiptHandle)
		wantBodies(e.t, e.recv(url, 10), "g1-m3", "g1-m4")
	})

	s.test(t, "ZeroVisibilityReceive", func(e *env) {
		// validated test_fifo_receive_message_with_zero_visibility_timeout.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "g1-m1", "group-1", "")
		e.sendFIFO(url, "g2-m1", "group-2", "")
		e.sendFIFO(url, "g2-m2", "group-2", "")
		e.sendFIFO(url, "g3-m1", "group-3", "")
		e.sendFIFO(url, "g1-m2", "group-1", "")
		got := e.recvVT(url, 3, 0)
		wantBodySet(e.t, got, "g1-m1", "g1-m2", "g2-m1")
		wantGroupOrder(e.t, got, map[string][]string{"group-1": {"g1-m1", "g1-m2"}})
		got = e.recvVT(url, 10, 0)
		wantBodySet(e.t, got, "g1-m1", "g1-m2", "g2-m1", "g2-m2", "g3-m1")
		wantGroupOrder(e.t, got, map[string][]string{"group-1": {"g1-m1", "g1-m2"}, "group-2": {"g2-m1", "g2-m2"}})
	})

	// Across groups, a receive serves groups in the order their heads
	// became receivable: a never-received head from its send (or its
	// delay's end), a head that was received from when its visibility
	// ended (lapsed, or changed). So a group whose message comes back goes
	// after the groups that were waiting. The validated LocalStack tests
	// cited pin AWS's exact order; ties (one instant) go by send order.
	// The fake clock moves a second between steps so that every other
	// order is by time.
	s.test(t, "GroupOrderAfterLapse", func(e *env) {
		// validated test_fifo_receive_message_visibility_timeout_shared_in_group
		// (the AWS order: g3, then g1 and g2 in the order they lapsed).
		url := e.createFIFO("f.fifo", map[string]string{"VisibilityTimeout": "1", "ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "a1", "A", "")
		e.clock.Advance(secs(1))
		e.sendFIFO(url, "b1", "B", "")
		e.clock.Advance(secs(1))
		wantBodies(e.t, e.recv(url, 1), "a1")
		e.clock.Advance(secs(2)) // a1's visibility lapsed after b1 was sent
		wantBodies(e.t, e.recv(url, 1), "b1")
		wantBodies(e.t, e.recv(url, 1), "a1")
	})

	s.test(t, "GroupOrderAfterVisibilityChange", func(e *env) {
		// validated test_fifo_message_group_visibility_after_terminate_visibility_timeout
		// and ..._after_change_message_visibility.
		url := e.createFIFO("f.fifo", map[string]string{"VisibilityTimeout": "30", "ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "g1-m1", "group-1", "")
		e.sendFIFO(url, "g1-m2", "group-1", "")
		e.sendFIFO(url, "g2-m1", "group-2", "")
		e.clock.Advance(secs(1))
		first := e.recv(url, 2)
		wantBodies(e.t, first, "g1-m1", "g1-m2")
		if len(first) != 2 {
			return
		}
		e.clock.Advance(secs(1))
		wantOK(e.t, e.cmv(url, first[0].ReceiptHandle, 0), "ChangeMessageVisibility")
		e.clock.Advance(secs(1))
		// g1-m2 is still in flight: it stops group-1's run after g1-m1.
		second := e.recv(url, 3)
		wantBodies(e.t, second, "g2-m1", "g1-m1")
		if len(second) != 2 {
			return
		}
		// A visibility that ends by ChangeMessageVisibility 1 orders the
		// same way: group-3, sent before it ended, comes first.
		e.clock.Advance(secs(1))
		e.sendFIFO(url, "g3-m1", "group-3", "")
		e.clock.Advance(secs(1))
		wantOK(e.t, e.cmv(url, second[1].ReceiptHandle, 1), "ChangeMessageVisibility")
		e.clock.Advance(secs(2))
		wantBodies(e.t, e.recv(url, 10), "g3-m1", "g1-m1")
	})

	s.test(t, "GroupOrderAfterZeroVisibilityReceive", func(e *env) {
		// validated test_fifo_receive_message_with_zero_visibility_timeout:
		// AWS returned g3-m1, g1-m1, g1-m2, g2-m1, g2-m2 (group-1 and
		// group-2 came back in one instant, in the order they were sent).
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "g1-m1", "group-1", "")
		e.sendFIFO(url, "g2-m1", "group-2", "")
		e.sendFIFO(url, "g2-m2", "group-2", "")
		e.sendFIFO(url, "g3-m1", "group-3", "")
		e.sendFIFO(url, "g1-m2", "group-1", "")
		e.clock.Advance(secs(1))
		wantBodies(e.t, e.recvVT(url, 3, 0), "g1-m1", "g1-m2", "g2-m1")
		wantBodies(e.t, e.recvVT(url, 10, 0), "g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2")
	})

	s.test(t, "GroupOrderSeveralGroups", func(e *env) {
		// Derived from the validated cases above: groups that never gave a
		// message come in send order, then the groups that came back, in
		// the order their visibility ended (not the order they were sent
		// or received).
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		for _, g := range []string{"A", "B", "C", "D"} {
			e.sendFIFO(url, g+"1", g, "")
			e.clock.Advance(secs(1))
		}
		wantBodies(e.t, e.recvVT(url, 1, 10), "A1") // back at +10 s
		wantBodies(e.t, e.recvVT(url, 1, 5), "B1")  // back at +5 s
		e.clock.Advance(secs(11))
		wantBodies(e.t, e.recvVT(url, 10, 0), "C1", "D1", "B1", "A1")
	})

	s.test(t, "GroupOrderBackBeforeLaterSend", func(e *env) {
		// Derived: a group that came back before another group's first
		// message was sent is served first; the order is when a head became
		// receivable, not whether it was received before.
		url := e.createFIFO("f.fifo", map[string]string{"VisibilityTimeout": "2", "ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "a1", "A", "")
		e.clock.Advance(secs(1))
		wantBodies(e.t, e.recv(url, 1), "a1")
		e.clock.Advance(secs(5)) // a1 back at +2 s
		e.sendFIFO(url, "c1", "C", "")
		e.clock.Advance(secs(1))
		wantBodies(e.t, e.recv(url, 1), "a1")
		wantBodies(e.t, e.recv(url, 1), "c1")
	})

	s.test(t, "GroupOrderAfterDelete", func(e *env) {
		// validated test_fifo_message_group_visibility_after_delete: AWS
		// returned g2-m1, g2-m2, g1-m3, g1-m4, g3-m1. A delete makes the
		// next message the head, and that head was receivable since its
		// send: group-1 stays before group-3.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		for _, m := range [][2]string{{"g1-m1", "group-1"}, {"g2-m1", "group-2"}, {"g1-m2", "group-1"},
			{"g2-m2", "group-2"}, {"g1-m3", "group-1"}, {"g1-m4", "group-1"}, {"g3-m1", "group-3"}} {
			e.sendFIFO(url, m[0], m[1], "")
			e.clock.Advance(secs(1))
		}
		first := e.recv(url, 2)
		wantBodies(e.t, first, "g1-m1", "g1-m2")
		if len(first) != 2 {
			return
		}
		e.clock.Advance(secs(1))
		e.del(url, first[0].ReceiptHandle)
		e.del(url, first[1].ReceiptHandle)
		e.clock.Advance(secs(1))
		wantBodies(e.t, e.recv(url, 10), "g2-m1", "g2-m2", "g1-m3", "g1-m4", "g3-m1")
	})

	s.test(t, "EmptyGroupRefills", func(e *env) {
		// snapshot test_fifo_empty_message_groups_added_back_to_queue.
		url := e.createFIFO("f.fifo", nil)
		e.sendFIFO(url, "Message 1", "g1", "1")
		m := e.recvOne(url)
		if m.MD5OfBody != "68390233272823b7adf13a1db79b2cd7" {
			e.t.Errorf("MD5OfBody = %s", m.MD5OfBody)
		}
		e.del(url, m.ReceiptHandle)
		e.wantEmpty(url)
		e.sendFIFO(url, "Message 2", "g1", "2")
		wantBodies(e.t, e.recv(url, 1), "Message 2")
	})

	s.test(t, "SendToInFlightGroup", func(e *env) {
		// validated test_fifo_message_group_visibility: a send to a group in
		// flight does not make the group receivable.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "60"})
		e.sendFIFO(url, "message-1", "1", "")
		m := e.recvOne(url)
		e.sendFIFO(url, "message-2", "1", "")
		e.wantEmpty(url)
		e.del(url, m.ReceiptHandle)
		wantBodies(e.t, e.recv(url, 10), "message-2")
	})

	s.test(t, "AttemptNotReplayedAfterAVisibilityChange", func(e *env) {
		// docs (ReceiveRequestAttemptId): a retry replays "if none of the
		// messages have been modified (deleted or had their visibility
		// changes)". After an extension the retry is a new receive: it
		// hands back no old receipt and leaves the extension in place.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "m0", "g", "")
		e.sendFIFO(url, "m1", "g", "")
		attempt := func() []contract.Message {
			return e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(2),
				WaitTimeSeconds: i64(0), ReceiveRequestAttemptId: str("attempt-1")})
		}
		first := attempt() // visible again in 30 s, the queue's default
		wantBodies(e.t, first, "m0", "m1")
		if len(first) != 2 {
			return
		}
		wantOK(e.t, e.cmv(url, first[0].ReceiptHandle, 600), "ChangeMessageVisibility 600 on m0")
		e.clock.Advance(secs(10))
		for _, m := range attempt() {
			for _, f := range first {
				if m.ReceiptHandle == f.ReceiptHandle {
					e.t.Errorf("the retry after a visibility change replayed %s with its old receipt", m.Body)
				}
			}
		}
		// 41 s after the receive m1 is visible again, but m0, extended to
		// 600 s, holds the group.
		e.clock.Advance(secs(31))
		if got := e.recv(url, 10); len(got) != 0 {
			e.t.Errorf("41 s after the receive, with m0 extended to 600 s: received %q, want nothing", bodies(got))
		}
		// Unmodified, an attempt still replays (as ReceiveRequestAttemptId).
		e.sendFIFO(url, "n0", "h", "")
		once := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(1), WaitTimeSeconds: i64(0), ReceiveRequestAttemptId: str("attempt-2")})
		again := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(1), WaitTimeSeconds: i64(0), ReceiveRequestAttemptId: str("attempt-2")})
		if len(once) != 1 || len(again) != 1 || once[0].ReceiptHandle != again[0].ReceiptHandle {
			e.t.Errorf("an unmodified attempt: %q then %q, want the same message and receipt", bodies(once), bodies(again))
		}
		third := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(1), WaitTimeSeconds: i64(0), ReceiveRequestAttemptId: str("attempt-2")})
		if len(third) != 1 || third[0].ReceiptHandle != once[0].ReceiptHandle {
			e.t.Errorf("a second replay: %q, want the same message and receipt", bodies(third))
		}
	})

	s.test(t, "AttemptReplayWithAShorterVisibility", func(e *env) {
		// docs (ReceiveRequestAttemptId): a retry "resets the visibility
		// timeout", to the retry's own. When that ends sooner than the
		// first receive's, the message is receivable then.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "m0", "g", "")
		attempt := func(vt int64) []contract.Message {
			return e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(1),
				VisibilityTimeout: i64(vt), WaitTimeSeconds: i64(0), ReceiveRequestAttemptId: str("attempt-1")})
		}
		first := attempt(60)
		wantBodies(e.t, first, "m0")
		e.clock.Advance(secs(5))
		again := attempt(1)
		if len(first) != 1 || len(again) != 1 || again[0].ReceiptHandle != first[0].ReceiptHandle {
			e.t.Fatalf("the retry: %q, want m0 replayed with its receipt", bodies(again))
		}
		e.clock.Advance(secs(5)) // 4 s after the retry's visibility ended, 50 s before the first's
		wantBodies(e.t, e.recv(url, 10), "m0")
	})

	s.test(t, "ReceiveRequestAttemptId", func(e *env) {
		// docs: a retry with the same ReceiveRequestAttemptId returns the
		// same messages and receipt handles and resets their visibility.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		for i := range 4 {
			e.sendFIFO(url, "m"+strconv.Itoa(i), "g", "")
		}
		e.sendFIFO(url, "other", "h", "")
		attempt := func(id string, max int64) []contract.Message {
			return e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(max), WaitTimeSeconds: i64(0), ReceiveRequestAttemptId: str(id)})
		}
		first := attempt("attempt-1", 2)
		wantBodies(e.t, first, "m0", "m1")
		if len(first) != 2 {
			return
		}
		e.clock.Advance(secs(20))
		again := attempt("attempt-1", 2)
		if len(again) != 2 {
			e.t.Fatalf("replay returned %d messages, want 2", len(again))
		}
		for i := range again {
			if again[i].MessageId != first[i].MessageId || again[i].ReceiptHandle != first[i].ReceiptHandle {
				e.t.Errorf("replay message %d = %s/%s, want %s/%s", i, again[i].MessageId, again[i].ReceiptHandle, first[i].MessageId, first[i].ReceiptHandle)
			}
		}
		// The replay restarted the 30 s timeout: at 20+29 s still hidden.
		e.clock.Advance(secs(29))
		if got := attempt("attempt-2", 10); !equalStrings(bodies(got), []string{"other"}) {
			e.t.Errorf("another attempt got %q, want only the other group's message", bodies(got))
		}
		// The replayed handles work.
		e.del(url, again[0].ReceiptHandle)
		e.del(url, again[1].ReceiptHandle)
		e.clock.Advance(secs(2))
		wantBodies(e.t, e.recv(url, 2), "m2", "m3")
		// docs: up to 128 alphanumeric and punctuation characters.
		for _, bad := range []string{repeat("a", 129), "with space"} {
			_, err := e.svc.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(0), ReceiveRequestAttemptId: str(bad)})
			wantErrCode(e.t, err, "InvalidParameterValue", 400)
		}
	})
}

// wantGroupOrder checks that, within ms, the listed bodies of each group
// appear in the given order (other messages may interleave).
func wantGroupOrder(t *testing.T, ms []contract.Message, groups map[string][]string) {
	t.Helper()
	pos := map[string]int{}
	for i, m := range ms {
		pos[m.Body] = i
	}
	for g, order := range groups {
		for i := 1; i < len(order); i++ {
			a, okA := pos[order[i-1]]
			b, okB := pos[order[i]]
			if okA && okB && a > b {
				t.Errorf("group %s out of order in %q: %s before %s", g, bodies(ms), order[i], order[i-1])
			}
		}
	}
}

func testDeduplication(t *testing.T, s suite) {
	s.test(t, "ById", func(e *env) {
		url := e.createFIFO("f.fifo", nil)
		a := e.sendFIFO(url, "first", "g", "d1")
		b := e.sendFIFO(url, "second, same id", "g", "d1")
		// design: a duplicate echoes the original MessageId and SequenceNumber.
		if b.MessageId != a.MessageId || b.SequenceNumber != a.SequenceNumber {
			e.t.Errorf("duplicate send = %s/%s, want the original %s/%s", b.MessageId, b.SequenceNumber, a.MessageId, a.SequenceNumber)
		}
		// SDKs check MD5OfMessageBody against the body they sent, so a
		// duplicate answers with the MD5 of its own body.
		if b.MD5OfMessageBody != md5OfBody("second, same id") {
			e.t.Errorf("duplicate MD5OfMessageBody = %s, want the MD5 of the body sent", b.MD5OfMessageBody)
		}
		e.wantCounts(url, 1, 0, 0)
		wantBodies(e.t, e.recv(url, 10), "first")
	})

	s.test(t, "ByContent", func(e *env) {
		// validated test_fifo_content_based_message_deduplication_arrives_once.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		item := `{"foo": "bar"}`
		a := e.sendFIFO(url, item, "group-1", "")
		b := e.sendFIFO(url, item, "group-1", "")
		if b.MessageId != a.MessageId || b.SequenceNumber != a.SequenceNumber {
			e.t.Errorf("content duplicate = %s/%s, want %s/%s", b.MessageId, b.SequenceNumber, a.MessageId, a.SequenceNumber)
		}
		e.sendFIFO(url, item+" ", "group-1", "")
		// docs: an explicit id overrides the content hash.
		e.sendFIFO(url, item, "group-1", "explicit")
		e.wantCounts(url, 3, 0, 0)
		got := e.recv(url, 10)
		wantBodies(e.t, got, item, item+" ", item)
		if len(got) == 3 && got[0].MD5OfBody != "94232c5b8fc9272f6f73a1e36eb68fcf" {
			e.t.Errorf("MD5OfBody = %s (snapshot: 94232c5b8fc9272f6f73a1e36eb68fcf)", got[0].MD5OfBody)
		}
	})

	s.test(t, "AfterDelete", func(e *env) {
		// snapshot test_fifo_deduplication_arrives_once_after_delete (both variants).
		for _, cbd := range []bool{true, false} {
			name, dedup := "cbd.fifo", ""
			attrs := map[string]string{"ContentBasedDeduplication": "true"}
			if !cbd {
				name, dedup, attrs = "ids.fifo", "dedup1", nil
			}
			url := e.createFIFO(name, attrs)
			item := `{"foo": "bar"}`
			e.sendFIFO(url, item, "group-1", dedup)
			m := e.recvOne(url)
			e.del(url, m.ReceiptHandle)
			again := e.sendFIFO(url, item, "group-1", dedup)
			if again.MessageId != m.MessageId {
				e.t.Errorf("%s: resend after delete = %s, want the original %s", name, again.MessageId, m.MessageId)
			}
			e.wantEmpty(url)
		}
	})

	s.test(t, "Window", func(e *env) {
		url := e.createFIFO("f.fifo", nil)
		a := e.sendFIFO(url, "one", "g", "d")
		e.clock.Advance(secs(299))
		if b := e.sendFIFO(url, "two", "g", "d"); b.MessageId != a.MessageId {
			e.t.Errorf("resend within 5 minutes: new MessageId %s", b.MessageId)
		}
		e.clock.Advance(secs(2)) // 5 min 1 s after the first send
		c := e.sendFIFO(url, "three", "g", "d")
		if c.MessageId == a.MessageId || !seqLess(a.SequenceNumber, c.SequenceNumber) {
			e.t.Errorf("resend after 5 minutes = %s/%s, want a new message after %s/%s", c.MessageId, c.SequenceNumber, a.MessageId, a.SequenceNumber)
		}
		got := e.recv(url, 10)
		wantBodies(e.t, got, "one", "three")
		for _, m := range got {
			e.del(url, m.ReceiptHandle)
		}
		// The window counts from the first send, not from the duplicates.
		e.sendFIFO(url, "four", "g", "e")
		e.clock.Advance(secs(240))
		e.sendFIFO(url, "five", "g", "e")
		e.clock.Advance(secs(61))
		e.sendFIFO(url, "six", "g", "e")
		wantBodies(e.t, e.recv(url, 10), "four", "six")
	})

	s.test(t, "QueueScope", func(e *env) {
		// snapshot test_fifo_deduplication_not_on_message_group_id and
		// test_sqs_fifo_same_dedup_id_different_message_groups.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "False"})
		e.sendFIFO(url, "Test", "group1", "same-dedup")
		m := e.recvOne(url)
		if m.MD5OfBody != "0cbc6611f5540bd0809a388dc95a615b" {
			e.t.Errorf("MD5OfBody = %s", m.MD5OfBody)
		}
		e.del(url, m.ReceiptHandle)
		e.sendFIFO(url, "Test", "group2", "same-dedup")
		e.wantEmpty(url)
		cbd := e.createFIFO("c.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(cbd, `{"foo": "bar"}`, "group-1", "")
		e.sendFIFO(cbd, `{"foo": "bar"}`, "group-2", "")
		e.wantCounts(cbd, 1, 0, 0)
	})

	s.test(t, "MessageGroupScope", func(e *env) {
		// snapshot test_fifo_high_throughput_ordering and
		// test_sqs_fifo_message_group_scope_no_throughput_setting.
		ht := e.createFIFO("ht.fifo", map[string]string{"ContentBasedDeduplication": "False",
			"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
		a := e.sendFIFO(ht, "Test1", "group1", "same-dedup")
		b := e.sendFIFO(ht, "Test2", "group2", "same-dedup")
		if a.MessageId == b.MessageId {
			e.t.Error("per-group scope: the same id in another group was treated as a duplicate")
		}
		if c := e.sendFIFO(ht, "Test3", "group1", "same-dedup"); c.MessageId != a.MessageId {
			e.t.Error("per-group scope: the same id in the same group was not a duplicate")
		}
		wantBodySet(e.t, e.recv(ht, 10), "Test1", "Test2")
		sc := e.createFIFO("sc.fifo", map[string]string{"ContentBasedDeduplication": "True", "DeduplicationScope": "messageGroup"})
		e.sendFIFO(sc, "Test", "group1", "")
		e.sendFIFO(sc, "Test", "group2", "")
		e.sendFIFO(sc, "Test", "group2", "")
		e.wantCounts(sc, 2, 0, 0)
	})

	s.test(t, "WithinBatch", func(e *env) {
		url := e.createFIFO("f.fifo", nil)
		out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
			{Id: "a", MessageBody: str("a"), MessageGroupId: str("g"), MessageDeduplicationId: str("same")},
			{Id: "b", MessageBody: str("b"), MessageGroupId: str("g"), MessageDeduplicationId: str("same")},
		}})
		wantOK(e.t, err, "SendMessageBatch")
		if len(out.Successful) != 2 {
			e.t.Fatalf("%d successful, want 2: %+v", len(out.Successful), out)
		}
		if out.Successful[0].MessageId != out.Successful[1].MessageId {
			e.t.Errorf("batch duplicate got MessageId %s, want the first entry's %s", out.Successful[1].MessageId, out.Successful[0].MessageId)
		}
		e.wantCounts(url, 1, 0, 0)
		// And across a batch and a single send.
		if d := e.sendFIFO(url, "c", "g", "same"); d.MessageId != out.Successful[0].MessageId {
			e.t.Errorf("send after batch: %s, want %s", d.MessageId, out.Successful[0].MessageId)
		}
	})

	s.test(t, "BatchSequenceOrder", func(e *env) {
		// A batch's entries are numbered in entry order (one batch, two
		// groups, a duplicate in the middle) and received in that order.
		url := e.createFIFO("f.fifo", nil)
		old := e.sendFIFO(url, "old", "h", "dup")
		var entries []contract.SendMessageBatchRequestEntry
		for i := range 10 {
			dedup := "d" + strconv.Itoa(i)
			if i == 5 {
				dedup = "dup"
			}
			entries = append(entries, contract.SendMessageBatchRequestEntry{Id: "e" + strconv.Itoa(i), MessageBody: str("m" + strconv.Itoa(i)),
				MessageGroupId: str("g" + strconv.Itoa(i%2)), MessageDeduplicationId: str(dedup)})
		}
		out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
		wantOK(e.t, err, "SendMessageBatch")
		if len(out.Successful) != 10 {
			e.t.Fatalf("%d successful, want 10: %+v", len(out.Successful), out)
		}
		seqs := newSeqCheck(e.t)
		for i, r := range out.Successful {
			if r.Id != "e"+strconv.Itoa(i) {
				e.t.Fatalf("entry %d is %s", i, r.Id)
			}
			if i == 5 {
				if r.MessageId != old.MessageId || r.SequenceNumber != old.SequenceNumber {
					e.t.Errorf("duplicate entry = %s/%s, want the earlier %s/%s", r.MessageId, r.SequenceNumber, old.MessageId, old.SequenceNumber)
				}
				continue
			}
			seqs.add("g"+strconv.Itoa(i%2), r.SequenceNumber) // in entry order within each group
		}
		got := e.recvAll(url, 10)
		wantBodySet(e.t, got, "old", "m0", "m1", "m2", "m3", "m4", "m6", "m7", "m8", "m9")
		wantGroupOrder(e.t, got, map[string][]string{"g0": {"m0", "m2", "m4", "m6", "m8"}, "g1": {"m1", "m3", "m7", "m9"}, "h": {"old"}})
	})

	s.test(t, "RetrySafeAcrossInstances", func(e *env) {
		// design: a send whose result was lost is retried safely with the
		// same deduplication id, on any instance.
		url := e.createFIFO("f.fifo", nil)
		a := e.sendFIFO(url, "m", "g", "retry-1")
		other := e.newService()
		out, err := other.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("m"), MessageGroupId: str("g"), MessageDeduplicationId: str("retry-1")})
		wantOK(e.t, err, "retry on the second instance")
		if out.MessageId != a.MessageId || out.SequenceNumber != a.SequenceNumber {
			e.t.Errorf("retry = %s/%s, want %s/%s", out.MessageId, out.SequenceNumber, a.MessageId, a.SequenceNumber)
		}
		e.wantCounts(url, 1, 0, 0)
	})
}
