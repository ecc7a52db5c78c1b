package conformance

import (
	"sort"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func testQueues(t *testing.T, s suite) {
	s.test(t, "CreateGetUrlAndArn", func(e *env) {
		url := e.create("q1", nil)
		out, err := e.svc.GetQueueUrl(e.op(), &contract.GetQueueUrlInput{QueueName: "q1"})
		wantOK(e.t, err, "GetQueueUrl")
		if out.QueueUrl != queueURL("q1") {
			e.t.Errorf("GetQueueUrl = %q, want %q", out.QueueUrl, queueURL("q1"))
		}
		if got := e.arnOf(url); got != queueARN("q1") {
			e.t.Errorf("QueueArn = %q, want %q", got, queueARN("q1"))
		}
		// Names are case-sensitive (docs).
		_, err = e.svc.GetQueueUrl(e.op(), &contract.GetQueueUrlInput{QueueName: "Q1"})
		wantErr(e.t, err, contract.ErrQueueDoesNotExist())
	})

	s.test(t, "GetQueueUrlUnknown", func(e *env) {
		// snapshot test_non_existent_queue (both protocols' wording).
		_, err := e.svc.GetQueueUrl(e.op(), &contract.GetQueueUrlInput{QueueName: "nope"})
		wantErr(e.t, err, &contract.Error{Code: "AWS.SimpleQueueService.NonExistentQueue", Type: "QueueDoesNotExist",
			Status: 400, Sender: true, Message: "The specified queue does not exist.",
			QueryMessage: "The specified queue does not exist for this wsdl version."})
	})

	s.test(t, "CreateIsIdempotent", func(e *env) {
		// validated test_create_queue_*_is_idempotent.
		u := e.create("plain", nil)
		if again := e.create("plain", nil); again != u {
			e.t.Errorf("second create = %q, want %q", again, u)
		}
		e.create("withattrs", map[string]string{"VisibilityTimeout": "69", "ReceiveMessageWaitTimeSeconds": "1"})
		e.create("withattrs", map[string]string{"VisibilityTimeout": "69", "ReceiveMessageWaitTimeSeconds": "1"})
		e.create("withattrs", nil)                                          // no attributes always matches
		e.create("withattrs", map[string]string{"VisibilityTimeout": "69"}) // a subset matches
		// Spelling a default explicitly matches a queue created without it.
		e.create("plain", map[string]string{"VisibilityTimeout": "30"})
		e.createFIFO("f.fifo", nil)
		e.createFIFO("f.fifo", nil)
		// Messages in the queue do not disturb the comparison (validated
		// test_create_queue_after_send).
		e.send(u, "x")
		e.create("plain", nil)
	})

	s.test(t, "CreateWithDifferentAttributes", func(e *env) {
		// snapshot test_create_queue_with_different_attributes_raises_exception.
		url := e.create("q", map[string]string{"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "1"})
		e.create("q", map[string]string{"DelaySeconds": "1"})
		_, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "q",
			Attributes: map[string]string{"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "2"}})
		wantErr(e.t, err, contract.ErrQueueNameExists("DelaySeconds"))
		// After SetQueueAttributes the stored value is what counts.
		e.setAttrs(url, map[string]string{"DelaySeconds": "2"})
		e.create("q", map[string]string{"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "2"})
		_, err = e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "q",
			Attributes: map[string]string{"ReceiveMessageWaitTimeSeconds": "1", "DelaySeconds": "1"}})
		wantErr(e.t, err, contract.ErrQueueNameExists("DelaySeconds"))
		// A default spelled out differs from a non-default value.
		e.create("v", map[string]string{"VisibilityTimeout": "45"})
		_, err = e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "v",
			Attributes: map[string]string{"VisibilityTimeout": "30"}})
		wantErr(e.t, err, contract.ErrQueueNameExists("VisibilityTimeout"))
	})

	s.test(t, "CreateFIFOWithDifferentAttributes", func(e *env) {
		// snapshot test_create_fifo_queue_with_different_attributes_raises_error.
		e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		_, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "f.fifo",
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "false"}})
		wantErr(e.t, err, contract.ErrQueueNameExists("ContentBasedDeduplication"))
	})

	s.test(t, "NameRules", func(e *env) {
		// docs: 1 to 80 alphanumerics, hyphens and underscores; .fifo only
		// for FIFO queues. AWS's wording is not recorded: code only.
		for _, name := range []string{"a", "A-b_9", repeat("n", 80)} {
			e.create(name, nil)
		}
		e.createFIFO(repeat("f", 75)+".fifo", nil) // 80 with the suffix
		for _, name := range []string{"", repeat("n", 81), "bad name", "bad.name", "bad/name", "bad:name", "ümlaut", "q.fifo.fifo",
			repeat("f", 76) + ".fifo"} {
			attrs := map[string]string(nil)
			if len(name) > 5 && name[len(name)-5:] == ".fifo" {
				attrs = map[string]string{"FifoQueue": "true"}
			}
			_, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: name, Attributes: attrs})
			if name == "" {
				// The required name missing or empty: either code is plausible.
				wantErrCodeIn(e.t, err, "InvalidParameterValue", "MissingParameter")
			} else {
				wantErrCode(e.t, err, "InvalidParameterValue", 400)
			}
			if _, err := e.svc.GetQueueUrl(e.op(), &contract.GetQueueUrlInput{QueueName: name}); err == nil && name != "" {
				e.t.Errorf("rejected name %q created a queue", name)
			}
		}
	})

	s.test(t, "FifoAttributeRules", func(e *env) {
		// snapshot test_create_standard_queue_with_fifo_attribute_raises_error.
		for _, c := range []struct {
			attrs map[string]string
			want  *contract.Error
		}{
			{map[string]string{"FifoQueue": "false"}, contract.ErrUnknownAttribute("FifoQueue")},
			{map[string]string{"ContentBasedDeduplication": "false"}, contract.ErrUnknownAttribute("ContentBasedDeduplication")},
			{map[string]string{"DeduplicationScope": "queue"}, contract.ErrInvalidAttributeName("You can specify the DeduplicationScope only when FifoQueue is set to true.")},
			{map[string]string{"FifoThroughputLimit": "perQueue"}, contract.ErrInvalidAttributeName("You can specify the FifoThroughputLimit only when FifoQueue is set to true.")},
		} {
			_, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "std", Attributes: c.attrs})
			wantErr(e.t, err, c.want)
		}
		// validated test_fifo_queue_requires_suffix / test_standard_queue_cannot_have_fifo_suffix.
		_, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "nosuffix", Attributes: map[string]string{"FifoQueue": "true"}})
		wantErrCode(e.t, err, "InvalidParameterValue", 400)
		_, err = e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "suffix.fifo"})
		wantErrCode(e.t, err, "InvalidParameterValue", 400)
		// An unknown attribute (snapshot wording of InvalidAttributeName).
		_, err = e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "std", Attributes: map[string]string{"Foobar": "1"}})
		wantErr(e.t, err, contract.ErrUnknownAttribute("Foobar"))
		// snapshot test_sqs_fifo_message_group_scope_no_throughput_setting:
		// messageGroup scope without the throughput setting is allowed.
		e.createFIFO("scope.fifo", map[string]string{"DeduplicationScope": "messageGroup"})
		e.createFIFO("ht.fifo", map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
		// docs: "The perMessageGroupId value is allowed only when the value
		// for DeduplicationScope is messageGroup." Wording unknown.
		_, err = e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "bad.fifo", Attributes: map[string]string{
			"FifoQueue": "true", "DeduplicationScope": "queue", "FifoThroughputLimit": "perMessageGroupId"}})
		wantErrCodeIn(e.t, err, "InvalidAttributeValue", "InvalidParameterValue")
		out, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{})
		wantOK(e.t, err, "ListQueues")
		sort.Strings(out.QueueUrls)
		want := []string{queueURL("ht.fifo"), queueURL("scope.fifo")}
		if len(out.QueueUrls) != 2 || out.QueueUrls[0] != want[0] || out.QueueUrls[1] != want[1] {
			e.t.Errorf("queues after rejected creates = %q, want %q", out.QueueUrls, want)
		}
	})

	s.test(t, "ListQueuesPrefix", func(e *env) {
		for _, n := range []string{"a-1", "a-2", "b-1", "ab"} {
			e.create(n, nil)
		}
		e.createFIFO("a.fifo", nil)
		list := func(prefix string) []string {
			out, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{QueueNamePrefix: prefix})
			wantOK(e.t, err, "ListQueues")
			if out.NextToken != "" {
				e.t.Errorf("ListQueues without MaxResults returned NextToken %q (docs: only with MaxResults)", out.NextToken)
			}
			u := append([]string(nil), out.QueueUrls...)
			sort.Strings(u)
			return u
		}
		check := func(prefix string, names ...string) {
			e.t.Helper()
			var want []string
			for _, n := range names {
				want = append(want, queueURL(n))
			}
			got := list(prefix)
			if len(got) != len(want) {
				e.t.Errorf("ListQueues(%q) = %q, want %q", prefix, got, want)
				return
			}
			for i := range got {
				if got[i] != want[i] {
					e.t.Errorf("ListQueues(%q) = %q, want %q", prefix, got, want)
					return
				}
			}
		}
		check("a-", "a-1", "a-2")
		check("a", "a-1", "a-2", "a.fifo", "ab")
		check("b-", "b-1")
		check("", "a-1", "a-2", "a.fifo", "ab", "b-1")
		check("A") // case-sensitive
		check("zzz")
		// docs: the queues whose names begin with the string; a prefix that
		// is no queue's name itself still selects ("a." begins a.fifo), and
		// one no name can begin with selects none, not all.
		check("a.", "a.fifo")
		check("a.f", "a.fifo")
		check("nomatch!")
		check("a b")
		check("000000000000:us-east-1:")
	})

	s.test(t, "ListQueuesPaging", func(e *env) {
		// snapshot test_list_queues_pagination: 10 queues, MaxResults 2
		// gives 2 and a NextToken; then MaxResults 10 gives the other 8 and
		// no NextToken.
		var all []string
		for i := range 10 {
			all = append(all, queueURL("p-"+strconv.Itoa(i)))
			e.create("p-"+strconv.Itoa(i), nil)
		}
		e.create("other", nil)
		out, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{QueueNamePrefix: "p-", MaxResults: i64(2)})
		wantOK(e.t, err, "ListQueues")
		if len(out.QueueUrls) != 2 || out.NextToken == "" {
			e.t.Fatalf("first page = %q, NextToken %q; want 2 URLs and a NextToken", out.QueueUrls, out.NextToken)
		}
		seen := append([]string(nil), out.QueueUrls...)
		out, err = e.svc.ListQueues(e.op(), &contract.ListQueuesInput{QueueNamePrefix: "p-", MaxResults: i64(10), NextToken: &out.NextToken})
		wantOK(e.t, err, "ListQueues page 2")
		if len(out.QueueUrls) != 8 || out.NextToken != "" {
			e.t.Errorf("second page = %d URLs, NextToken %q; want 8 and none", len(out.QueueUrls), out.NextToken)
		}
		seen = append(seen, out.QueueUrls...)
		sort.Strings(seen)
		sort.Strings(all)
		if len(seen) != len(all) {
			e.t.Fatalf("pages together = %q, want %q", seen, all)
		}
		for i := range seen {
			if seen[i] != all[i] {
				e.t.Fatalf("pages together = %q, want %q (no repeats, no gaps)", seen, all)
			}
		}
		// Page by one through everything.
		var paged []string
		var tok *string
		for range 20 {
			out, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{MaxResults: i64(1), NextToken: tok})
			wantOK(e.t, err, "ListQueues by 1")
			if len(out.QueueUrls) > 1 {
				e.t.Fatalf("MaxResults 1 returned %d URLs", len(out.QueueUrls))
			}
			paged = append(paged, out.QueueUrls...)
			if out.NextToken == "" {
				break
			}
			tok = str(out.NextToken)
		}
		if len(paged) != 11 {
			e.t.Errorf("paging by 1 found %d queues, want 11: %q", len(paged), paged)
		}
		// docs: MaxResults is 1 to 1000.
		for _, bad := range []int64{0, -1, 1001} {
			_, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{MaxResults: i64(bad)})
			wantErrCode(e.t, err, "InvalidParameterValue", 400)
		}
		_, err = e.svc.ListQueues(e.op(), &contract.ListQueuesInput{MaxResults: i64(1000)})
		wantOK(e.t, err, "ListQueues MaxResults 1000")
	})

	s.test(t, "DeleteQueue", func(e *env) {
		url := e.create("gone", nil)
		keep := e.create("kept", nil)
		e.send(url, "m")
		m := e.recvOne(url)
		e.send(url, "m2")
		_, err := e.svc.DeleteQueue(e.op(), &contract.DeleteQueueInput{QueueUrl: url})
		wantOK(e.t, err, "DeleteQueue")

		notFound := contract.ErrQueueDoesNotExist()
		_, err = e.svc.GetQueueUrl(e.op(), &contract.GetQueueUrlInput{QueueName: "gone"})
		wantErr(e.t, err, notFound)
		body := "x"
		entries := []contract.SendMessageBatchRequestEntry{{Id: "1", MessageBody: &body}}
		calls := map[string]func() error{
			"SendMessage": func() error {
				_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body})
				return err
			},
			"SendMessageBatch": func() error {
				_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: entries})
				return err
			},
			"ReceiveMessage": func() error {
				_, err := e.svc.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(0)})
				return err
			},
			"DeleteMessage": func() error {
				_, err := e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
				return err
			},
			"DeleteMessageBatch": func() error {
				_, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url,
					Entries: []contract.DeleteMessageBatchRequestEntry{{Id: "1", ReceiptHandle: m.ReceiptHandle}}})
				return err
			},
			"ChangeMessageVisibility": func() error { return e.cmv(url, m.ReceiptHandle, 0) },
			"ChangeMessageVisibilityBatch": func() error {
				_, err := e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url,
					Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{{Id: "1", ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: i64(0)}}})
				return err
			},
			"GetQueueAttributes": func() error {
				_, err := e.svc.GetQueueAttributes(e.op(), &contract.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []string{"All"}})
				return err
			},
			"SetQueueAttributes": func() error {
				_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"DelaySeconds": "1"}})
				return err
			},
			"PurgeQueue": func() error {
				_, err := e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
				return err
			},
			"TagQueue": func() error {
				_, err := e.svc.TagQueue(e.op(), &contract.TagQueueInput{QueueUrl: url, Tags: map[string]string{"a": "b"}})
				return err
			},
			"UntagQueue": func() error {
				_, err := e.svc.UntagQueue(e.op(), &contract.UntagQueueInput{QueueUrl: url, TagKeys: []string{"a"}})
				return err
			},
			"ListQueueTags": func() error {
				_, err := e.svc.ListQueueTags(e.op(), &contract.ListQueueTagsInput{QueueUrl: url})
				return err
			},
			"AddPermission": func() error {
				_, err := e.svc.AddPermission(e.op(), &contract.AddPermissionInput{QueueUrl: url, Label: "l",
					AWSAccountIds: []string{AccountID}, Actions: []string{"SendMessage"}})
				return err
			},
			"RemovePermission": func() error {
				_, err := e.svc.RemovePermission(e.op(), &contract.RemovePermissionInput{QueueUrl: url, Label: "l"})
				return err
			},
			"ListDeadLetterSourceQueues": func() error {
				_, err := e.svc.ListDeadLetterSourceQueues(e.op(), &contract.ListDeadLetterSourceQueuesInput{QueueUrl: url})
				return err
			},
			"DeleteQueue": func() error {
				_, err := e.svc.DeleteQueue(e.op(), &contract.DeleteQueueInput{QueueUrl: url})
				return err
			},
		}
		names := make([]string, 0, len(calls))
		for n := range calls {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			e.t.Run(n, func(t *testing.T) { wantErr(t, calls[n](), notFound) })
		}
		out, err := e.svc.ListQueues(e.op(), &contract.ListQueuesInput{})
		wantOK(e.t, err, "ListQueues")
		if len(out.QueueUrls) != 1 || out.QueueUrls[0] != keep {
			e.t.Errorf("ListQueues after delete = %q, want only %q", out.QueueUrls, keep)
		}
	})

	s.test(t, "RecreateAfterDelete", func(e *env) {
		url := e.create("again", map[string]string{"VisibilityTimeout": "45"})
		e.send(url, "old")
		old := e.recvOne(url)
		e.send(url, "old2")
		_, err := e.svc.DeleteQueue(e.op(), &contract.DeleteQueueInput{QueueUrl: url})
		wantOK(e.t, err, "DeleteQueue")
		// validated test_create_queue_recently_deleted.
		e.clock.Advance(secs(59))
		_, err = e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: "again"})
		wantErr(e.t, err, contract.ErrQueueDeletedRecently("again"))
		_, err = e.svc.GetQueueUrl(e.op(), &contract.GetQueueUrlInput{QueueName: "again"})
		wantErr(e.t, err, contract.ErrQueueDoesNotExist())
		e.clock.Advance(secs(2))
		e.create("again", nil)
		// A new incarnation: fresh attributes, no old messages.
		if got := e.attrs(url, "VisibilityTimeout")["VisibilityTimeout"]; got != "30" {
			e.t.Errorf("recreated queue VisibilityTimeout = %q, want the default 30", got)
		}
		e.wantCounts(url, 0, 0, 0)
		e.send(url, "new")
		// The old incarnation's receipt never touches the new queue's
		// messages, whatever the call answers (design: incarnations).
		_, _ = e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: old.ReceiptHandle})
		_ = e.cmv(url, old.ReceiptHandle, 600)
		e.wantCounts(url, 1, 0, 0)
		wantBodies(e.t, e.recv(url, 10), "new")
	})
	s.test(t, "QueueNameAsQueueUrl", func(e *env) {
		// AWS (observed; validated test_posting_to_queue_via_queue_name):
		// a bare queue name where a QueueUrl is expected names the caller's
		// queue, for every action that takes a QueueUrl.
		url := e.create("byname", nil)
		dlq := e.create("byname-dlq", nil)
		_ = dlq
		const n = "byname"
		out, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: n, MessageBody: str("Using name instead of URL")})
		wantOK(e.t, err, "SendMessage to a queue name")
		if err == nil && out.MD5OfMessageBody != "86a83f96652a1bfad3891e7d523750cb" {
			e.t.Errorf("MD5OfMessageBody = %s", out.MD5OfMessageBody)
		}
		_, err = e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: n,
			Entries: []contract.SendMessageBatchRequestEntry{{Id: "a", MessageBody: str("batched")}}})
		wantOK(e.t, err, "SendMessageBatch to a queue name")
		ga, err := e.svc.GetQueueAttributes(e.op(), &contract.GetQueueAttributesInput{QueueUrl: n, AttributeNames: []string{"QueueArn"}})
		wantOK(e.t, err, "GetQueueAttributes of a queue name")
		if err == nil && ga.Attributes["QueueArn"] != queueARN("byname") {
			e.t.Errorf("QueueArn = %q", ga.Attributes["QueueArn"])
		}
		_, err = e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: n, Attributes: map[string]string{"DelaySeconds": "0"}})
		wantOK(e.t, err, "SetQueueAttributes of a queue name")
		ms, err := e.svc.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: n, MaxNumberOfMessages: i64(10), WaitTimeSeconds: i64(0)})
		wantOK(e.t, err, "ReceiveMessage from a queue name")
		if err != nil || len(ms.Messages) != 2 {
			e.t.Fatalf("received %+v, want 2 messages", ms)
		}
		_, err = e.svc.ChangeMessageVisibility(e.op(), &contract.ChangeMessageVisibilityInput{QueueUrl: n, ReceiptHandle: ms.Messages[0].ReceiptHandle, VisibilityTimeout: i64(60)})
		wantOK(e.t, err, "ChangeMessageVisibility on a queue name")
		cb, err := e.svc.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: n,
			Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{{Id: "a", ReceiptHandle: ms.Messages[1].ReceiptHandle, VisibilityTimeout: i64(60)}}})
		wantOK(e.t, err, "ChangeMessageVisibilityBatch on a queue name")
		if err == nil && len(cb.Successful) != 1 {
			e.t.Errorf("ChangeMessageVisibilityBatch: %+v", cb)
		}
		_, err = e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: n, ReceiptHandle: ms.Messages[0].ReceiptHandle})
		wantOK(e.t, err, "DeleteMessage on a queue name")
		db, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: n,
			Entries: []contract.DeleteMessageBatchRequestEntry{{Id: "a", ReceiptHandle: ms.Messages[1].ReceiptHandle}}})
		wantOK(e.t, err, "DeleteMessageBatch on a queue name")
		if err == nil && len(db.Successful) != 1 {
			e.t.Errorf("DeleteMessageBatch: %+v", db)
		}
		e.wantCounts(url, 0, 0, 0)
		_, err = e.svc.TagQueue(e.op(), &contract.TagQueueInput{QueueUrl: n, Tags: map[string]string{"k": "v"}})
		wantOK(e.t, err, "TagQueue of a queue name")
		tags, err := e.svc.ListQueueTags(e.op(), &contract.ListQueueTagsInput{QueueUrl: n})
		wantOK(e.t, err, "ListQueueTags of a queue name")
		if err == nil && tags.Tags["k"] != "v" {
			e.t.Errorf("tags = %v", tags.Tags)
		}
		_, err = e.svc.UntagQueue(e.op(), &contract.UntagQueueInput{QueueUrl: n, TagKeys: []string{"k"}})
		wantOK(e.t, err, "UntagQueue of a queue name")
		_, err = e.svc.AddPermission(e.op(), &contract.AddPermissionInput{QueueUrl: n, Label: "l", AWSAccountIds: []string{AccountID}, Actions: []string{"SendMessage"}})
		wantOK(e.t, err, "AddPermission on a queue name")
		_, err = e.svc.RemovePermission(e.op(), &contract.RemovePermissionInput{QueueUrl: n, Label: "l"})
		wantOK(e.t, err, "RemovePermission on a queue name")
		_, err = e.svc.ListDeadLetterSourceQueues(e.op(), &contract.ListDeadLetterSourceQueuesInput{QueueUrl: "byname-dlq"})
		wantOK(e.t, err, "ListDeadLetterSourceQueues of a queue name")
		_, err = e.svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: n})
		wantOK(e.t, err, "PurgeQueue of a queue name")
		// A name that is no queue of the caller's is NonExistentQueue.
		_, err = e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: "nosuchqueue", MessageBody: str("x")})
		wantErr(e.t, err, contract.ErrQueueDoesNotExist())
		_, err = e.svc.DeleteQueue(e.op(), &contract.DeleteQueueInput{QueueUrl: n})
		wantOK(e.t, err, "DeleteQueue of a queue name")
		_, err = e.svc.GetQueueUrl(e.op(), &contract.GetQueueUrlInput{QueueName: n})
		wantErr(e.t, err, contract.ErrQueueDoesNotExist())
	})
}
