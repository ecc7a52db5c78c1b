package conformance

import (
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func testReceiveFilters(t *testing.T, s suite) {
	s.test(t, "SystemAttributeNames", func(e *env) {
		// snapshot test_receive_message_attribute_names_filters,
		// test_receive_message_message_system_attribute_names_filters and
		// test_message_system_attribute_names_with_attribute_names.
		url := e.create("q", map[string]string{"VisibilityTimeout": "0"})
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("msg"),
			MessageAttributes: map[string]contract.MessageAttributeValue{"Foo": strAttr("Bar")}})
		sent := e.clock.Now()
		e.clock.Advance(secs(3))
		first := e.clock.Now()
		recv := func(attrNames, sysNames, msgAttrNames []string) contract.Message {
			e.t.Helper()
			got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(0),
				AttributeNames: attrNames, MessageSystemAttributeNames: sysNames, MessageAttributeNames: msgAttrNames})
			if len(got) != 1 {
				e.t.Fatalf("received %d messages, want 1", len(got))
			}
			e.clock.Advance(secs(1))
			return got[0]
		}
		all := func(count string) map[string]string {
			return map[string]string{"ApproximateFirstReceiveTimestamp": millis(first), "ApproximateReceiveCount": count,
				"SenderId": "*", "SentTimestamp": millis(sent)}
		}
		check := func(m contract.Message, want map[string]string) {
			e.t.Helper()
			if want["SenderId"] == "*" {
				if m.Attributes["SenderId"] == "" {
					e.t.Error("SenderId missing or empty")
				}
				want["SenderId"] = m.Attributes["SenderId"]
			}
			wantAttrs(e.t, m.Attributes, want)
		}
		m := recv([]string{"All"}, nil, nil)
		check(m, all("1"))
		if len(m.MessageAttributes) != 0 || m.MD5OfMessageAttributes != "" {
			e.t.Errorf("message attributes returned without MessageAttributeNames: %s", fmtAttrs(m.MessageAttributes))
		}
		m = recv([]string{"All"}, nil, []string{"All"})
		check(m, all("2"))
		if m.MD5OfMessageAttributes != "ae7155c6026991b6d54b11589678bf9c" || len(m.MessageAttributes) != 1 {
			e.t.Errorf("MessageAttributes = %s (MD5 %s), want Foo (ae7155c6026991b6d54b11589678bf9c)", fmtAttrs(m.MessageAttributes), m.MD5OfMessageAttributes)
		}
		check(recv([]string{"SenderId"}, nil, nil), map[string]string{"SenderId": "*"})
		check(recv([]string{"SenderId", "SequenceNumber"}, nil, nil), map[string]string{"SenderId": "*"})
		check(recv(nil, []string{"All"}, nil), all("5"))
		check(recv(nil, []string{"SenderId"}, nil), map[string]string{"SenderId": "*"})
		check(recv(nil, []string{"SenderId", "SequenceNumber"}, nil), map[string]string{"SenderId": "*"})
		// The two lists combine.
		check(recv([]string{"All"}, []string{"All"}, nil), all("8"))
		check(recv([]string{"SenderId"}, []string{"All"}, nil), all("9"))
		check(recv([]string{"SentTimestamp"}, []string{"ApproximateReceiveCount"}, nil),
			map[string]string{"SentTimestamp": millis(sent), "ApproximateReceiveCount": "10"})
		check(recv(nil, []string{"ApproximateFirstReceiveTimestamp"}, nil), map[string]string{"ApproximateFirstReceiveTimestamp": millis(first)})
		if m := recv(nil, nil, nil); len(m.Attributes) != 0 {
			e.t.Errorf("Attributes without asking: %v", m.Attributes)
		}
	})

	s.test(t, "FIFOSystemAttributes", func(e *env) {
		// snapshot test_fifo_message_attributes.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "0",
			"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
		out := e.sendFIFO(url, "message-body-1", "group-1", "dedup-1")
		if out.MD5OfMessageBody != "19c9e282d65f9733bc6b35d50062c7ee" || !seqRE.MatchString(out.SequenceNumber) {
			e.t.Errorf("send = %+v, want MD5 19c9e282d65f9733bc6b35d50062c7ee and a 20-digit SequenceNumber", out)
		}
		sent := e.clock.Now()
		for i, count := range []string{"1", "2"} {
			got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(0), AttributeNames: []string{"All"}})
			if len(got) != 1 {
				e.t.Fatalf("receive %d: %d messages, want 1", i, len(got))
			}
			a := got[0].Attributes
			want := map[string]string{"ApproximateFirstReceiveTimestamp": millis(sent), "ApproximateReceiveCount": count,
				"MessageDeduplicationId": "dedup-1", "MessageGroupId": "group-1", "SenderId": a["SenderId"],
				"SentTimestamp": millis(sent), "SequenceNumber": out.SequenceNumber}
			if a["SenderId"] == "" {
				e.t.Error("SenderId missing")
			}
			wantAttrs(e.t, a, want)
			e.clock.Advance(secs(1))
		}
		// With content-based deduplication a deduplication id is still
		// reported (AWS derives it from the body's SHA-256; its exact
		// spelling is not recorded, so only its presence is checked).
		e.sendFIFO(url, "cbd", "group-2", "")
		got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(0), MaxNumberOfMessages: i64(10),
			MessageSystemAttributeNames: []string{"MessageDeduplicationId", "MessageGroupId"}})
		found := false
		for _, m := range got {
			if m.Body == "cbd" {
				found = true
				if m.Attributes["MessageGroupId"] != "group-2" || m.Attributes["MessageDeduplicationId"] == "" || len(m.Attributes) != 2 {
					e.t.Errorf("attributes = %v, want MessageGroupId group-2 and a MessageDeduplicationId", m.Attributes)
				}
			}
		}
		if !found {
			e.t.Error("content-deduplicated message not received")
		}
	})

	s.test(t, "FairQueueGroup", func(e *env) {
		// snapshot test_fair_queue_with_message_group_id: a Standard queue
		// takes MessageGroupId and reports it.
		url := e.create("q", nil)
		out := e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("message"), MessageGroupId: str("test")})
		if out.SequenceNumber != "" || out.MD5OfMessageBody != "78e731027d8fd50ed642340b7c9a63b3" {
			e.t.Errorf("send = %+v, want no SequenceNumber", out)
		}
		got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(0), AttributeNames: []string{"All"}})
		if len(got) != 1 {
			e.t.Fatalf("received %d, want 1", len(got))
		}
		a := got[0].Attributes
		wantAttrs(e.t, a, map[string]string{"ApproximateFirstReceiveTimestamp": millis(e.clock.Now()), "ApproximateReceiveCount": "1",
			"MessageGroupId": "test", "SenderId": a["SenderId"], "SentTimestamp": millis(e.clock.Now())})
	})

	s.test(t, "MessageAttributeNames", func(e *env) {
		// snapshot test_receive_message_message_attribute_names_filters:
		// the digest covers the attributes returned.
		url := e.create("q", map[string]string{"VisibilityTimeout": "0"})
		all := map[string]contract.MessageAttributeValue{"Help.Me": strAttr("Me"), "Hello": strAttr("There"), "General": strAttr("Kenobi")}
		out := e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("msg"), MessageAttributes: all})
		if out.MD5OfMessageAttributes != "4c360f3fdafd970e05fae2f149d997f5" || out.MD5OfMessageBody != "6e2baaf3b97dbeef01c0043275f9a0e7" {
			e.t.Errorf("send = %+v", out)
		}
		for _, c := range []struct {
			names []string
			want  map[string]contract.MessageAttributeValue
			md5   string
		}{
			{nil, nil, ""},
			{[]string{"All"}, all, "4c360f3fdafd970e05fae2f149d997f5"},
			{[]string{"*"}, all, "4c360f3fdafd970e05fae2f149d997f5"},
			{[]string{".*"}, all, "4c360f3fdafd970e05fae2f149d997f5"},
			{[]string{"Foo", "Help"}, nil, ""},
			{[]string{"Hello", "General"}, pick(all, "Hello", "General"), "fca026605781cb4126a1e9044df24232"},
			{[]string{"Foo", "Hello"}, pick(all, "Hello"), "a311262e065454b75da111d535b8dacd"},
			{[]string{"Hel.*"}, pick(all, "Hello", "Help.Me"), "83fee93c1bcd8b9a5a923ffacdc636c7"},
			{[]string{"hello"}, nil, ""}, // names are case-sensitive (docs)
			{[]string{"AWS."}, nil, ""},
			{[]string{"..foo"}, nil, ""},
		} {
			got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(0), MessageAttributeNames: c.names})
			if len(got) != 1 {
				e.t.Errorf("MessageAttributeNames %q: %d messages, want 1", c.names, len(got))
				continue
			}
			m := got[0]
			if !attrsEqual(m.MessageAttributes, c.want) || m.MD5OfMessageAttributes != c.md5 {
				e.t.Errorf("MessageAttributeNames %q: got %s (MD5 %q), want %s (MD5 %q)", c.names, fmtAttrs(m.MessageAttributes), m.MD5OfMessageAttributes, fmtAttrs(c.want), c.md5)
			}
			if c.md5 != "" && md5OfAttributes(m.MessageAttributes) != c.md5 {
				e.t.Errorf("MessageAttributeNames %q: returned attributes do not hash to the returned MD5", c.names)
			}
		}
	})
}
