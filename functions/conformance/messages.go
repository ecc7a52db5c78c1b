package conformance

import (
	"bytes"
	"context"
	"maps"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

const traceHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

func pick(m map[string]contract.MessageAttributeValue, names ...string) map[string]contract.MessageAttributeValue {
	out := map[string]contract.MessageAttributeValue{}
	for _, n := range names {
		out[n] = m[n]
	}
	return out
}

func attrsEqual(a, b map[string]contract.MessageAttributeValue) bool {
	return maps.EqualFunc(a, b, func(x, y contract.MessageAttributeValue) bool {
		sx, sy := "", ""
		if x.StringValue != nil {
			sx = *x.StringValue
		}
		if y.StringValue != nil {
			sy = *y.StringValue
		}
		return x.DataType == y.DataType && sx == sy && (x.StringValue == nil) == (y.StringValue == nil) && bytes.Equal(x.BinaryValue, y.BinaryValue)
	})
}

func testMessages(t *testing.T, s suite) {
	s.test(t, "SendReceiveDelete", func(e *env) {
		url := e.create("q", nil)
		out := e.send(url, "message")
		// snapshot: MD5 of "message".
		if out.MD5OfMessageBody != "78e731027d8fd50ed642340b7c9a63b3" {
			e.t.Errorf("MD5OfMessageBody = %q", out.MD5OfMessageBody)
		}
		if !uuidRE.MatchString(out.MessageId) {
			e.t.Errorf("MessageId = %q, want a UUID", out.MessageId)
		}
		if out.SequenceNumber != "" || out.MD5OfMessageAttributes != "" || out.MD5OfMessageSystemAttributes != "" {
			e.t.Errorf("Standard send returned SequenceNumber %q, MD5OfMessageAttributes %q, MD5OfMessageSystemAttributes %q; want none",
				out.SequenceNumber, out.MD5OfMessageAttributes, out.MD5OfMessageSystemAttributes)
		}
		m := e.recvOne(url)
		if m.MessageId != out.MessageId || m.Body != "message" || m.MD5OfBody != out.MD5OfMessageBody || m.ReceiptHandle == "" {
			e.t.Errorf("received %+v, want MessageId %s, body, MD5 and a receipt handle", m, out.MessageId)
		}
		if len(m.Attributes) != 0 || len(m.MessageAttributes) != 0 || m.MD5OfMessageAttributes != "" {
			e.t.Errorf("received attributes %v / %v / %q without asking for any", m.Attributes, m.MessageAttributes, m.MD5OfMessageAttributes)
		}
		e.wantEmpty(url) // in flight
		e.del(url, m.ReceiptHandle)
		e.clock.Advance(secs(31))
		e.wantEmpty(url)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "DistinctMessageIds", func(e *env) {
		url := e.create("q", nil)
		seen := map[string]bool{}
		for i := range 20 {
			id := e.send(url, "same body").MessageId
			if seen[id] {
				e.t.Fatalf("send %d repeated MessageId %s", i, id)
			}
			seen[id] = true
		}
	})

	s.test(t, "BodiesRoundTrip", func(e *env) {
		url := e.create("q", nil)
		// validated test_send_receive_message_encoded_content and
		// test_message_with_carriage_return, plus the edges of the allowed
		// character set (docs: #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF).
		for _, b := range []string{
			`"&quot;&quot;` + "\r",
			"{\r\n\"machineID\" : \"d357006e26ff47439e1ef894225d4307\"}",
			"<xml attr='1'>&amp;</xml>",
			"tab\there\nnewline",
			"\u00e9\u4e16\u754c \U0001F600 \uD7FF \uE000 \uFFFD \U0010FFFF",
			" leading and trailing spaces ",
		} {
			out := e.send(url, b)
			if out.MD5OfMessageBody != md5OfBody(b) {
				e.t.Errorf("MD5OfMessageBody(%q) = %s, want %s", b, out.MD5OfMessageBody, md5OfBody(b))
			}
			m := e.recvOne(url)
			if m.Body != b || m.MD5OfBody != md5OfBody(b) {
				e.t.Errorf("round trip: got %q (MD5 %s), want %q", m.Body, m.MD5OfBody, b)
			}
			e.del(url, m.ReceiptHandle)
		}
	})

	s.test(t, "EmptyBody", func(e *env) {
		// snapshot test_send_empty_message (boto sends MessageBody="").
		url := e.create("q", nil)
		want := contract.ErrMissingParameter("MessageBody")
		_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url})
		wantErr(e.t, err, want)
		_, err = e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("")})
		wantErr(e.t, err, want)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "MaximumMessageSize", func(e *env) {
		// snapshot test_send_oversized_message: the size counts the body
		// and each attribute's name, type and value.
		url := e.create("q", nil)
		k := map[string]contract.MessageAttributeValue{"k": strAttr("x")} // 1+6+1 = 8 bytes
		body := repeat("a", 1048576-8+1)
		_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body, MessageAttributes: k})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("One or more parameters are invalid. Reason: Message must be shorter than 1048576 bytes."))
		// A full 1 MiB is accepted on every store (design), with and without attributes.
		full := repeat("b", 1048576)
		out := e.send(url, full)
		body = repeat("c", 1048576-8)
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: &body, MessageAttributes: k})
		got := e.recv(url, 10)
		if len(got) != 2 {
			e.t.Fatalf("received %d messages, want 2", len(got))
		}
		for _, m := range got {
			if m.MessageId == out.MessageId && (m.Body != full || m.MD5OfBody != md5OfBody(full)) {
				e.t.Errorf("1 MiB body came back with %d bytes", len(m.Body))
			}
		}
		// snapshot test_send_message_with_updated_maximum_message_size.
		e.setAttrs(url, map[string]string{"MaximumMessageSize": "1024"})
		e.send(url, repeat("a", 1024))
		body = repeat("a", 1024-8+1)
		_, err = e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body, MessageAttributes: k})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."))
		// Bytes, not characters: 342 three-byte characters are 1026 bytes.
		body = repeat("\u4e16", 342)
		_, err = e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."))
		e.wantCounts(url, 1, 2, 0)
	})

	s.test(t, "InvalidCharacters", func(e *env) {
		// validated test_send_message_with_invalid_payload_characters (AWS's
		// wording is not recorded: code only).
		url := e.create("q", nil)
		for _, b := range []string{"Invalid-\x00-\b-\x13-\uffff", "\x01", "a\x1fb", "\ufffe"} {
			_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &b})
			wantErrCode(e.t, err, "InvalidMessageContents", 400)
		}
		// validated test_invalid_string_attributes_cause_invalid_parameter_value_error.
		bad := "Invalid-\b,\v"
		_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("ok"),
			MessageAttributes: map[string]contract.MessageAttributeValue{"attr1": {DataType: "String", StringValue: &bad}}})
		wantErrCode(e.t, err, "InvalidParameterValue", 400)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "MessageAttributes", func(e *env) {
		url := e.create("q", nil)
		n := "1614717034367"
		f := "3.14"
		attrs := map[string]contract.MessageAttributeValue{
			"s":               strAttr("text"),
			"timestamp":       {DataType: "Number", StringValue: &n},
			"float":           {DataType: "Number.float", StringValue: &f},
			"custom":          {DataType: "String.custom", StringValue: str("c")},
			"bin":             {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 255}},
			"gif":             {DataType: "Binary.gif", BinaryValue: []byte("GIF89a")},
			"Dotted.Name_x-y": strAttr("v"),
		}
		out := e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("test"), MessageAttributes: attrs})
		if want := md5OfAttributes(attrs); out.MD5OfMessageAttributes != want {
			e.t.Errorf("MD5OfMessageAttributes = %s, want %s", out.MD5OfMessageAttributes, want)
		}
		ms := e.recvAll(url, 1)
		if len(ms) != 1 {
			e.t.Fatalf("received %d, want 1", len(ms))
		}
		if !attrsEqual(ms[0].MessageAttributes, attrs) {
			e.t.Errorf("MessageAttributes = %s, want %s", fmtAttrs(ms[0].MessageAttributes), fmtAttrs(attrs))
		}
		if ms[0].MD5OfMessageAttributes != out.MD5OfMessageAttributes {
			e.t.Errorf("received MD5OfMessageAttributes = %s, want %s", ms[0].MD5OfMessageAttributes, out.MD5OfMessageAttributes)
		}
		// snapshot: known digests of known attributes.
		for _, c := range []struct {
			attrs map[string]contract.MessageAttributeValue
			want  string
		}{
			{map[string]contract.MessageAttributeValue{"MyAttribute": strAttr("foobar")}, "adb59cd4678ea5a855436b949cd07ab6"},
			{map[string]contract.MessageAttributeValue{"Foo": strAttr("Bar")}, "ae7155c6026991b6d54b11589678bf9c"},
			{map[string]contract.MessageAttributeValue{"attr1": {DataType: "Binary",
				BinaryValue: []byte("traceparent\x1e00-774062d6c37081a5a0b9b5b88e30627c-2d2482211f6489da-01")}}, "8cbe4db156db8a94db8b801b7addb984"},
		} {
			if got := e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("x"), MessageAttributes: c.attrs}).MD5OfMessageAttributes; got != c.want {
				e.t.Errorf("MD5OfMessageAttributes(%s) = %s, want %s", fmtAttrs(c.attrs), got, c.want)
			}
		}
		// Exactly ten is fine.
		ten := map[string]contract.MessageAttributeValue{}
		for i := range 10 {
			ten["a"+strconv.Itoa(i)] = strAttr("v")
		}
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("ten"), MessageAttributes: ten})
	})

	s.test(t, "MessageAttributeRules", func(e *env) {
		url := e.create("q", nil)
		send := func(attrs map[string]contract.MessageAttributeValue) error {
			_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("test"), MessageAttributes: attrs})
			return err
		}
		// snapshot test_send_message_with_empty_string_attribute.
		wantErr(e.t, send(map[string]contract.MessageAttributeValue{"ErrorDetails": strAttr("")}),
			contract.ErrInvalidParameterValue("Message (user) attribute 'ErrorDetails' must contain a non-empty value of type 'String'."))
		// docs: at most 10 attributes. Wording not recorded.
		eleven := map[string]contract.MessageAttributeValue{}
		for i := range 11 {
			eleven["a"+strconv.Itoa(i)] = strAttr("v")
		}
		wantErrCode(e.t, send(eleven), "InvalidParameterValue", 400)
		// validated test_send_message_with_invalid_string_attributes: bad
		// names and types (code only).
		for name, a := range map[string]contract.MessageAttributeValue{
			"aWs.-Invalid-attr":    strAttr("Valid"),
			"AMAZON.-Invalid-attr": strAttr("Valid"),
			".-Invalid-attr":       strAttr("Valid"),
			"Invalid.":             strAttr("Valid"),
			"Invalid-!-attr":       strAttr("Valid"),
			"Invalid-(-attr":       strAttr("Valid"),
			"Invalid-?-attr":       strAttr("Valid"),
			"Invalid-§-attr":       strAttr("Valid"),
			`Invalid-"-attr`:       strAttr("Valid"),
			"Invalid-€-attr":       strAttr("Valid"),
			"Invalid- -attr":       strAttr("Valid"),
			repeat("L", 257):       strAttr("Valid"),
			"typeInvalid":          {DataType: "Invalid", StringValue: str("Valid")},
			"typeTooLong":          {DataType: "Number." + repeat("L", 256), StringValue: str("1")},
			"noType":               {StringValue: str("Valid")},
			"binaryEmpty":          {DataType: "Binary"},
			"stringNoValue":        {DataType: "String"},
		} {
			err := send(map[string]contract.MessageAttributeValue{name: a})
			if err == nil {
				e.t.Errorf("attribute %q %+v accepted, want InvalidParameterValue", name, a)
				continue
			}
			wantErrCode(e.t, err, "InvalidParameterValue", 400)
		}
		e.wantCounts(url, 0, 0, 0)
		// validated test_send_message_with_invalid_string_attributes: its
		// baseline, a name with non-ASCII letters, is accepted by AWS.
		// The docs' "alphanumeric" are letters and digits, not only ASCII.
		for _, name := range []string{"attr.1øßä", "Ärger_über-Öl.ÉÇ"} {
			if err := send(map[string]contract.MessageAttributeValue{name: strAttr("Valida")}); err != nil {
				e.t.Errorf("attribute name %s refused (AWS accepts letters): %v", name, err)
			}
		}
	})

	s.test(t, "SystemAttributes", func(e *env) {
		url := e.create("q", nil)
		n := "1493147359900"
		user := map[string]contract.MessageAttributeValue{"timestamp": {DataType: "Number", StringValue: &n}}
		sys := map[string]contract.MessageAttributeValue{"AWSTraceHeader": strAttr(traceHeader)}
		plain := e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("test"), MessageAttributes: user})
		traced := e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("test"), MessageAttributes: user, MessageSystemAttributes: sys})
		// validated test_system_attributes_have_no_effect_on_attr_md5.
		if plain.MD5OfMessageAttributes != "235c5c510d26fb653d073faed50ae77c" || traced.MD5OfMessageAttributes != plain.MD5OfMessageAttributes {
			e.t.Errorf("MD5OfMessageAttributes = %s and %s, want both 235c5c510d26fb653d073faed50ae77c", plain.MD5OfMessageAttributes, traced.MD5OfMessageAttributes)
		}
		if plain.MD5OfMessageSystemAttributes != "" || traced.MD5OfMessageSystemAttributes != "5ae4d5d7636402d80f4eb6d213245a88" {
			e.t.Errorf("MD5OfMessageSystemAttributes = %q and %q, want \"\" and 5ae4d5d7636402d80f4eb6d213245a88",
				plain.MD5OfMessageSystemAttributes, traced.MD5OfMessageSystemAttributes)
		}
		// snapshot test_aws_trace_header_propagation: asked for by name,
		// AWSTraceHeader comes back among Attributes.
		got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(10), WaitTimeSeconds: i64(0),
			AttributeNames: []string{"SentTimestamp", "AWSTraceHeader"}, MessageAttributeNames: []string{"All"}})
		if len(got) != 2 {
			e.t.Fatalf("received %d, want 2", len(got))
		}
		for _, m := range got {
			want := map[string]string{"SentTimestamp": millis(e.clock.Now())}
			if m.MessageId == traced.MessageId {
				want["AWSTraceHeader"] = traceHeader
			}
			wantAttrs(e.t, m.Attributes, want)
			if m.MD5OfMessageAttributes != "235c5c510d26fb653d073faed50ae77c" || !attrsEqual(m.MessageAttributes, user) {
				e.t.Errorf("MessageAttributes = %s (MD5 %s), want only the user attribute", fmtAttrs(m.MessageAttributes), m.MD5OfMessageAttributes)
			}
		}
		// Only AWSTraceHeader is a settable system attribute (docs). Wording not recorded.
		_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("x"),
			MessageSystemAttributes: map[string]contract.MessageAttributeValue{"SenderId": strAttr("me")}})
		wantErrCodeIn(e.t, err, "InvalidParameterValue", "InvalidAttributeName")
	})

	s.test(t, "TraceHeaderFromRequest", func(e *env) {
		// validated test_aws_trace_header_propagation: the request's
		// X-Amzn-Trace-Id header becomes the AWSTraceHeader of a message
		// that carries none; one the message carries wins. It is not
		// digested into MD5OfMessageSystemAttributes, which covers what the
		// request sent as attributes.
		url := e.create("q", nil)
		const header = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1"
		traced := func() context.Context { return service.WithTraceHeader(e.op(), header) }
		own := map[string]contract.MessageAttributeValue{"AWSTraceHeader": strAttr(traceHeader)}
		a, err := e.svc.SendMessage(traced(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("a")})
		wantOK(e.t, err, "SendMessage")
		if err == nil && a.MD5OfMessageSystemAttributes != "" {
			e.t.Errorf("MD5OfMessageSystemAttributes = %q, want none", a.MD5OfMessageSystemAttributes)
		}
		_, err = e.svc.SendMessage(traced(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("b"), MessageSystemAttributes: own})
		wantOK(e.t, err, "SendMessage")
		out, err := e.svc.SendMessageBatch(traced(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
			{Id: "c", MessageBody: str("c")}, {Id: "d", MessageBody: str("d"), MessageSystemAttributes: own}}})
		wantOK(e.t, err, "SendMessageBatch")
		if err == nil && (len(out.Successful) != 2 || out.Successful[0].MD5OfMessageSystemAttributes != "") {
			e.t.Errorf("SendMessageBatch: %+v", out)
		}
		e.send(url, "e") // no header
		want := map[string]string{"a": header, "b": traceHeader, "c": header, "d": traceHeader, "e": ""}
		got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(10), WaitTimeSeconds: i64(0),
			AttributeNames: []string{"AWSTraceHeader"}})
		if len(got) != len(want) {
			e.t.Fatalf("received %d, want %d", len(got), len(want))
		}
		for _, m := range got {
			if m.Attributes["AWSTraceHeader"] != want[m.Body] {
				e.t.Errorf("message %s: AWSTraceHeader = %q, want %q", m.Body, m.Attributes["AWSTraceHeader"], want[m.Body])
			}
		}
	})

	s.test(t, "ReceiveLimits", func(e *env) {
		url := e.create("q", nil)
		e.send(url, "message")
		// snapshot test_send_receive_max_number_of_messages.
		for _, n := range []int64{11, 0} {
			_, err := e.svc.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(n)})
			wantErr(e.t, err, contract.ErrInvalidParameterValue("Value "+strconv.FormatInt(n, 10)+" for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided."))
		}
		// snapshot test_send_receive_wait_time_seconds.
		for _, n := range []int64{21, -1} {
			_, err := e.svc.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(n)})
			wantErr(e.t, err, contract.ErrInvalidParameterValue("Value "+strconv.FormatInt(n, 10)+" for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."))
		}
		// docs: VisibilityTimeout 0 to 43200 (wording not recorded).
		for _, n := range []int64{-1, 43201} {
			_, err := e.svc.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: url, VisibilityTimeout: i64(n)})
			wantErrCode(e.t, err, "InvalidParameterValue", 400)
		}
		// None of that claimed the message.
		e.wantCounts(url, 1, 0, 0)
		// Without MaxNumberOfMessages a receive returns at most one.
		e.send(url, "two")
		if got := e.receive(&contract.ReceiveMessageInput{QueueUrl: url}); len(got) != 1 {
			e.t.Errorf("default receive returned %d messages, want 1", len(got))
		}
	})

	s.test(t, "ReceiveUpToMax", func(e *env) {
		url := e.create("q", nil)
		for i := range 15 {
			e.send(url, "m"+strconv.Itoa(i))
		}
		seen := map[string]bool{}
		first := e.recv(url, 10)
		// sluice returns what is visible up to Max (a single consumer on an
		// idle queue is never short-changed).
		if len(first) != 10 {
			e.t.Errorf("first receive of 10 returned %d", len(first))
		}
		for _, m := range first {
			seen[m.Body] = true
		}
		for range 15 {
			more := e.recv(url, 10)
			if len(more) == 0 {
				break
			}
			for _, m := range more {
				if seen[m.Body] {
					e.t.Errorf("%s delivered twice while in flight", m.Body)
				}
				seen[m.Body] = true
			}
		}
		if len(seen) != 15 {
			e.t.Errorf("received %d distinct messages, want 15", len(seen))
		}
		e.wantCounts(url, 0, 15, 0)
	})

	s.test(t, "ReceiveVisibilityTimeout", func(e *env) {
		// validated test_receive_message_with_visibility_timeout_updates_timeout
		// and test_receive_terminate_visibility_timeout.
		url := e.create("q", nil)
		e.send(url, "test")
		a := e.recvVT(url, 1, 0)
		b := e.recvVT(url, 1, 5)
		if len(a) != 1 || len(b) != 1 || a[0].ReceiptHandle == b[0].ReceiptHandle {
			e.t.Fatalf("receives with VisibilityTimeout 0 then 5 = %d, %d messages (distinct handles required)", len(a), len(b))
		}
		e.clock.Advance(secs(4))
		e.wantEmpty(url)
		e.clock.Advance(secs(2))
		if got := e.recv(url, 1); len(got) != 1 {
			e.t.Errorf("after the receive's 5 s visibility timeout: %d messages, want 1", len(got))
		}
	})
}
