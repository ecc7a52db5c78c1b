package conformance

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func sendEntries(n int) []contract.SendMessageBatchRequestEntry {
	out := make([]contract.SendMessageBatchRequestEntry, n)
	for i := range out {
		out[i] = contract.SendMessageBatchRequestEntry{Id: "message-" + strconv.Itoa(i), MessageBody: str("messageBody-" + strconv.Itoa(i))}
	}
	return out
}

func testBatches(t *testing.T, s suite) {
	s.test(t, "SendBatch", func(e *env) {
		url := e.create("q", nil)
		entries := sendEntries(10)
		entries[3].MessageAttributes = map[string]contract.MessageAttributeValue{"k": strAttr("x")}
		entries[4].MessageSystemAttributes = map[string]contract.MessageAttributeValue{"AWSTraceHeader": strAttr(traceHeader)}
		out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
		wantOK(e.t, err, "SendMessageBatch")
		if len(out.Successful) != 10 || len(out.Failed) != 0 {
			e.t.Fatalf("%d successful, %d failed; want 10 and 0", len(out.Successful), len(out.Failed))
		}
		ids := map[string]string{}
		for _, r := range out.Successful {
			i, _ := strconv.Atoi(r.Id[len("message-"):])
			if r.MD5OfMessageBody != md5OfBody(*entries[i].MessageBody) || !uuidRE.MatchString(r.MessageId) || r.SequenceNumber != "" {
				e.t.Errorf("result %+v", r)
			}
			if want := md5OfAttributes(entries[i].MessageAttributes); r.MD5OfMessageAttributes != want {
				e.t.Errorf("entry %s MD5OfMessageAttributes = %q, want %q", r.Id, r.MD5OfMessageAttributes, want)
			}
			if want := md5OfAttributes(entries[i].MessageSystemAttributes); r.MD5OfMessageSystemAttributes != want {
				e.t.Errorf("entry %s MD5OfMessageSystemAttributes = %q, want %q", r.Id, r.MD5OfMessageSystemAttributes, want)
			}
			ids[r.MessageId] = *entries[i].MessageBody
		}
		if len(ids) != 10 {
			e.t.Errorf("MessageIds not distinct: %v", ids)
		}
		got := e.recv(url, 10)
		if len(got) != 10 {
			e.t.Fatalf("received %d, want 10", len(got))
		}
		for _, m := range got {
			if ids[m.MessageId] != m.Body {
				e.t.Errorf("message %s has body %q, want %q", m.MessageId, m.Body, ids[m.MessageId])
			}
		}
	})

	s.test(t, "Empty", func(e *env) {
		url := e.create("q", nil)
		_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url})
		wantErr(e.t, err, contract.ErrEmptyBatchRequest("SendMessageBatchRequestEntry"))
		_, err = e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url})
		wantErr(e.t, err, contract.ErrEmptyBatchRequest("DeleteMessageBatchRequestEntry"))
		_, err = e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url})
		wantErr(e.t, err, contract.ErrEmptyBatchRequest("ChangeMessageVisibilityBatchRequestEntry"))
	})

	s.test(t, "TooMany", func(e *env) {
		// snapshot test_too_many_entries_in_batch_request,
		// test_delete_message_batch_with_too_large_batch and
		// test_change_message_visibility_batch_with_too_large_batch.
		url := e.create("q", nil)
		for _, n := range []int{11, 20} {
			want := contract.ErrTooManyEntriesInBatchRequest(n)
			if n == 20 {
				want.Message = "Maximum number of entries per request are 10. You have sent 20."
			}
			_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: sendEntries(n)})
			wantErr(e.t, err, want)
			del := make([]contract.DeleteMessageBatchRequestEntry, n)
			cmv := make([]contract.ChangeMessageVisibilityBatchRequestEntry, n)
			for i := range del {
				del[i] = contract.DeleteMessageBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: "h"}
				cmv[i] = contract.ChangeMessageVisibilityBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: "h", VisibilityTimeout: i64(123)}
			}
			_, err = e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: del})
			wantErr(e.t, err, want)
			_, err = e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: cmv})
			wantErr(e.t, err, want)
		}
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "IdsNotDistinct", func(e *env) {
		url := e.create("q", nil)
		entries := sendEntries(3)
		entries[2].Id = entries[0].Id
		_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
		wantErr(e.t, err, contract.ErrBatchEntryIdsNotDistinct(entries[0].Id))
		_, err = e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: []contract.DeleteMessageBatchRequestEntry{
			{Id: "a", ReceiptHandle: "h1"}, {Id: "a", ReceiptHandle: "h2"}}})
		wantErr(e.t, err, contract.ErrBatchEntryIdsNotDistinct("a"))
		_, err = e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{
			{Id: "b", ReceiptHandle: "h1", VisibilityTimeout: i64(1)}, {Id: "b", ReceiptHandle: "h2", VisibilityTimeout: i64(1)}}})
		wantErr(e.t, err, contract.ErrBatchEntryIdsNotDistinct("b"))
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "InvalidEntryId", func(e *env) {
		// snapshot test_invalid_batch_id and test_delete_message_batch_invalid_msg_id.
		url := e.create("q", nil)
		want := contract.ErrInvalidBatchEntryId()
		for _, id := range []string{"", repeat("testLongId", 10), "invalid:id", "message:abc", "sp ace", "dot.id"} {
			entries := sendEntries(2)
			entries[1].Id = id
			_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
			wantErr(e.t, err, want)
			_, err = e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url,
				Entries: []contract.DeleteMessageBatchRequestEntry{{Id: id, ReceiptHandle: "testHandle1"}}})
			wantErr(e.t, err, want)
			_, err = e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url,
				Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{{Id: id, ReceiptHandle: "testHandle1", VisibilityTimeout: i64(1)}}})
			wantErr(e.t, err, want)
		}
		// 80 characters of the allowed kinds are fine.
		entries := sendEntries(2)
		entries[0].Id = repeat("a", 78) + "-_"
		_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
		wantOK(e.t, err, "SendMessageBatch with an 80-character id")
		e.wantCounts(url, 2, 0, 0)
	})

	s.test(t, "TooLong", func(e *env) {
		// snapshot test_send_message_batch_with_oversized_contents.
		url := e.create("q", nil)
		k := map[string]contract.MessageAttributeValue{"k": strAttr("x")}
		big := repeat("a", 1048576-8)
		_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
			{Id: "1", MessageBody: &big, MessageAttributes: k},
			{Id: "2", MessageBody: str("a")},
		}})
		want := contract.ErrBatchRequestTooLong(1048577)
		want.Message = "Batch requests cannot be longer than 1048576 bytes. You have sent 1048577 bytes."
		wantErr(e.t, err, want)
		e.wantCounts(url, 0, 0, 0)
		// Exactly 1 MiB in total is accepted.
		out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
			{Id: "1", MessageBody: str(repeat("a", 1048576-8-1)), MessageAttributes: k},
			{Id: "2", MessageBody: str("a")},
		}})
		wantOK(e.t, err, "SendMessageBatch of exactly 1 MiB")
		if len(out.Successful) != 2 {
			e.t.Errorf("%d successful, want 2 (failed %v)", len(out.Successful), out.Failed)
		}
	})

	s.test(t, "EntryTooBig", func(e *env) {
		// snapshot test_send_batch_message_size: one entry over the queue's
		// MaximumMessageSize fails alone.
		url := e.create("q", map[string]string{"MaximumMessageSize": "1024"})
		out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
			{Id: "a4cff0d1-1961-44bd-ae53-c6d5ed71ed08", MessageBody: str(repeat("a", 1024))},
			{Id: "35b535ed-b76a-4ebd-b749-6eb35cdb55ee", MessageBody: str(repeat("a", 1025))},
		}})
		wantOK(e.t, err, "SendMessageBatch")
		if len(out.Successful) != 1 || out.Successful[0].Id != "a4cff0d1-1961-44bd-ae53-c6d5ed71ed08" ||
			out.Successful[0].MD5OfMessageBody != "c9a34cfc85d982698c6ac89f76071abd" {
			e.t.Errorf("Successful = %+v", out.Successful)
		}
		want := contract.BatchResultErrorEntry{Id: "35b535ed-b76a-4ebd-b749-6eb35cdb55ee", SenderFault: true, Code: "InvalidParameterValue",
			Message: "One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes."}
		if len(out.Failed) != 1 || out.Failed[0] != want {
			e.t.Errorf("Failed = %+v, want [%+v]", out.Failed, want)
		}
		e.wantCounts(url, 1, 0, 0)
	})

	s.test(t, "SendPartialFailure", func(e *env) {
		// validated test_batch_send_with_invalid_char_should_succeed.
		url := e.create("q", nil)
		entries := sendEntries(10)
		entries[9] = contract.SendMessageBatchRequestEntry{Id: "9", MessageBody: str("\x01")}
		entries[5].MessageAttributes = map[string]contract.MessageAttributeValue{"ErrorDetails": strAttr("")}
		out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
		wantOK(e.t, err, "SendMessageBatch")
		if len(out.Successful) != 8 || len(out.Failed) != 2 {
			e.t.Fatalf("%d successful, %d failed; want 8 and 2", len(out.Successful), len(out.Failed))
		}
		for _, f := range out.Failed {
			switch f.Id {
			case "9":
				if f.Code != "InvalidMessageContents" || !f.SenderFault {
					e.t.Errorf("failed entry 9 = %+v, want InvalidMessageContents, sender fault", f)
				}
			case "message-5":
				if f.Code != "InvalidParameterValue" || !f.SenderFault ||
					f.Message != "Message (user) attribute 'ErrorDetails' must contain a non-empty value of type 'String'." {
					e.t.Errorf("failed entry message-5 = %+v", f)
				}
			default:
				e.t.Errorf("unexpected failure %+v", f)
			}
		}
		e.wantCounts(url, 8, 0, 0)
	})

	s.test(t, "DeleteBatch", func(e *env) {
		url := e.create("q", nil)
		for i := range 3 {
			e.send(url, "m"+strconv.Itoa(i))
		}
		got := e.recv(url, 10)
		if len(got) != 3 {
			e.t.Fatalf("received %d, want 3", len(got))
		}
		out, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: []contract.DeleteMessageBatchRequestEntry{
			{Id: "a", ReceiptHandle: got[0].ReceiptHandle},
			{Id: "bad", ReceiptHandle: "garbage"},
			{Id: "b", ReceiptHandle: got[1].ReceiptHandle},
		}})
		wantOK(e.t, err, "DeleteMessageBatch")
		ok := map[string]bool{}
		for _, r := range out.Successful {
			ok[r.Id] = true
		}
		if len(out.Successful) != 2 || !ok["a"] || !ok["b"] {
			e.t.Errorf("Successful = %+v, want a and b", out.Successful)
		}
		if len(out.Failed) != 1 || out.Failed[0].Id != "bad" || out.Failed[0].Code != "ReceiptHandleIsInvalid" || !out.Failed[0].SenderFault {
			e.t.Errorf("Failed = %+v, want bad as ReceiptHandleIsInvalid (sender fault)", out.Failed)
		}
		e.wantCounts(url, 0, 1, 0)
		e.clock.Advance(secs(31))
		wantBodies(e.t, e.recv(url, 10), got[2].Body)
		// Deleting already-deleted messages again succeeds.
		out, err = e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: []contract.DeleteMessageBatchRequestEntry{
			{Id: "a", ReceiptHandle: got[0].ReceiptHandle}}})
		wantOK(e.t, err, "DeleteMessageBatch again")
		if len(out.Successful) != 1 {
			e.t.Errorf("repeat delete: %+v", out)
		}
	})

	s.test(t, "DeleteBatchFIFOGroups", func(e *env) {
		// One batch deletes a group's head and the message after it, a
		// message behind another group's head, and one receipt twice (the
		// second finds the message gone, which succeeds). The first group's
		// next message is receivable at once; the other group stays held
		// by its head.
		url := e.createFIFO("f.fifo", nil)
		for _, m := range []struct{ body, group string }{{"a1", "A"}, {"a2", "A"}, {"a3", "A"}, {"b1", "B"}, {"b2", "B"}} {
			e.sendFIFO(url, m.body, m.group, m.body)
		}
		a := e.recv(url, 2)
		wantBodies(e.t, a, "a1", "a2")
		b := e.recv(url, 10)
		wantBodies(e.t, b, "b1", "b2")
		if len(a) != 2 || len(b) != 2 {
			e.t.FailNow()
		}
		out, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: []contract.DeleteMessageBatchRequestEntry{
			{Id: "a1", ReceiptHandle: a[0].ReceiptHandle},
			{Id: "a2", ReceiptHandle: a[1].ReceiptHandle},
			{Id: "a1-again", ReceiptHandle: a[0].ReceiptHandle},
			{Id: "b2", ReceiptHandle: b[1].ReceiptHandle},
		}})
		wantOK(e.t, err, "DeleteMessageBatch")
		if len(out.Successful) != 4 || len(out.Failed) != 0 {
			e.t.Errorf("DeleteMessageBatch = %+v, want 4 successful", out)
		}
		e.wantCounts(url, 1, 1, 0)
		a3 := e.recvVT(url, 10, 60)
		wantBodies(e.t, a3, "a3")
		e.clock.Advance(secs(31)) // b1's delivery has timed out, a3's has not
		b1 := e.recvVT(url, 10, 120)
		wantBodies(e.t, b1, "b1")
		e.clock.Advance(secs(30)) // now a3's has
		// An expired FIFO receipt is refused in a batch as on its own; the
		// other entries still apply.
		if len(a3) != 1 || len(b1) != 1 {
			e.t.FailNow()
		}
		out, err = e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: []contract.DeleteMessageBatchRequestEntry{
			{Id: "old", ReceiptHandle: a3[0].ReceiptHandle},
			{Id: "b1", ReceiptHandle: b1[0].ReceiptHandle},
		}})
		wantOK(e.t, err, "DeleteMessageBatch with an expired receipt")
		if len(out.Successful) != 1 || out.Successful[0].Id != "b1" || len(out.Failed) != 1 || out.Failed[0].Id != "old" ||
			out.Failed[0].Code != "InvalidParameterValue" || !strings.HasSuffix(out.Failed[0].Message, "Reason: The receipt handle has expired.") {
			e.t.Errorf("DeleteMessageBatch with an expired receipt = %+v", out)
		}
		e.wantCounts(url, 1, 0, 0)
		wantBodies(e.t, e.recv(url, 10), "a3")
	})

	s.test(t, "ChangeVisibilityBatch", func(e *env) {
		url := e.create("q", nil)
		for i := range 3 {
			e.send(url, "m"+strconv.Itoa(i))
		}
		got := e.recv(url, 10)
		if len(got) != 3 {
			e.t.Fatalf("received %d, want 3", len(got))
		}
		out, err := e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url,
			Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{
				{Id: "zero", ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: i64(0)},
				{Id: "bad", ReceiptHandle: "garbage", VisibilityTimeout: i64(0)},
				{Id: "long", ReceiptHandle: got[1].ReceiptHandle, VisibilityTimeout: i64(300)},
				{Id: "toolong", ReceiptHandle: got[2].ReceiptHandle, VisibilityTimeout: i64(43201)},
			}})
		wantOK(e.t, err, "ChangeMessageVisibilityBatch")
		ok := map[string]bool{}
		for _, r := range out.Successful {
			ok[r.Id] = true
		}
		if len(out.Successful) != 2 || !ok["zero"] || !ok["long"] {
			e.t.Errorf("Successful = %+v, want zero and long", out.Successful)
		}
		failed := map[string]contract.BatchResultErrorEntry{}
		for _, f := range out.Failed {
			failed[f.Id] = f
		}
		if f := failed["bad"]; f.Code != "ReceiptHandleIsInvalid" || !f.SenderFault {
			e.t.Errorf("failed entry bad = %+v, want ReceiptHandleIsInvalid", f)
		}
		if f := failed["toolong"]; f.Code != "InvalidParameterValue" || !f.SenderFault {
			e.t.Errorf("failed entry toolong = %+v, want InvalidParameterValue", f)
		}
		// Each check deletes what it received, so only the timeouts set by
		// the batch decide what comes back.
		recvDel := func(want string) {
			e.t.Helper()
			ms := e.recv(url, 10)
			wantBodies(e.t, ms, want)
			for _, m := range ms {
				e.del(url, m.ReceiptHandle)
			}
		}
		recvDel(got[0].Body) // VisibilityTimeout 0: at once
		e.clock.Advance(secs(31))
		recvDel(got[2].Body) // refused change: its receive's 30 s
		e.clock.Advance(secs(270))
		recvDel(got[1].Body) // 300 s
	})

	s.test(t, "FIFOBatchRequestErrors", func(e *env) {
		// snapshot test_send_batch_missing_deduplication_id_for_fifo_queue
		// and test_send_batch_missing_message_group_id_for_fifo_queue: one
		// bad entry fails the whole request.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "false"})
		_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
			{Id: "m1", MessageBody: str("messageBody"), MessageGroupId: str("test-group"), MessageDeduplicationId: str("dedup-1")},
			{Id: "m2", MessageBody: str("messageBody"), MessageGroupId: str("test-group")},
		}})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"))
		_, err = e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
			{Id: "m1", MessageBody: str("messageBody"), MessageGroupId: str("test-group"), MessageDeduplicationId: str("dedup-1")},
			{Id: "m2", MessageBody: str("messageBody"), MessageDeduplicationId: str("dedup-2")},
		}})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("The request must contain the parameter MessageGroupId."))
		e.wantCounts(url, 0, 0, 0)
		// dedup-1 was not recorded by the rejected requests.
		e.sendFIFO(url, "fresh", "test-group", "dedup-1")
		wantBodies(e.t, e.recv(url, 10), "fresh")
	})

	s.test(t, "FIFOBatch", func(e *env) {
		url := e.createFIFO("f.fifo", nil)
		var entries []contract.SendMessageBatchRequestEntry
		for i := range 10 {
			entries = append(entries, contract.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), MessageBody: str("b" + strconv.Itoa(i)),
				MessageGroupId: str("g" + strconv.Itoa(i%2)), MessageDeduplicationId: str("d" + strconv.Itoa(i))})
		}
		out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
		wantOK(e.t, err, "SendMessageBatch")
		if len(out.Successful) != 10 {
			e.t.Fatalf("%d successful, want 10 (failed %v)", len(out.Successful), out.Failed)
		}
		seqs := newSeqCheck(e.t)
		for i, r := range out.Successful {
			if r.Id != strconv.Itoa(i) {
				e.t.Errorf("result %d has Id %s; results follow the entries' order", i, r.Id)
			}
			seqs.add("g"+strconv.Itoa(i%2), r.SequenceNumber) // increasing in entry order within a group
		}
		got := e.recv(url, 10)
		var g0, g1 []string
		for _, m := range got {
			n, _ := strconv.Atoi(m.Body[1:])
			if n%2 == 0 {
				g0 = append(g0, m.Body)
			} else {
				g1 = append(g1, m.Body)
			}
		}
		if !equalStrings(g0, []string{"b0", "b2", "b4", "b6", "b8"}) || !equalStrings(g1, []string{"b1", "b3", "b5", "b7", "b9"}) {
			e.t.Errorf("per-group order: %q and %q", g0, g1)
		}
	})
}
