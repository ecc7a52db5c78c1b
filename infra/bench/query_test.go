package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/functions/sigv4"
	"github.com/sluicehq/sluice/stores/memstore"
)

// wireLog sits under queryTransport and records what really went over
// the wire: the actions of form-encoded requests and whether anything
// else (a JSON request, a JSON answer) was seen.
type wireLog struct {
	next    http.RoundTripper
	mu      sync.Mutex
	actions map[string]int
	bad     []string
}

func (w *wireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(b))
	form, _ := url.ParseQuery(string(b))
	resp, err := w.next.RoundTrip(req)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case req.Header.Get("X-Amz-Target") != "", !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded"),
		form.Get("Version") != queryAPIVersion:
		w.bad = append(w.bad, "request "+req.Header.Get("Content-Type")+" "+string(b))
	case err == nil && !strings.Contains(resp.Header.Get("Content-Type"), "xml"):
		w.bad = append(w.bad, form.Get("Action")+" answered in "+resp.Header.Get("Content-Type"))
	}
	w.actions[form.Get("Action")]++
	return resp, err
}

// TestQueryProtocolRun runs the load generator in Query mode against
// sluice (which speaks both protocols) and checks both its checks and that
// every request was a Query request answered in XML.
func TestQueryProtocolRun(t *testing.T) {
	srv := newServer(t)
	for _, tc := range []struct {
		name        string
		fifo, batch bool
	}{
		{name: "standard"},
		{name: "standard-batch", batch: true},
		{name: "fifo", fifo: true},
		{name: "fifo-batch", fifo: true, batch: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wire := &wireLog{next: newTransport(nil), actions: map[string]int{}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := Run(ctx, Config{
				Endpoint: srv.URL, Protocol: ProtocolQuery, HTTPClient: &http.Client{Transport: wire},
				Producers: 2, Consumers: 2, Groups: 4, Size: 256,
				FIFO: tc.fifo, Batch: tc.batch,
				Warmup: 200 * time.Millisecond, Duration: time.Second, Drain: 10 * time.Second,
				QueuePrefix: "q-" + tc.name,
			})
			if err != nil {
				t.Fatal(err)
			}
			c := res.Checks
			if res.Errors != 0 {
				t.Errorf("errors %d: %v", res.Errors, res.ErrorSamples)
			}
			if c.Sent == 0 || c.Received != c.Sent || c.Missing != 0 || !c.Drained || c.Duplicates != 0 {
				t.Errorf("sent %d, received %d, missing %d, duplicates %d, drained %v", c.Sent, c.Received, c.Missing, c.Duplicates, c.Drained)
			}
			if c.OrderViolations != 0 || c.Foreign != 0 {
				t.Errorf("order violations %d (%v), foreign %d", c.OrderViolations, c.OrderExamples, c.Foreign)
			}
			if !res.OK() || res.QueueKept != "" {
				t.Errorf("OK %v, queue kept %q", res.OK(), res.QueueKept)
			}
			wire.mu.Lock()
			defer wire.mu.Unlock()
			if len(wire.bad) > 0 {
				t.Errorf("not Query on the wire: %q", wire.bad[:min(3, len(wire.bad))])
			}
			send, del := "SendMessage", "DeleteMessage"
			if tc.batch {
				send, del = "SendMessageBatch", "DeleteMessageBatch"
			}
			for _, a := range []string{"CreateQueue", send, "ReceiveMessage", del, "DeleteQueue"} {
				if wire.actions[a] == 0 {
					t.Errorf("no %s went over the wire: %v", a, wire.actions)
				}
			}
		})
	}
}

func TestQueryProtocolRejected(t *testing.T) {
	_, err := Run(context.Background(), Config{Endpoint: "http://127.0.0.1:1", Protocol: "xml"})
	if err == nil || !strings.Contains(err.Error(), "bad protocol") {
		t.Errorf("protocol xml: %v", err)
	}
}

// TestQueryRequestForm pins the Query names of the members the load
// generator sends (from the Query model: flattened lists and maps).
func TestQueryRequestForm(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		gotForms <- r.PostForm
		a, result := r.PostForm.Get("Action"), ""
		if a == "CreateQueue" {
			result = "<QueueUrl>http://sqs.example/000000000000/q.fifo</QueueUrl>"
		}
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, "<"+a+"Response><"+a+"Result>"+result+"</"+a+"Result></"+a+"Response>")
	}))
	defer srv.Close()
	c := NewClient(srv.URL, &http.Client{Transport: QueryTransport(nil)})
	ctx := context.Background()
	q := aws.String("http://sqs.example/000000000000/q.fifo")
	check := func(call func() error, want url.Values) {
		t.Helper()
		if err := call(); err != nil {
			t.Fatal(err)
		}
		got := <-gotForms
		want.Set("Version", "2012-11-05")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("form\n got %v\nwant %v", got, want)
		}
	}
	check(func() error {
		_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("m0"), MessageBody: aws.String("a"), MessageGroupId: aws.String("g1"), MessageDeduplicationId: aws.String("d0"),
				MessageAttributes: map[string]types.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}},
			{Id: aws.String("m1"), MessageBody: aws.String("b & c"), DelaySeconds: 3},
		}})
		return err
	}, url.Values{"Action": {"SendMessageBatch"}, "QueueUrl": {*q},
		"SendMessageBatchRequestEntry.1.Id": {"m0"}, "SendMessageBatchRequestEntry.1.MessageBody": {"a"},
		"SendMessageBatchRequestEntry.1.MessageGroupId": {"g1"}, "SendMessageBatchRequestEntry.1.MessageDeduplicationId": {"d0"},
		"SendMessageBatchRequestEntry.1.MessageAttribute.1.Name":              {"k"},
		"SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType":    {"String"},
		"SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue": {"v"},
		"SendMessageBatchRequestEntry.2.Id":                                   {"m1"}, "SendMessageBatchRequestEntry.2.MessageBody": {"b & c"},
		"SendMessageBatchRequestEntry.2.DelaySeconds": {"3"},
	})
	check(func() error {
		_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 10, WaitTimeSeconds: 20,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"SequenceNumber", "MessageGroupId"},
			MessageAttributeNames:       []string{"All"}})
		return err
	}, url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {*q}, "MaxNumberOfMessages": {"10"}, "WaitTimeSeconds": {"20"},
		"MessageSystemAttributeName.1": {"SequenceNumber"}, "MessageSystemAttributeName.2": {"MessageGroupId"},
		"MessageAttributeName.1": {"All"}})
	check(func() error {
		_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q.fifo"),
			Attributes: map[string]string{"VisibilityTimeout": "120", "FifoQueue": "true"}, Tags: map[string]string{"team": "x"}})
		return err
	}, url.Values{"Action": {"CreateQueue"}, "QueueName": {"q.fifo"},
		"Attribute.1.Name": {"FifoQueue"}, "Attribute.1.Value": {"true"},
		"Attribute.2.Name": {"VisibilityTimeout"}, "Attribute.2.Value": {"120"},
		"Tag.1.Key": {"team"}, "Tag.1.Value": {"x"}})
	check(func() error {
		_, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: []types.DeleteMessageBatchRequestEntry{
			{Id: aws.String("d0"), ReceiptHandle: aws.String("rh+/=0")}}})
		return err
	}, url.Values{"Action": {"DeleteMessageBatch"}, "QueueUrl": {*q},
		"DeleteMessageBatchRequestEntry.1.Id": {"d0"}, "DeleteMessageBatchRequestEntry.1.ReceiptHandle": {"rh+/=0"}})
}

var gotForms = make(chan url.Values, 1)

// The XML answers below carry the values of answers recorded from real
// Amazon SQS over the Query protocol (LocalStack's snapshot of AWS; the
// test names are given), in the Query model's shape, with the values the
// recording redacts (ids, timestamps, receipt handles) filled in; want is
// what the same recording holds as parsed output.
func TestQueryResultJSON(t *testing.T) {
	for _, tc := range []struct {
		name, action, xml, want string
	}{{
		name:   "test_fifo_message_attributes/send_message",
		action: "SendMessage",
		xml: `<?xml version="1.0"?><SendMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><SendMessageResult>
<MessageId>8f9e1d2c-0000-4000-8000-000000000001</MessageId><MD5OfMessageBody>19c9e282d65f9733bc6b35d50062c7ee</MD5OfMessageBody>
<SequenceNumber>18885347366744752384</SequenceNumber></SendMessageResult>
<ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></SendMessageResponse>`,
		want: `{"MD5OfMessageBody":"19c9e282d65f9733bc6b35d50062c7ee","MessageId":"8f9e1d2c-0000-4000-8000-000000000001","SequenceNumber":"18885347366744752384"}`,
	}, {
		name:   "test_fifo_message_attributes/receive_message_0",
		action: "ReceiveMessage",
		xml: `<?xml version="1.0"?><ReceiveMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><ReceiveMessageResult><Message>
<MessageId>8f9e1d2c-0000-4000-8000-000000000001</MessageId><ReceiptHandle>AQEB+rh/1==</ReceiptHandle>
<MD5OfBody>19c9e282d65f9733bc6b35d50062c7ee</MD5OfBody><Body>message-body-1</Body>
<Attribute><Name>ApproximateFirstReceiveTimestamp</Name><Value>1714484217000</Value></Attribute>
<Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>
<Attribute><Name>MessageDeduplicationId</Name><Value>dedup-1</Value></Attribute>
<Attribute><Name>MessageGroupId</Name><Value>group-1</Value></Attribute>
<Attribute><Name>SenderId</Name><Value>AIDAEXAMPLE</Value></Attribute>
<Attribute><Name>SentTimestamp</Name><Value>1714484216000</Value></Attribute>
<Attribute><Name>SequenceNumber</Name><Value>18885347366744752384</Value></Attribute>
</Message></ReceiveMessageResult><ResponseMetadata><RequestId>r2</RequestId></ResponseMetadata></ReceiveMessageResponse>`,
		want: `{"Messages":[{"Attributes":{"ApproximateFirstReceiveTimestamp":"1714484217000","ApproximateReceiveCount":"1",
"MessageDeduplicationId":"dedup-1","MessageGroupId":"group-1","SenderId":"AIDAEXAMPLE","SentTimestamp":"1714484216000",
"SequenceNumber":"18885347366744752384"},"Body":"message-body-1","MD5OfBody":"19c9e282d65f9733bc6b35d50062c7ee",
"MessageId":"8f9e1d2c-0000-4000-8000-000000000001","ReceiptHandle":"AQEB+rh/1=="}]}`,
	}, {
		name:   "test_send_message_with_binary_attributes/binary-attrs-msg",
		action: "ReceiveMessage",
		xml: `<ReceiveMessageResponse><ReceiveMessageResult><Message><MessageId>m</MessageId><ReceiptHandle>r</ReceiptHandle>
<MD5OfBody>098f6bcd4621d373cade4e832627b4f6</MD5OfBody><Body>test</Body><MD5OfMessageAttributes>8cbe4db156db8a94db8b801b7addb984</MD5OfMessageAttributes>
<MessageAttribute><Name>attr1</Name><Value><BinaryValue>dHJhY2VwYXJlbnQeMDAtNzc0MDYyZDZjMzcwODFhNWEwYjliNWI4OGUzMDYyN2MtMmQyNDgyMjExZjY0ODlkYS0wMQ==</BinaryValue><DataType>Binary</DataType></Value></MessageAttribute>
</Message></ReceiveMessageResult></ReceiveMessageResponse>`,
		want: `{"Messages":[{"Body":"test","MD5OfBody":"098f6bcd4621d373cade4e832627b4f6","MD5OfMessageAttributes":"8cbe4db156db8a94db8b801b7addb984",
"MessageAttributes":{"attr1":{"BinaryValue":"dHJhY2VwYXJlbnQeMDAtNzc0MDYyZDZjMzcwODFhNWEwYjliNWI4OGUzMDYyN2MtMmQyNDgyMjExZjY0ODlkYS0wMQ==","DataType":"Binary"}},
"MessageId":"m","ReceiptHandle":"r"}]}`,
	}, {
		name:   "empty receive",
		action: "ReceiveMessage",
		xml:    `<ReceiveMessageResponse><ReceiveMessageResult/><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ReceiveMessageResponse>`,
		want:   `{}`,
	}, {
		name:   "test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size/send_oversized_message_batch",
		action: "SendMessageBatch",
		xml: `<SendMessageBatchResponse><SendMessageBatchResult>
<SendMessageBatchResultEntry><Id>1</Id><MessageId>u1</MessageId><MD5OfMessageBody>f44facf5a7ee0af446ecf3e0f854441e</MD5OfMessageBody><MD5OfMessageAttributes>a45daa70926828a2f0a1db3418e6feb4</MD5OfMessageAttributes></SendMessageBatchResultEntry>
<SendMessageBatchResultEntry><Id>2</Id><MessageId>u2</MessageId><MD5OfMessageBody>0cc175b9c0f1b6a831c399e269772661</MD5OfMessageBody></SendMessageBatchResultEntry>
</SendMessageBatchResult></SendMessageBatchResponse>`,
		want: `{"Failed":[],"Successful":[{"Id":"1","MD5OfMessageAttributes":"a45daa70926828a2f0a1db3418e6feb4","MD5OfMessageBody":"f44facf5a7ee0af446ecf3e0f854441e","MessageId":"u1"},
{"Id":"2","MD5OfMessageBody":"0cc175b9c0f1b6a831c399e269772661","MessageId":"u2"}]}`,
	}, {
		name:   "DeleteMessageBatch with a failed entry",
		action: "DeleteMessageBatch",
		xml: `<DeleteMessageBatchResponse><DeleteMessageBatchResult><DeleteMessageBatchResultEntry><Id>d0</Id></DeleteMessageBatchResultEntry>
<BatchResultErrorEntry><Id>d1</Id><SenderFault>true</SenderFault><Code>ReceiptHandleIsInvalid</Code><Message>The input receipt handle "x" is not a valid receipt handle.</Message></BatchResultErrorEntry>
</DeleteMessageBatchResult></DeleteMessageBatchResponse>`,
		want: `{"Failed":[{"Code":"ReceiptHandleIsInvalid","Id":"d1","Message":"The input receipt handle \"x\" is not a valid receipt handle.","SenderFault":true}],"Successful":[{"Id":"d0"}]}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := queryResultJSON(tc.action, []byte(tc.xml))
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := queryResultJSON("SendMessage", []byte(`<ReceiveMessageResponse/>`)); err == nil {
		t.Error("an answer to another action was taken")
	}
}

// TestQueryAnswersThroughSDK serves recorded Query answers over HTTP and
// reads them with the SDK client through queryTransport: the SDK checks
// the MD5 of the bodies and decodes the errors.
func TestQueryAnswersThroughSDK(t *testing.T) {
	answers := map[string]struct {
		status int
		body   string
	}{
		// test_fifo_message_attributes/receive_message_0
		"ReceiveMessage": {200, `<ReceiveMessageResponse><ReceiveMessageResult><Message><MessageId>m1</MessageId><ReceiptHandle>rh1</ReceiptHandle>
<MD5OfBody>19c9e282d65f9733bc6b35d50062c7ee</MD5OfBody><Body>message-body-1</Body>
<Attribute><Name>MessageGroupId</Name><Value>group-1</Value></Attribute></Message></ReceiveMessageResult></ReceiveMessageResponse>`},
		// test_non_existent_queue/queue-does-not-exist (Type Sender, HTTP 400)
		"DeleteQueue": {400, `<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>Sender</Type>
<Code>AWS.SimpleQueueService.NonExistentQueue</Code><Message>The specified queue does not exist.</Message><Detail/></Error>
<RequestId>r</RequestId></ErrorResponse>`},
		// test_send_receive_max_number_of_messages/send_max_number_of_messages
		"SendMessage": {400, `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidParameterValue</Code>
<Message>Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.</Message><Detail/></Error><RequestId>r</RequestId></ErrorResponse>`},
		// A body that does not match its MD5: the SDK must see it.
		"SendMessageBatch": {200, `<SendMessageBatchResponse><SendMessageBatchResult><SendMessageBatchResultEntry><Id>m0</Id><MessageId>u</MessageId>
<MD5OfMessageBody>00000000000000000000000000000000</MD5OfMessageBody></SendMessageBatchResultEntry></SendMessageBatchResult></SendMessageBatchResponse>`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.FormValue("Action")]
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	defer srv.Close()
	c := NewClient(srv.URL, &http.Client{Transport: QueryTransport(nil)})
	ctx := context.Background()
	q := aws.String(srv.URL + "/000000000000/q")

	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "message-body-1" || out.Messages[0].Attributes["MessageGroupId"] != "group-1" {
		t.Errorf("received %+v", out.Messages)
	}

	_, err = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q})
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Errorf("DeleteQueue: %T %v, want QueueDoesNotExist", err, err)
	}
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "AWS.SimpleQueueService.NonExistentQueue" || api.ErrorMessage() != "The specified queue does not exist." {
		t.Errorf("DeleteQueue: %v", err)
	}

	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("x")})
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidParameterValue" || api.ErrorFault() != smithy.FaultClient ||
		!strings.HasPrefix(api.ErrorMessage(), "Value 11 for parameter MaxNumberOfMessages") {
		t.Errorf("SendMessage: %v", err)
	}

	_, err = c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("m0"), MessageBody: aws.String("x")}}})
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "md5") {
		t.Errorf("SendMessageBatch with a wrong MD5: %v", err)
	}
}

// TestQuerySigned: the Query requests are signed again over their own
// body, so a server that checks signatures (sluice with the bench's key)
// takes them.
func TestQuerySigned(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	store := memstore.New()
	svc := service.New(service.Config{Store: store, Logger: logger})
	v, err := sigv4.New(sigv4.Config{Region: "us-east-1", Keys: []sigv4.Key{{AccessKeyID: "bench", SecretAccessKey: "bench"}}})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(r *http.Request, body []byte) (httpapi.Caller, error) {
		c, err := v.Verify(r, body)
		return httpapi.Caller{AccountID: c.AccountID}, err
	}
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.Options{Logger: logger, Verify: verify}))
	defer func() {
		svc.Shutdown()
		srv.Close()
		_ = store.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{Endpoint: srv.URL, Protocol: ProtocolQuery, Producers: 1, Consumers: 1,
		FIFO: true, Batch: true, Duration: 300 * time.Millisecond, Drain: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Checks.Sent == 0 {
		t.Errorf("checks %+v, errors %v", res.Checks, res.ErrorSamples)
	}
}
