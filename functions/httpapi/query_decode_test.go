package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

func form(t *testing.T, raw string) *queryForm {
	t.Helper()
	v, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", raw, err)
	}
	f, err := newQueryForm(v)
	if err != nil {
		t.Fatalf("newQueryForm(%q): %v", raw, err)
	}
	return f
}

// decodeQuery runs the Query decoder of action over raw form parameters.
func decodeQuery(t *testing.T, action, raw string) (any, error) {
	t.Helper()
	op := operations[action]
	if op == nil {
		t.Fatalf("no operation %s", action)
	}
	in := op.newInput()
	v, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", raw, err)
	}
	f, err := newQueryForm(v)
	if err != nil {
		return in, err
	}
	err = op.fromQuery(f, in)
	return in, err
}

func ptr[T any](v T) *T { return &v }

// mustForm is newQueryForm for parameters known to be good.
func mustForm(t *testing.T, v url.Values) *queryForm {
	t.Helper()
	f, err := newQueryForm(v)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestQueryCreateQueue(t *testing.T) {
	in, err := decodeQuery(t, "CreateQueue",
		"Action=CreateQueue&QueueName=q1.fifo"+
			"&Attribute.2.Name=VisibilityTimeout&Attribute.2.Value=40"+
			"&Attribute.1.Name=FifoQueue&Attribute.1.Value=true"+
			"&Attribute.10.Name=DelaySeconds&Attribute.10.Value=5"+
			"&Tag.1.Key=team&Tag.1.Value=core&Tag.2.Key=empty&Tag.2.Value=")
	if err != nil {
		t.Fatal(err)
	}
	want := &contract.CreateQueueInput{
		QueueName:  "q1.fifo",
		Attributes: map[string]string{"FifoQueue": "true", "VisibilityTimeout": "40", "DelaySeconds": "5"},
		Tags:       map[string]string{"team": "core", "empty": ""},
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got %+v\nwant %+v", in, want)
	}
}

func TestQueryListOrderIsNumeric(t *testing.T) {
	in, err := decodeQuery(t, "GetQueueAttributes",
		"QueueUrl=http%3A%2F%2Fh%2F0%2Fq&AttributeName.10=J&AttributeName.2=B&AttributeName.1=A&AttributeName.3=C"+
			"&AttributeName.x=ignored")
	if err != nil {
		t.Fatal(err)
	}
	got := in.(*contract.GetQueueAttributesInput)
	if got.QueueUrl != "http://h/0/q" {
		t.Errorf("QueueUrl = %q", got.QueueUrl)
	}
	if want := []string{"A", "B", "C", "J"}; !reflect.DeepEqual(got.AttributeNames, want) {
		t.Errorf("AttributeNames = %q, want %q", got.AttributeNames, want)
	}
}

func TestQuerySendMessage(t *testing.T) {
	v := url.Values{}
	v.Set("Action", "SendMessage")
	v.Set("QueueUrl", "http://localhost:9324/000000000000/q")
	v.Set("MessageBody", "a+b &<x>\r\n")
	v.Set("DelaySeconds", "7")
	v.Set("MessageAttribute.1.Name", "s")
	v.Set("MessageAttribute.1.Value.DataType", "String")
	v.Set("MessageAttribute.1.Value.StringValue", "hello")
	v.Set("MessageAttribute.2.Name", "b")
	v.Set("MessageAttribute.2.Value.DataType", "Binary.custom")
	v.Set("MessageAttribute.2.Value.BinaryValue", "AAEC/w==")
	v.Set("MessageAttribute.3.Name", "empty")
	v.Set("MessageAttribute.3.Value.DataType", "String")
	v.Set("MessageAttribute.3.Value.StringValue", "")
	v.Set("MessageAttribute.4.Name", "lists")
	v.Set("MessageAttribute.4.Value.DataType", "String")
	v.Set("MessageAttribute.4.Value.StringListValue.2", "y")
	v.Set("MessageAttribute.4.Value.StringListValue.1", "x")
	v.Set("MessageAttribute.4.Value.BinaryListValue.1", "AQ==")
	v.Set("MessageSystemAttribute.1.Name", "AWSTraceHeader")
	v.Set("MessageSystemAttribute.1.Value.DataType", "String")
	v.Set("MessageSystemAttribute.1.Value.StringValue", "Root=1-abc")
	v.Set("MessageDeduplicationId", "d1")
	v.Set("MessageGroupId", "g1")
	in := new(contract.SendMessageInput)
	if err := querySendMessage(mustForm(t, v), in); err != nil {
		t.Fatal(err)
	}
	want := &contract.SendMessageInput{
		QueueUrl:     "http://localhost:9324/000000000000/q",
		MessageBody:  ptr("a+b &<x>\r\n"),
		DelaySeconds: ptr[int64](7),
		MessageAttributes: map[string]contract.MessageAttributeValue{
			"s":     {StringValue: ptr("hello"), DataType: "String"},
			"b":     {BinaryValue: []byte{0, 1, 2, 255}, DataType: "Binary.custom"},
			"empty": {StringValue: ptr(""), DataType: "String"},
			"lists": {StringListValues: []string{"x", "y"}, BinaryListValues: [][]byte{{1}}, DataType: "String"},
		},
		MessageSystemAttributes: map[string]contract.MessageAttributeValue{
			"AWSTraceHeader": {StringValue: ptr("Root=1-abc"), DataType: "String"},
		},
		MessageDeduplicationId: ptr("d1"),
		MessageGroupId:         ptr("g1"),
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got  %+v\nwant %+v", in, want)
	}
}

func TestQueryAbsentVersusEmpty(t *testing.T) {
	in, err := decodeQuery(t, "SendMessage", "QueueUrl=u&MessageAttribute.1.Name=e&MessageAttribute.1.Value.DataType=Binary&MessageAttribute.1.Value.BinaryValue=")
	if err != nil {
		t.Fatal(err)
	}
	got := in.(*contract.SendMessageInput)
	if got.MessageBody != nil || got.DelaySeconds != nil || got.MessageGroupId != nil || got.MessageDeduplicationId != nil {
		t.Errorf("absent parameters decoded as present: %+v", got)
	}
	a := got.MessageAttributes["e"]
	if a.BinaryValue == nil || len(a.BinaryValue) != 0 || a.StringValue != nil {
		t.Errorf("empty BinaryValue: got %#v", a)
	}

	in, err = decodeQuery(t, "SendMessage", "QueueUrl=u&MessageBody=")
	if err != nil {
		t.Fatal(err)
	}
	if b := in.(*contract.SendMessageInput).MessageBody; b == nil || *b != "" {
		t.Errorf("empty MessageBody: got %v", b)
	}
}

func TestQuerySendMessageBatch(t *testing.T) {
	raw := "Action=SendMessageBatch&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq" +
		"&SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=second" +
		"&SendMessageBatchRequestEntry.2.MessageGroupId=g&SendMessageBatchRequestEntry.2.MessageDeduplicationId=d" +
		"&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=first" +
		"&SendMessageBatchRequestEntry.1.DelaySeconds=3" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=k" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=Number" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=42" +
		"&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Name=AWSTraceHeader" +
		"&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Value.DataType=String" +
		"&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Value.StringValue=Root%3D1" +
		"&SendMessageBatchRequestEntry.11.Id=k"
	in, err := decodeQuery(t, "SendMessageBatch", raw)
	if err != nil {
		t.Fatal(err)
	}
	want := &contract.SendMessageBatchInput{
		QueueUrl: "http://h/000000000000/q",
		Entries: []contract.SendMessageBatchRequestEntry{
			{
				Id: "a", MessageBody: ptr("first"), DelaySeconds: ptr[int64](3),
				MessageAttributes: map[string]contract.MessageAttributeValue{
					"k": {StringValue: ptr("42"), DataType: "Number"},
				},
				MessageSystemAttributes: map[string]contract.MessageAttributeValue{
					"AWSTraceHeader": {StringValue: ptr("Root=1"), DataType: "String"},
				},
			},
			{Id: "b", MessageBody: ptr("second"), MessageGroupId: ptr("g"), MessageDeduplicationId: ptr("d")},
			{Id: "k"},
		},
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got  %+v\nwant %+v", in, want)
	}
}

func TestQueryDeleteAndChangeVisibilityBatch(t *testing.T) {
	in, err := decodeQuery(t, "DeleteMessageBatch",
		"QueueUrl=u&DeleteMessageBatchRequestEntry.1.Id=x&DeleteMessageBatchRequestEntry.1.ReceiptHandle=r1"+
			"&DeleteMessageBatchRequestEntry.2.Id=y&DeleteMessageBatchRequestEntry.2.ReceiptHandle=r%2B2")
	if err != nil {
		t.Fatal(err)
	}
	wantD := &contract.DeleteMessageBatchInput{QueueUrl: "u", Entries: []contract.DeleteMessageBatchRequestEntry{
		{Id: "x", ReceiptHandle: "r1"}, {Id: "y", ReceiptHandle: "r+2"}}}
	if !reflect.DeepEqual(in, wantD) {
		t.Errorf("got %+v want %+v", in, wantD)
	}

	in, err = decodeQuery(t, "ChangeMessageVisibilityBatch",
		"QueueUrl=u&ChangeMessageVisibilityBatchRequestEntry.1.Id=x&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=r1"+
			"&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=60"+
			"&ChangeMessageVisibilityBatchRequestEntry.2.Id=y&ChangeMessageVisibilityBatchRequestEntry.2.ReceiptHandle=r2")
	if err != nil {
		t.Fatal(err)
	}
	wantC := &contract.ChangeMessageVisibilityBatchInput{QueueUrl: "u", Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{
		{Id: "x", ReceiptHandle: "r1", VisibilityTimeout: ptr[int64](60)}, {Id: "y", ReceiptHandle: "r2"}}}
	if !reflect.DeepEqual(in, wantC) {
		t.Errorf("got %+v want %+v", in, wantC)
	}
}

func TestQueryReceiveMessage(t *testing.T) {
	in, err := decodeQuery(t, "ReceiveMessage",
		"QueueUrl=u&AttributeName.1=All&MessageAttributeName.1=foo&MessageAttributeName.2=bar.*"+
			"&MessageSystemAttributeName.1=SenderId&MaxNumberOfMessages=10&VisibilityTimeout=0&WaitTimeSeconds=20"+
			"&ReceiveRequestAttemptId=att")
	if err != nil {
		t.Fatal(err)
	}
	want := &contract.ReceiveMessageInput{
		QueueUrl: "u", AttributeNames: []string{"All"}, MessageAttributeNames: []string{"foo", "bar.*"},
		MessageSystemAttributeNames: []string{"SenderId"},
		MaxNumberOfMessages:         ptr[int64](10), VisibilityTimeout: ptr[int64](0), WaitTimeSeconds: ptr[int64](20),
		ReceiveRequestAttemptId: ptr("att"),
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got %+v want %+v", in, want)
	}
}

func TestQueryOtherActions(t *testing.T) {
	cases := []struct {
		action, raw string
		want        any
	}{
		{"AddPermission", "QueueUrl=u&Label=l&AWSAccountId.1=111&AWSAccountId.2=222&ActionName.1=SendMessage&ActionName.2=ReceiveMessage",
			&contract.AddPermissionInput{QueueUrl: "u", Label: "l", AWSAccountIds: []string{"111", "222"}, Actions: []string{"SendMessage", "ReceiveMessage"}}},
		{"RemovePermission", "QueueUrl=u&Label=l", &contract.RemovePermissionInput{QueueUrl: "u", Label: "l"}},
		{"SetQueueAttributes", "QueueUrl=u&Attribute.1.Name=Policy&Attribute.1.Value=%7B%7D",
			&contract.SetQueueAttributesInput{QueueUrl: "u", Attributes: map[string]string{"Policy": "{}"}}},
		{"TagQueue", "QueueUrl=u&Tag.1.Key=a&Tag.1.Value=1", &contract.TagQueueInput{QueueUrl: "u", Tags: map[string]string{"a": "1"}}},
		{"UntagQueue", "QueueUrl=u&TagKey.1=a&TagKey.2=b", &contract.UntagQueueInput{QueueUrl: "u", TagKeys: []string{"a", "b"}}},
		{"ListQueueTags", "QueueUrl=u", &contract.ListQueueTagsInput{QueueUrl: "u"}},
		{"ListQueues", "QueueNamePrefix=p&MaxResults=5&NextToken=t",
			&contract.ListQueuesInput{QueueNamePrefix: "p", MaxResults: ptr[int64](5), NextToken: ptr("t")}},
		{"ListQueues", "", &contract.ListQueuesInput{}},
		{"ListDeadLetterSourceQueues", "QueueUrl=u&MaxResults=1",
			&contract.ListDeadLetterSourceQueuesInput{QueueUrl: "u", MaxResults: ptr[int64](1)}},
		{"GetQueueUrl", "QueueName=q&QueueOwnerAWSAccountId=123", &contract.GetQueueUrlInput{QueueName: "q", QueueOwnerAWSAccountId: "123"}},
		{"DeleteQueue", "QueueUrl=u", &contract.DeleteQueueInput{QueueUrl: "u"}},
		{"PurgeQueue", "QueueUrl=u", &contract.PurgeQueueInput{QueueUrl: "u"}},
		{"DeleteMessage", "QueueUrl=u&ReceiptHandle=r", &contract.DeleteMessageInput{QueueUrl: "u", ReceiptHandle: "r"}},
		{"ChangeMessageVisibility", "QueueUrl=u&ReceiptHandle=r&VisibilityTimeout=9",
			&contract.ChangeMessageVisibilityInput{QueueUrl: "u", ReceiptHandle: "r", VisibilityTimeout: ptr[int64](9)}},
		{"StartMessageMoveTask", "SourceArn=arn%3Aa&DestinationArn=arn%3Ab&MaxNumberOfMessagesPerSecond=50",
			&contract.StartMessageMoveTaskInput{SourceArn: "arn:a", DestinationArn: ptr("arn:b"), MaxNumberOfMessagesPerSecond: ptr[int64](50)}},
		{"ListMessageMoveTasks", "SourceArn=arn%3Aa&MaxResults=10", &contract.ListMessageMoveTasksInput{SourceArn: "arn:a", MaxResults: ptr[int64](10)}},
		{"CancelMessageMoveTask", "TaskHandle=h", &contract.CancelMessageMoveTaskInput{TaskHandle: "h"}},
	}
	for _, c := range cases {
		got, err := decodeQuery(t, c.action, c.raw)
		if err != nil {
			t.Errorf("%s: %v", c.action, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q:\n got %+v\nwant %+v", c.action, c.raw, got, c.want)
		}
	}
}

func TestQueryBadInteger(t *testing.T) {
	cases := []struct{ action, raw, param string }{
		{"ReceiveMessage", "QueueUrl=u&MaxNumberOfMessages=ten", "MaxNumberOfMessages"},
		{"SendMessage", "QueueUrl=u&MessageBody=x&DelaySeconds=1.5", "DelaySeconds"},
		{"SendMessageBatch", "QueueUrl=u&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.DelaySeconds=x",
			"SendMessageBatchRequestEntry.1.DelaySeconds"},
		{"ChangeMessageVisibility", "QueueUrl=u&ReceiptHandle=r&VisibilityTimeout=99999999999999999999", "VisibilityTimeout"},
	}
	for _, c := range cases {
		_, err := decodeQuery(t, c.action, c.raw)
		var ce *contract.Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: want *contract.Error, got %v", c.action, err)
			continue
		}
		if ce.Code != "InvalidParameterValue" || ce.Status != 400 || !ce.Sender {
			t.Errorf("%s: got %+v", c.action, ce)
		}
		if !bytes.Contains([]byte(ce.Message), []byte("for parameter "+c.param+" is invalid")) {
			t.Errorf("%s: message %q does not name %s", c.action, ce.Message, c.param)
		}
	}
}

func TestQueryBadBase64(t *testing.T) {
	_, err := decodeQuery(t, "SendMessage", "QueueUrl=u&MessageBody=x&MessageAttribute.1.Name=b&MessageAttribute.1.Value.DataType=Binary&MessageAttribute.1.Value.BinaryValue=%21%21%21")
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Code != "InvalidParameterValue" {
		t.Fatalf("got %v", err)
	}
}

// TestQueryNamesMatchModel checks every parameter name the decoders read
// against the Query model of botocore 1.32.6 (see the reference folder).
func TestQueryNamesMatchModel(t *testing.T) {
	names := queryModelNames(t)
	if names == nil {
		t.Skip("reference model not available")
	}
	for action, params := range names {
		op := operations[action]
		if op == nil {
			t.Errorf("model action %s has no operation", action)
			continue
		}
		v := url.Values{}
		for _, p := range params {
			v.Set(p.name, sampleValue(p))
		}
		in := op.newInput()
		if err := op.fromQuery(mustForm(t, v), in); err != nil {
			t.Errorf("%s: %v", action, err)
			continue
		}
		// Every leaf of the input must have been set from some parameter.
		if missing := unsetLeaves(reflect.ValueOf(in).Elem(), ""); len(missing) > 0 {
			t.Errorf("%s: members not filled from model names %v: %v", action, params, missing)
		}
	}
	for name := range operations {
		if _, ok := names[name]; !ok {
			t.Errorf("operation %s is not in the Query model", name)
		}
	}
}

// TestQueryBotocoreRequests decodes requests serialized by botocore's own
// Query serializer (testdata/gen_botocore_query.py) and checks that each
// yields the same input as the JSON protocol does for the same parameters.
func TestQueryBotocoreRequests(t *testing.T) {
	raw, err := os.ReadFile("testdata/botocore_query_requests.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Action string          `json:"action"`
		Input  json.RawMessage `json:"input"`
		Body   string          `json:"body"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.Action] = true
		op := operations[c.Action]
		if op == nil {
			t.Errorf("no operation %s", c.Action)
			continue
		}
		v, err := url.ParseQuery(c.Body)
		if err != nil {
			t.Fatal(err)
		}
		if v.Get("Action") != c.Action || v.Get("Version") != contract.APIVersion {
			t.Errorf("%s: Action/Version = %q/%q", c.Action, v.Get("Action"), v.Get("Version"))
		}
		fromQuery := op.newInput()
		if err := op.fromQuery(mustForm(t, v), fromQuery); err != nil {
			t.Errorf("%s: query: %v", c.Action, err)
			continue
		}
		fromJSON := op.newInput()
		if err := decodeJSON(c.Input, fromJSON); err != nil {
			t.Errorf("%s: json: %v", c.Action, err)
			continue
		}
		if !reflect.DeepEqual(fromQuery, fromJSON) {
			t.Errorf("%s:\nquery %+v\n json %+v", c.Action, fromQuery, fromJSON)
		}
	}
	for name := range operations {
		if !seen[name] {
			t.Errorf("no botocore sample for %s", name)
		}
	}
}

// TestQueryListIndexes: an index that is not 1 to 2147483647 written
// plainly is refused, not dropped (a dropped attribute would be missing from
// the digest the client computed); any index in range is an element.
func TestQueryListIndexes(t *testing.T) {
	const send = "QueueUrl=u&MessageBody=x"
	attr := func(i string) string {
		return "&MessageAttribute." + i + ".Name=a&MessageAttribute." + i + ".Value.DataType=String&MessageAttribute." + i + ".Value.StringValue=v"
	}
	for _, idx := range []string{"0", "00", "01", "2147483648", "99999999999999999999"} {
		_, err := decodeQuery(t, "SendMessage", send+attr(idx))
		var ce *contract.Error
		if !errors.As(err, &ce) || ce.Code != "InvalidParameterValue" || ce.Status != 400 {
			t.Errorf("index %s: got %v, want InvalidParameterValue", idx, err)
		}
	}
	in, err := decodeQuery(t, "SendMessage", send+attr("2147483647"))
	if err != nil {
		t.Fatal(err)
	}
	if got := in.(*contract.SendMessageInput).MessageAttributes; len(got) != 1 || *got["a"].StringValue != "v" {
		t.Errorf("index 2147483647: attributes %+v", got)
	}
}

// TestQueryBase64IsStrict: a BinaryValue is padded standard base64, as the
// JSON protocol takes it.
func TestQueryBase64IsStrict(t *testing.T) {
	for _, b64 := range []string{"YWI", "YWJj%3D", "YW%3DJj", "YWJj%3D%3D%3D", "YW-_"} {
		_, err := decodeQuery(t, "SendMessage", "QueueUrl=u&MessageBody=x&MessageAttribute.1.Name=b&MessageAttribute.1.Value.DataType=Binary&MessageAttribute.1.Value.BinaryValue="+b64)
		var ce *contract.Error
		if !errors.As(err, &ce) || ce.Code != "InvalidParameterValue" {
			t.Errorf("%s: got %v, want InvalidParameterValue", b64, err)
		}
		var jin contract.SendMessageInput
		raw, _ := url.QueryUnescape(b64)
		if jerr := decodeJSON([]byte(`{"MessageAttributes":{"b":{"DataType":"Binary","BinaryValue":"`+raw+`"}}}`), &jin); jerr == nil {
			t.Errorf("%s: JSON accepts it", b64)
		}
	}
}
