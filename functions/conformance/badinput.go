package conformance

import (
	"testing"

	"github.com/sluicehq/sluice/contract"
)

// A request the service refuses as a whole changes nothing.
func testBadInput(t *testing.T, s suite) {
	s.test(t, "SendMessageBatch", func(e *env) {
		url := e.create("q", nil)
		dup := sendEntries(3)
		dup[2].Id = dup[1].Id
		badID := sendEntries(3)
		badID[2].Id = "bad:id"
		for name, entries := range map[string][]contract.SendMessageBatchRequestEntry{
			"duplicate ids": dup, "invalid id": badID, "too many": sendEntries(11),
		} {
			_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
			if err == nil {
				e.t.Errorf("%s: batch accepted", name)
			}
		}
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "CreateQueue", func(e *env) {
		for _, in := range []*contract.CreateQueueInput{
			{QueueName: "bad name"},
			{QueueName: "q", Attributes: map[string]string{"VisibilityTimeout": "43201"}},
			{QueueName: "q", Attributes: map[string]string{"DelaySeconds": "5", "MaximumMessageSize": "1"}},
			{QueueName: "q", Attributes: map[string]string{"Unknown": "1"}},
			{QueueName: "q", Attributes: map[string]string{"FifoQueue": "false"}},
			{QueueName: "q", Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + queueARN("missing") + `","maxReceiveCount":3}`}},
		} {
			if _, err := e.svc.CreateQueue(e.op(), in); err == nil {
				e.t.Errorf("CreateQueue %+v accepted", in)
			}
		}
		out, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{})
		wantOK(e.t, err, "ListQueues")
		if len(out.QueueUrls) != 0 {
			e.t.Errorf("rejected creates left queues %q", out.QueueUrls)
		}
		// And the name is free: a good create works and has defaults.
		url := e.create("q", nil)
		if got := e.attrs(url, "DelaySeconds")["DelaySeconds"]; got != "0" {
			e.t.Errorf("DelaySeconds = %q, want 0", got)
		}
	})

	s.test(t, "SetQueueAttributes", func(e *env) {
		// One bad value refuses the whole request.
		url := e.create("q", nil)
		_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url,
			Attributes: map[string]string{"VisibilityTimeout": "60", "DelaySeconds": "901"}})
		wantErrCode(e.t, err, "InvalidAttributeValue", 400)
		_, err = e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url,
			Attributes: map[string]string{"VisibilityTimeout": "60", "Nope": "1"}})
		wantErrCode(e.t, err, "InvalidAttributeName", 400)
		a := e.attrs(url, "VisibilityTimeout", "DelaySeconds")
		if a["VisibilityTimeout"] != "30" || a["DelaySeconds"] != "0" {
			e.t.Errorf("attributes after refused updates = %v, want the defaults", a)
		}
	})

	s.test(t, "SendMessage", func(e *env) {
		url := e.create("q", map[string]string{"MaximumMessageSize": "1024"})
		for _, in := range []*contract.SendMessageInput{
			{QueueUrl: url, MessageBody: str(repeat("a", 1025))},
			{QueueUrl: url, MessageBody: str("x"), DelaySeconds: i64(901)},
			{QueueUrl: url, MessageBody: str("\x00")},
			{QueueUrl: url, MessageBody: str("x"), MessageAttributes: map[string]contract.MessageAttributeValue{"a": strAttr("")}},
			// Names, types and values that are not text: stored, they
			// would be delivered repaired under the digest of the raw bytes.
			{QueueUrl: url, MessageBody: str("x"), MessageAttributes: map[string]contract.MessageAttributeValue{"a\xff": strAttr("v")}},
			{QueueUrl: url, MessageBody: str("x"), MessageAttributes: map[string]contract.MessageAttributeValue{"a\uffff": strAttr("v")}},
			{QueueUrl: url, MessageBody: str("x"), MessageAttributes: map[string]contract.MessageAttributeValue{"a": {DataType: "String.\xff", StringValue: str("v")}}},
			{QueueUrl: url, MessageBody: str("x"), MessageAttributes: map[string]contract.MessageAttributeValue{"a": strAttr("\xed\xa0\x80")}},
		} {
			if _, err := e.svc.SendMessage(e.op(), in); err == nil {
				e.t.Errorf("SendMessage %+v accepted", in)
			}
		}
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "NonASCIIAttributesKeepTheirDigest", func(e *env) {
		// Text beyond ASCII is accepted and delivered byte for byte, so the
		// digest of the send is the digest of what is delivered.
		url := e.create("q", nil)
		attrs := map[string]contract.MessageAttributeValue{
			"caf\u00e9":    {DataType: "String.\u00e9t\u00e9", StringValue: str("\U0001F600 \u00fc")},
			"\u65e5\u672c": strAttr("\u8a9e"),
		}
		sent := e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("m"), MessageAttributes: attrs})
		if want := md5OfAttributes(attrs); sent.MD5OfMessageAttributes != want {
			e.t.Errorf("send MD5OfMessageAttributes = %s, want %s", sent.MD5OfMessageAttributes, want)
		}
		got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MessageAttributeNames: []string{"All"}})
		if len(got) != 1 {
			e.t.Fatalf("received %d, want 1", len(got))
		}
		if !attrsEqual(got[0].MessageAttributes, attrs) || got[0].MD5OfMessageAttributes != sent.MD5OfMessageAttributes ||
			md5OfAttributes(got[0].MessageAttributes) != sent.MD5OfMessageAttributes {
			e.t.Errorf("delivered %s (MD5 %s), sent %s (MD5 %s)", fmtAttrs(got[0].MessageAttributes), got[0].MD5OfMessageAttributes,
				fmtAttrs(attrs), sent.MD5OfMessageAttributes)
		}
	})

	s.test(t, "ListQueuesLongPrefix", func(e *env) {
		e.create("q", nil)
		_, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{QueueNamePrefix: repeat("q", contract.MaxQueueNameLength+1)})
		wantErrCode(e.t, err, "InvalidParameterValue", 400)
		out, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{QueueNamePrefix: repeat("q", contract.MaxQueueNameLength)})
		wantOK(e.t, err, "ListQueues with an 80-character prefix")
		if out != nil && len(out.QueueUrls) != 0 {
			e.t.Errorf("ListQueues = %q, want none", out.QueueUrls)
		}
	})

	s.test(t, "DeleteAndChangeBatches", func(e *env) {
		url := e.create("q", nil)
		e.send(url, "a")
		e.send(url, "b")
		got := e.recv(url, 10)
		if len(got) != 2 {
			e.t.Fatalf("received %d, want 2", len(got))
		}
		_, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: []contract.DeleteMessageBatchRequestEntry{
			{Id: "x", ReceiptHandle: got[0].ReceiptHandle}, {Id: "x", ReceiptHandle: got[1].ReceiptHandle}}})
		wantErr(e.t, err, contract.ErrBatchEntryIdsNotDistinct("x"))
		_, err = e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{
			{Id: "ok", ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: i64(0)}, {Id: "bad:id", ReceiptHandle: got[1].ReceiptHandle, VisibilityTimeout: i64(0)}}})
		wantErr(e.t, err, contract.ErrInvalidBatchEntryId())
		e.wantCounts(url, 0, 2, 0)
	})

	s.test(t, "ReceiveMessage", func(e *env) {
		url := e.create("q", nil)
		e.send(url, "m")
		for _, in := range []*contract.ReceiveMessageInput{
			{QueueUrl: url, MaxNumberOfMessages: i64(11)},
			{QueueUrl: url, WaitTimeSeconds: i64(21)},
			{QueueUrl: url, VisibilityTimeout: i64(-1)},
		} {
			if _, err := e.svc.ReceiveMessage(e.op(), in); err == nil {
				e.t.Errorf("ReceiveMessage %+v accepted", in)
			}
		}
		got := e.recvAll(url, 1)
		if len(got) != 1 || got[0].Attributes["ApproximateReceiveCount"] != "1" {
			e.t.Errorf("after refused receives: %+v, want the message on its first receive", got)
		}
	})

	s.test(t, "StartMessageMoveTask", func(e *env) {
		e.create("dlq", nil)
		src := e.create("src", redrive("dlq", 1))
		e.send(src, "m")
		e.recvVT(src, 1, 0)
		e.recvVT(src, 1, 0)
		_, err := e.svc.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq"), DestinationArn: str(queueARN("missing"))})
		wantErrCode(e.t, err, "ResourceNotFoundException", 404)
		e.clock.Advance(secs(5))
		e.runMoveTasks()
		e.wantCounts(queueURL("dlq"), 1, 0, 0)
	})
}
