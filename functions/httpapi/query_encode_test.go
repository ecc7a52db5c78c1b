package httpapi

import (
	"bytes"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

// Types to parse responses back with encoding/xml, as a Query client would.

type xAttr struct {
	Name  string `xml:"Name"`
	Value string `xml:"Value"`
}

type xMsgAttrValue struct {
	StringValue *string  `xml:"StringValue"`
	BinaryValue *string  `xml:"BinaryValue"`
	StringList  []string `xml:"StringListValue"`
	DataType    string   `xml:"DataType"`
}

type xMsgAttr struct {
	Name  string        `xml:"Name"`
	Value xMsgAttrValue `xml:"Value"`
}

type xMessage struct {
	MessageId              string     `xml:"MessageId"`
	ReceiptHandle          string     `xml:"ReceiptHandle"`
	MD5OfBody              string     `xml:"MD5OfBody"`
	Body                   string     `xml:"Body"`
	Attribute              []xAttr    `xml:"Attribute"`
	MD5OfMessageAttributes string     `xml:"MD5OfMessageAttributes"`
	MessageAttribute       []xMsgAttr `xml:"MessageAttribute"`
}

type xReceiveResponse struct {
	XMLName   xml.Name   `xml:"http://queue.amazonaws.com/doc/2012-11-05/ ReceiveMessageResponse"`
	Messages  []xMessage `xml:"ReceiveMessageResult>Message"`
	RequestId string     `xml:"ResponseMetadata>RequestId"`
}

func TestXMLReceiveMessage(t *testing.T) {
	body := "line1\r\nline2\rend & <tag> \"q\" 'a' \t é \U0001F600 ]]>"
	out := &contract.ReceiveMessageOutput{Messages: []contract.Message{
		{
			MessageId: "m1", ReceiptHandle: "r+/=", MD5OfBody: "md5", Body: body,
			Attributes:             map[string]string{"SentTimestamp": "1", "ApproximateReceiveCount": "2"},
			MD5OfMessageAttributes: "md5a",
			MessageAttributes: map[string]contract.MessageAttributeValue{
				"s": {StringValue: ptr("v<&>"), DataType: "String"},
				"b": {BinaryValue: []byte{0, 1, 0xff}, DataType: "Binary"},
			},
		},
		{MessageId: "m2", ReceiptHandle: "r2", MD5OfBody: "md5-2", Body: ""},
	}}
	doc := encodeXML(operations["ReceiveMessage"], out, "req-1")
	if !bytes.HasPrefix(doc, []byte(`<?xml version="1.0"?><ReceiveMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><ReceiveMessageResult><Message>`)) {
		t.Errorf("unexpected start: %s", doc[:120])
	}
	if bytes.ContainsRune(doc, '\r') {
		t.Error("raw carriage return in XML output")
	}
	var got xReceiveResponse
	if err := xml.Unmarshal(doc, &got); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if got.RequestId != "req-1" || len(got.Messages) != 2 {
		t.Fatalf("got %+v", got)
	}
	m := got.Messages[0]
	if m.Body != body {
		t.Errorf("body round trip: got %q want %q", m.Body, body)
	}
	if m.MessageId != "m1" || m.ReceiptHandle != "r+/=" || m.MD5OfBody != "md5" || m.MD5OfMessageAttributes != "md5a" {
		t.Errorf("got %+v", m)
	}
	wantAttrs := []xAttr{{"ApproximateReceiveCount", "2"}, {"SentTimestamp", "1"}}
	if !reflect.DeepEqual(m.Attribute, wantAttrs) {
		t.Errorf("attributes %+v", m.Attribute)
	}
	wantMA := []xMsgAttr{
		{"b", xMsgAttrValue{BinaryValue: ptr("AAH/"), DataType: "Binary"}},
		{"s", xMsgAttrValue{StringValue: ptr("v<&>"), DataType: "String"}},
	}
	if !reflect.DeepEqual(m.MessageAttribute, wantMA) {
		t.Errorf("message attributes %+v", m.MessageAttribute)
	}
	m2 := got.Messages[1]
	if m2.Body != "" || m2.Attribute != nil || m2.MessageAttribute != nil || m2.MD5OfMessageAttributes != "" {
		t.Errorf("second message %+v", m2)
	}
	if strings.Contains(string(doc), "<MD5OfMessageAttributes></MD5OfMessageAttributes>") {
		t.Error("empty MD5OfMessageAttributes written")
	}
}

// AWS closes an empty result element itself: LocalStack's AWS-validated
// test_get_send_and_receive_messages looks for <ReceiveMessageResult/>.
func TestXMLEmptyReceive(t *testing.T) {
	doc := string(encodeXML(operations["ReceiveMessage"], &contract.ReceiveMessageOutput{}, "r"))
	want := `<?xml version="1.0"?><ReceiveMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><ReceiveMessageResult/><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ReceiveMessageResponse>`
	if doc != want {
		t.Errorf("got  %s\nwant %s", doc, want)
	}
}

func TestXMLNoResultElement(t *testing.T) {
	for _, name := range []string{"AddPermission", "ChangeMessageVisibility", "DeleteMessage", "DeleteQueue",
		"PurgeQueue", "RemovePermission", "SetQueueAttributes", "TagQueue", "UntagQueue"} {
		doc := string(encodeXML(operations[name], &contract.Empty{}, "rid"))
		want := `<?xml version="1.0"?><` + name + `Response xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><ResponseMetadata><RequestId>rid</RequestId></ResponseMetadata></` + name + `Response>`
		if doc != want {
			t.Errorf("%s:\n got %s\nwant %s", name, doc, want)
		}
	}
}

func TestXMLSendMessageBatch(t *testing.T) {
	out := &contract.SendMessageBatchOutput{
		Successful: []contract.SendMessageBatchResultEntry{
			{Id: "a", MessageId: "m1", MD5OfMessageBody: "x", SequenceNumber: "100"},
			{Id: "b", MessageId: "m2", MD5OfMessageBody: "y", MD5OfMessageAttributes: "z"},
		},
		Failed: []contract.BatchResultErrorEntry{
			{Id: "c", SenderFault: true, Code: "InvalidParameterValue", Message: "bad <body>"},
			{Id: "d", SenderFault: false, Code: "InternalError"},
		},
	}
	doc := encodeXML(operations["SendMessageBatch"], out, "rid")
	var got struct {
		OK []struct {
			Id, MessageId, MD5OfMessageBody, MD5OfMessageAttributes, SequenceNumber string
		} `xml:"SendMessageBatchResult>SendMessageBatchResultEntry"`
		Failed []struct {
			Id          string
			SenderFault bool
			Code        string
			Message     *string
		} `xml:"SendMessageBatchResult>BatchResultErrorEntry"`
	}
	if err := xml.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.OK) != 2 || got.OK[0].SequenceNumber != "100" || got.OK[1].MD5OfMessageAttributes != "z" || got.OK[1].MessageId != "m2" {
		t.Errorf("successful: %+v", got.OK)
	}
	if len(got.Failed) != 2 || !got.Failed[0].SenderFault || got.Failed[0].Message == nil || *got.Failed[0].Message != "bad <body>" ||
		got.Failed[1].SenderFault || got.Failed[1].Message != nil || got.Failed[1].Code != "InternalError" {
		t.Errorf("failed: %+v", got.Failed)
	}
}

func TestXMLListsAndMaps(t *testing.T) {
	doc := encodeXML(operations["ListQueues"], &contract.ListQueuesOutput{QueueUrls: []string{"u1", "u2"}, NextToken: "n"}, "r")
	var lq struct {
		Urls []string `xml:"ListQueuesResult>QueueUrl"`
		Next string   `xml:"ListQueuesResult>NextToken"`
	}
	if err := xml.Unmarshal(doc, &lq); err != nil || !reflect.DeepEqual(lq.Urls, []string{"u1", "u2"}) || lq.Next != "n" {
		t.Errorf("ListQueues: %v %+v\n%s", err, lq, doc)
	}

	doc = encodeXML(operations["ListQueueTags"], &contract.ListQueueTagsOutput{Tags: map[string]string{"b": "2", "a": ""}}, "r")
	var tags struct {
		Tags []struct{ Key, Value string } `xml:"ListQueueTagsResult>Tag"`
	}
	if err := xml.Unmarshal(doc, &tags); err != nil || len(tags.Tags) != 2 || tags.Tags[0].Key != "a" || tags.Tags[1].Value != "2" {
		t.Errorf("ListQueueTags: %v %+v", err, tags)
	}

	doc = encodeXML(operations["GetQueueAttributes"], &contract.GetQueueAttributesOutput{Attributes: map[string]string{
		"Policy": `{"a":"<b>"}`, "VisibilityTimeout": "30"}}, "r")
	var ga struct {
		Attrs []xAttr `xml:"GetQueueAttributesResult>Attribute"`
	}
	if err := xml.Unmarshal(doc, &ga); err != nil || !reflect.DeepEqual(ga.Attrs, []xAttr{{"Policy", `{"a":"<b>"}`}, {"VisibilityTimeout", "30"}}) {
		t.Errorf("GetQueueAttributes: %v %+v", err, ga)
	}

	doc = encodeXML(operations["ListDeadLetterSourceQueues"], &contract.ListDeadLetterSourceQueuesOutput{QueueUrls: []string{"s1"}}, "r")
	if !bytes.Contains(doc, []byte("<ListDeadLetterSourceQueuesResult><QueueUrl>s1</QueueUrl></ListDeadLetterSourceQueuesResult>")) {
		t.Errorf("ListDeadLetterSourceQueues: %s", doc)
	}

	doc = encodeXML(operations["CancelMessageMoveTask"], &contract.CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: 0}, "r")
	if !bytes.Contains(doc, []byte("<CancelMessageMoveTaskResult><ApproximateNumberOfMessagesMoved>0</ApproximateNumberOfMessagesMoved></CancelMessageMoveTaskResult>")) {
		t.Errorf("CancelMessageMoveTask: %s", doc)
	}
}

func TestXMLError(t *testing.T) {
	doc := encodeXMLError(contract.ErrQueueDoesNotExist(), "rid")
	want := `<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>The specified queue does not exist for this wsdl version.</Message><Detail/></Error><RequestId>rid</RequestId></ErrorResponse>`
	if string(doc) != want {
		t.Errorf("got  %s\nwant %s", doc, want)
	}
	var parsed struct {
		Err struct {
			Type, Code, Message string
		} `xml:"Error"`
		RequestId string
	}
	if err := xml.Unmarshal(encodeXMLError(contract.ErrInternal(), "r2"), &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Err.Type != "Receiver" || parsed.Err.Code != "InternalError" || parsed.RequestId != "r2" {
		t.Errorf("got %+v", parsed)
	}
}
