package conformance

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func testReceiptHandles(t *testing.T, s suite) {
	s.test(t, "Garbage", func(e *env) {
		// validated test_delete_message_with_illegal_receipt_handle and
		// test_invalid_receipt_handle_should_return_error_message.
		url := e.create("q", nil)
		e.send(url, "m")
		_, err := e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: "garbage"})
		wantErr(e.t, err, contract.ErrReceiptHandleIsInvalid("garbage"))
		wantErrCode(e.t, e.cmv(url, "INVALID", 60), "ReceiptHandleIsInvalid", 400)
		_, err = e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: ""})
		wantErrCodeIn(e.t, err, "MissingParameter", "ReceiptHandleIsInvalid")
		e.wantCounts(url, 1, 0, 0)
	})

	s.test(t, "Forged", func(e *env) {
		// design: a forged handle never touches another message. On a FIFO
		// queue it never touches a delivery at all; on a Standard queue,
		// where any receipt of a message acts on it (AWS), a handle whose
		// token alone was altered passes for an earlier receipt of its
		// message (sluice's handles are not signed).
		forge := func(url, handle string) {
			h := []byte(handle)
			for i := range h {
				forged := append([]byte(nil), h...)
				switch forged[i] {
				case 'A':
					forged[i] = 'B'
				default:
					forged[i] = 'A'
				}
				_, _ = e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: string(forged)})
				_ = e.cmv(url, string(forged), 0)
				if i > 200 {
					break
				}
			}
		}
		f := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(f, "m", "g", "")
		m := e.recvOne(f)
		forge(f, m.ReceiptHandle)
		e.wantCounts(f, 0, 1, 0)
		e.del(f, m.ReceiptHandle)
		e.wantCounts(f, 0, 0, 0)

		url := e.create("q", nil)
		e.send(url, "m")
		e.send(url, "other")
		got := e.recvVT(url, 10, 60)
		if len(got) != 2 {
			e.t.Fatalf("received %d, want 2", len(got))
		}
		var other contract.Message
		for _, g := range got {
			if g.Body == "m" {
				forge(url, g.ReceiptHandle)
			} else {
				other = g
			}
		}
		e.wantCounts(url, 0, 1, 0)
		e.del(url, other.ReceiptHandle)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "NotText", func(e *env) {
		// design: a handle of sluice's form (base64 of parts split by
		// NUL) altered so that a part is no longer text is refused like
		// any other, and acts on nothing, on either queue type, alone or
		// in a batch beside a good one.
		notText := func(handle string) string {
			raw, err := base64.RawURLEncoding.DecodeString(handle)
			if err != nil {
				e.t.Fatalf("handle %q is not of sluice's form: %v", handle, err)
			}
			parts := bytes.Split(raw, []byte{0})
			if len(parts) < 4 {
				e.t.Fatalf("handle %q has %d parts, not sluice's form", handle, len(parts))
			}
			parts[2][0] = 0xff // the message's id
			return base64.RawURLEncoding.EncodeToString(bytes.Join(parts, []byte{0}))
		}
		f := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		e.sendFIFO(f, "m", "g", "")
		q := e.create("q", nil)
		e.send(q, "m")
		e.send(q, "n")
		for _, url := range []string{f, q} {
			m := e.recvOne(url)
			bad := notText(m.ReceiptHandle)
			_, err := e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: bad})
			wantErr(e.t, err, contract.ErrReceiptHandleIsInvalid(bad))
			wantErr(e.t, e.cmv(url, bad, 0), contract.ErrReceiptHandleIsInvalid(bad))
			out, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url,
				Entries: []contract.DeleteMessageBatchRequestEntry{{Id: "bad", ReceiptHandle: bad}, {Id: "good", ReceiptHandle: m.ReceiptHandle}}})
			wantOK(e.t, err, "DeleteMessageBatch with a handle that is not text beside a good one")
			if out == nil || len(out.Successful) != 1 || out.Successful[0].Id != "good" ||
				len(out.Failed) != 1 || out.Failed[0].Id != "bad" || out.Failed[0].Code != "ReceiptHandleIsInvalid" {
				e.t.Errorf("DeleteMessageBatch = %+v, want good deleted and bad failed as ReceiptHandleIsInvalid", out)
			}
		}
		e.wantCounts(f, 0, 0, 0)
		e.wantCounts(q, 1, 0, 0)
	})

	s.test(t, "OtherQueue", func(e *env) {
		// A handle of one queue used on another touches neither.
		a := e.create("a", nil)
		b := e.create("b", nil)
		e.send(a, "in a")
		e.send(b, "in b")
		ma := e.recvOne(a)
		mb := e.recvOne(b)
		_, _ = e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: b, ReceiptHandle: ma.ReceiptHandle})
		_ = e.cmv(b, ma.ReceiptHandle, 0)
		e.wantCounts(a, 0, 1, 0)
		e.wantCounts(b, 0, 1, 0)
		e.del(b, mb.ReceiptHandle)
		e.del(a, ma.ReceiptHandle)
		e.wantCounts(a, 0, 0, 0)
	})

	s.test(t, "EarlierReceiptStandard", func(e *env) {
		// AWS (observed): on a Standard queue a receipt handle of an earlier
		// receive still acts on the message after it was received again:
		// ChangeMessageVisibility applies (0 makes it visible at once) and
		// DeleteMessage deletes it (docs: "Amazon SQS can delete a message
		// from a queue even if a visibility timeout setting causes the
		// message to be locked by another consumer").
		url := e.create("q", nil)
		e.send(url, "m")
		old := e.recvVT(url, 1, 10)[0]
		e.clock.Advance(secs(11))
		cur := e.recvVT(url, 1, 30)[0]
		wantOK(e.t, e.cmv(url, old.ReceiptHandle, 0), "ChangeMessageVisibility with an earlier receipt handle")
		e.wantCounts(url, 1, 0, 0)
		again := e.recvVT(url, 1, 30)[0]
		if again.MessageId != cur.MessageId {
			e.t.Errorf("redelivered %s, want %s", again.MessageId, cur.MessageId)
		}
		// A longer timeout through the first receipt holds the message.
		wantOK(e.t, e.cmv(url, old.ReceiptHandle, 300), "ChangeMessageVisibility with an earlier receipt handle")
		e.clock.Advance(secs(31))
		e.wantEmpty(url)
		_, err := e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: old.ReceiptHandle})
		wantOK(e.t, err, "DeleteMessage with an earlier receipt handle")
		e.wantCounts(url, 0, 0, 0)
		// The message is gone: every receipt of it is now accepted and
		// changes nothing; a visibility change names no message.
		_, err = e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: again.ReceiptHandle})
		wantOK(e.t, err, "DeleteMessage of a deleted message")
		wantErr(e.t, e.cmv(url, cur.ReceiptHandle, 0), contract.ErrInvalidValue(cur.ReceiptHandle, "ReceiptHandle", "Message does not exist or is not available for visibility timeout change."))
	})

	s.test(t, "EarlierReceiptStandardBatch", func(e *env) {
		// The batches do what the single calls do (AWS, observed).
		url := e.create("q", nil)
		e.send(url, "a")
		e.send(url, "b")
		first := e.recvVT(url, 10, 10)
		if len(first) != 2 {
			e.t.Fatalf("received %d, want 2", len(first))
		}
		e.clock.Advance(secs(11))
		if n := len(e.recvVT(url, 10, 30)); n != 2 {
			e.t.Fatalf("received again %d, want 2", n)
		}
		byBody := map[string]string{}
		for _, m := range first {
			byBody[m.Body] = m.ReceiptHandle
		}
		cv, err := e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url,
			Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{{Id: "a", ReceiptHandle: byBody["a"], VisibilityTimeout: i64(0)}}})
		wantOK(e.t, err, "ChangeMessageVisibilityBatch")
		if err == nil && (len(cv.Successful) != 1 || len(cv.Failed) != 0) {
			e.t.Errorf("ChangeMessageVisibilityBatch with an earlier receipt: %+v", cv)
		}
		e.wantCounts(url, 1, 1, 0)
		del, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url,
			Entries: []contract.DeleteMessageBatchRequestEntry{{Id: "b", ReceiptHandle: byBody["b"]}}})
		wantOK(e.t, err, "DeleteMessageBatch")
		if err == nil && (len(del.Successful) != 1 || len(del.Failed) != 0) {
			e.t.Errorf("DeleteMessageBatch with an earlier receipt: %+v", del)
		}
		e.wantCounts(url, 1, 0, 0)
		wantBodies(e.t, e.recv(url, 10), "a")
	})

	s.test(t, "DeleteTwice", func(e *env) {
		// validated test_delete_message_with_deleted_receipt_handle.
		url := e.create("q", nil)
		e.send(url, "foo")
		m := e.recvOne(url)
		for range 3 {
			e.del(url, m.ReceiptHandle)
		}
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "DeleteAfterTimeoutStandard", func(e *env) {
		// snapshot test_delete_after_visibility_timeout.
		url := e.create("q", map[string]string{"VisibilityTimeout": "1"})
		e.send(url, "foobar")
		m := e.recvOne(url)
		e.clock.Advance(secs(2))
		e.del(url, m.ReceiptHandle)
		e.wantEmpty(url)
		e.clock.Advance(secs(60))
		e.wantEmpty(url)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "DeleteAfterTimeoutFIFO", func(e *env) {
		// snapshot test_fifo_delete_after_visibility_timeout.
		url := e.createFIFO("f.fifo", map[string]string{"VisibilityTimeout": "1", "ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "foobar", "1", "")
		m := e.recvOne(url)
		if m.MD5OfBody != "3858f62230ac3c915f300c664312c63f" {
			e.t.Errorf("MD5OfBody = %s", m.MD5OfBody)
		}
		e.clock.Advance(secs(2))
		_, err := e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("Value "+m.ReceiptHandle+" for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."))
		// The message was not deleted.
		again := e.recvOne(url)
		if again.MessageId != m.MessageId {
			e.t.Errorf("received %s, want %s", again.MessageId, m.MessageId)
		}
		e.del(url, again.ReceiptHandle)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "DeleteExtendedFIFO", func(e *env) {
		// snapshot test_fifo_delete_after_visibility_timeout_extended.
		url := e.createFIFO("f.fifo", map[string]string{"VisibilityTimeout": "1", "ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "foobar", "1", "")
		m := e.recvOne(url)
		wantOK(e.t, e.cmv(url, m.ReceiptHandle, 5), "ChangeMessageVisibility")
		e.clock.Advance(secs(2))
		e.del(url, m.ReceiptHandle)
		e.clock.Advance(secs(10))
		e.wantEmpty(url)
	})

	s.test(t, "StaleFIFO", func(e *env) {
		url := e.createFIFO("f.fifo", map[string]string{"VisibilityTimeout": "5", "ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "m", "1", "")
		old := e.recvOne(url)
		e.clock.Advance(secs(6))
		cur := e.recvOne(url)
		// A FIFO queue holds to the latest receipt: the group may be with
		// another consumer. Delete refuses an earlier one as it refuses an
		// expired one (snapshot test_fifo_delete_after_visibility_timeout).
		_, err := e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: old.ReceiptHandle})
		wantErr(e.t, err, contract.ErrReceiptHandleExpired(old.ReceiptHandle))
		wantErr(e.t, e.cmv(url, old.ReceiptHandle, 0), contract.ErrInvalidValue(old.ReceiptHandle, "ReceiptHandle", "Message does not exist or is not available for visibility timeout change."))
		e.wantCounts(url, 0, 1, 0)
		e.wantEmpty(url)
		e.del(url, cur.ReceiptHandle)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "AnyInstanceResolves", func(e *env) {
		// design: receipt handles survive a restart and any instance can
		// resolve them. A second Service over the same store plays both.
		url := e.create("q", nil)
		other := e.newService()
		body := "m"
		_, err := other.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body})
		wantOK(e.t, err, "SendMessage on the second instance")
		m := e.recvOne(url)
		_, err = other.ChangeMessageVisibility(e.op(), &contract.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: i64(100)})
		wantOK(e.t, err, "ChangeMessageVisibility on the second instance")
		e.clock.Advance(secs(31))
		e.wantEmpty(url)
		_, err = other.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
		wantOK(e.t, err, "DeleteMessage on the second instance")
		e.wantCounts(url, 0, 0, 0)
		out, err := other.ListQueues(e.op(), &contract.ListQueuesInput{})
		wantOK(e.t, err, "ListQueues on the second instance")
		if len(out.QueueUrls) != 1 || out.QueueUrls[0] != url {
			e.t.Errorf("second instance lists %q, want %q", out.QueueUrls, url)
		}
	})

	s.test(t, "AfterPurge", func(e *env) {
		// design: a purge generation travels with receipts, so an old
		// receipt never touches a message sent after the purge.
		url := e.create("q", nil)
		e.send(url, "old")
		old := e.recvOne(url)
		_, err := e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "PurgeQueue")
		e.send(url, "new")
		_, _ = e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: old.ReceiptHandle})
		_ = e.cmv(url, old.ReceiptHandle, 300)
		e.wantCounts(url, 1, 0, 0)
		wantBodies(e.t, e.recv(url, 10), "new")
	})
}
