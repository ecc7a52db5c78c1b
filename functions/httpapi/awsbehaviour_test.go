package httpapi_test

// Behaviours found by testing against real SQS, on the wire: a queue name
// for a QueueUrl, the X-Amzn-Trace-Id header, the Query API at a queue URL
// (no Action, service-level actions, Accept: application/json) and the
// empty lists JSON responses leave out.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestQueueNameForQueueUrl: AWS accepts a queue name where a QueueUrl is
// expected (validated test_posting_to_queue_via_queue_name), on both
// protocols.
func TestQueueNameForQueueUrl(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("named")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String("named"), MessageBody: aws.String("Using name instead of URL")})
	if err != nil {
		t.Fatalf("SendMessage with QueueUrl=named: %v", err)
	}
	if aws.ToString(out.MD5OfMessageBody) != "86a83f96652a1bfad3891e7d523750cb" {
		t.Errorf("MD5OfMessageBody = %s", aws.ToString(out.MD5OfMessageBody))
	}
	var got struct {
		Attrs []struct{ Name, Value string } `xml:"GetQueueAttributesResult>Attribute"`
	}
	status, raw := queryCall(t, srv, "/", url.Values{"Action": {"GetQueueAttributes"}, "QueueUrl": {"named"},
		"AttributeName.1": {"ApproximateNumberOfMessages"}}, &got)
	if status != 200 || len(got.Attrs) != 1 || got.Attrs[0].Value != "1" {
		t.Errorf("Query GetQueueAttributes with QueueUrl=named: %d %s", status, raw)
	}
}

// withTraceHeader makes the client send X-Amzn-Trace-Id on every request.
func withTraceHeader(h string) func(*sqs.Options) {
	return sqs.WithAPIOptions(func(stack *middleware.Stack) error {
		return stack.Build.Add(middleware.BuildMiddlewareFunc("traceHeader",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					req.Header.Set("X-Amzn-Trace-Id", h)
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	})
}

// TestTraceHeaderBecomesAWSTraceHeader: validated
// test_aws_trace_header_propagation, for SendMessage and each batch entry.
func TestTraceHeaderBecomesAWSTraceHeader(t *testing.T) {
	const header = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1"
	srv := newServer(t)
	c := newClient(t, srv)
	ctx := context.Background()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("traced")})
	if err != nil {
		t.Fatal(err)
	}
	n := "1493147359900"
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("test"),
		MessageAttributes: map[string]types.MessageAttributeValue{"timestamp": {DataType: aws.String("Number"), StringValue: &n}}},
		withTraceHeader(header))
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if aws.ToString(sent.MD5OfMessageAttributes) != "235c5c510d26fb653d073faed50ae77c" || sent.MD5OfMessageSystemAttributes != nil {
		t.Errorf("SendMessage digests: %s, %v", aws.ToString(sent.MD5OfMessageAttributes), aws.ToString(sent.MD5OfMessageSystemAttributes))
	}
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("batched")}}}, withTraceHeader(header)); err != nil {
		t.Fatalf("SendMessageBatch: %v", err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("untraced")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAWSTraceHeader}})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("ReceiveMessage: %v, %d messages", err, len(out.Messages))
	}
	for _, m := range out.Messages {
		want := header
		if aws.ToString(m.Body) == "untraced" {
			want = ""
		}
		if got := m.Attributes["AWSTraceHeader"]; got != want {
			t.Errorf("%s: AWSTraceHeader = %q, want %q", aws.ToString(m.Body), got, want)
		}
	}
}

// get sends a GET to path with params and headers and returns the answer.
func get(t *testing.T, srv *httptest.Server, path string, params url.Values, accept string) (*http.Response, string) {
	t.Helper()
	u := srv.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestQueryAtQueueURL: the Query API over GET on a queue URL, as AWS
// answers it (validated TestSqsQueryApi).
func TestQueryAtQueueURL(t *testing.T) {
	srv := newServer(t)
	status, raw := queryCall(t, srv, "/", url.Values{"Action": {"CreateQueue"}, "QueueName": {"qa"}}, nil)
	if status != 200 {
		t.Fatalf("CreateQueue: %d %s", status, raw)
	}
	path := "/000000000000/qa"

	// test_get_without_query_returns_unknown_operation, also when JSON is
	// asked for (test_get_without_query_json_format_returns_returns_xml).
	for _, accept := range []string{"", "application/json"} {
		resp, body := get(t, srv, path, nil, accept)
		if resp.StatusCode != 404 || !strings.Contains(body, "<UnknownOperationException") {
			t.Errorf("GET %s (Accept %q): %d %s, want 404 UnknownOperationException", path, accept, resp.StatusCode, body)
		}
	}

	// test_get_create_queue_fails, test_get_list_queues_fails.
	for _, action := range []string{"CreateQueue", "ListQueues"} {
		resp, body := get(t, srv, path, url.Values{"Action": {action}, "QueueName": {"other"}}, "")
		want := "<Message>The action " + action + " is not valid for this endpoint.</Message>"
		if resp.StatusCode != 400 || !strings.Contains(body, "<Code>InvalidAction</Code>") || !strings.Contains(body, want) {
			t.Errorf("GET %s?Action=%s: %d %s", path, action, resp.StatusCode, body)
		}
	}
	resp, body := get(t, srv, "/", url.Values{"Action": {"GetQueueUrl"}, "QueueName": {"other"}}, "")
	if resp.StatusCode != 400 || !strings.Contains(body, "NonExistentQueue") {
		t.Errorf("CreateQueue refused at the queue URL must create nothing: %d %s", resp.StatusCode, body)
	}

	// test_get_list_queues_fails_json_format.
	resp, body = get(t, srv, path, url.Values{"Action": {"ListQueues"}}, "application/json")
	var e struct {
		Error struct{ Type, Code, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != 400 ||
		e.Error.Code != "InvalidAction" || e.Error.Message != "The action ListQueues is not valid for this endpoint." || e.Error.Type != "Sender" {
		t.Errorf("ListQueues at a queue URL, JSON: %d %s (%v)", resp.StatusCode, body, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}

	// test_get_queue_attributes_json_format.
	resp, body = get(t, srv, path, url.Values{"Action": {"GetQueueAttributes"}, "AttributeName.1": {"All"}}, "application/json")
	var attrs struct {
		GetQueueAttributesResponse struct {
			GetQueueAttributesResult struct {
				Attributes []struct{ Name, Value string }
			}
			ResponseMetadata struct{ RequestId string }
		}
	}
	if err := json.Unmarshal([]byte(body), &attrs); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GetQueueAttributes, JSON: %d %s (%v)", resp.StatusCode, body, err)
	}
	found := false
	for _, a := range attrs.GetQueueAttributesResponse.GetQueueAttributesResult.Attributes {
		if a.Name == "QueueArn" && a.Value == "arn:aws:sqs:us-east-1:000000000000:qa" {
			found = true
		}
	}
	if !found || attrs.GetQueueAttributesResponse.ResponseMetadata.RequestId == "" {
		t.Errorf("GetQueueAttributes, JSON: %s", body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}

	// Lists and maps of a message: members by name, maps as Name/Value.
	get(t, srv, path, url.Values{"Action": {"SendMessage"}, "MessageBody": {"hi"},
		"MessageAttribute.1.Name": {"k"}, "MessageAttribute.1.Value.DataType": {"String"}, "MessageAttribute.1.Value.StringValue": {"v"}}, "")
	resp, body = get(t, srv, path, url.Values{"Action": {"ReceiveMessage"}, "AttributeName.1": {"SentTimestamp"},
		"MessageAttributeName.1": {"All"}}, "application/json")
	var recv struct {
		ReceiveMessageResponse struct {
			ReceiveMessageResult struct {
				Messages []struct {
					Body              string
					Attributes        []struct{ Name, Value string }
					MessageAttributes []struct {
						Name  string
						Value struct{ StringValue, DataType string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &recv); err != nil || resp.StatusCode != 200 {
		t.Fatalf("ReceiveMessage, JSON: %d %s (%v)", resp.StatusCode, body, err)
	}
	ms := recv.ReceiveMessageResponse.ReceiveMessageResult.Messages
	if len(ms) != 1 || ms[0].Body != "hi" || len(ms[0].Attributes) != 1 || ms[0].Attributes[0].Name != "SentTimestamp" ||
		len(ms[0].MessageAttributes) != 1 || ms[0].MessageAttributes[0].Value.StringValue != "v" {
		t.Errorf("ReceiveMessage, JSON: %s", body)
	}
}

// jsonCall posts an AWS JSON 1.0 request and returns the raw answer.
func jsonCall(t *testing.T, srv *httptest.Server, action, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(body))
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestJSONLeavesOutEmptyLists: AWS leaves out an empty Failed (or
// Successful) list of a batch answer (recorded responses of
// test_send_message_batch_with_oversized_contents_with_updated_maximum_message_size:
// a fully successful batch has no Failed member).
func TestJSONLeavesOutEmptyLists(t *testing.T) {
	srv := newServer(t)
	q := srv.URL + "/000000000000/lists"
	if status, raw := jsonCall(t, srv, "CreateQueue", `{"QueueName":"lists"}`); status != 200 {
		t.Fatalf("CreateQueue: %d %s", status, raw)
	}
	status, raw := jsonCall(t, srv, "SendMessageBatch", `{"QueueUrl":"`+q+`","Entries":[{"Id":"a","MessageBody":"a"}]}`)
	if status != 200 || strings.Contains(raw, `"Failed"`) || !strings.Contains(raw, `"Successful"`) {
		t.Errorf("SendMessageBatch: %d %s", status, raw)
	}
	status, raw = jsonCall(t, srv, "SendMessageBatch", `{"QueueUrl":"`+q+`","Entries":[{"Id":"a","MessageBody":"a","DelaySeconds":901}]}`)
	if status != 200 || strings.Contains(raw, `"Successful"`) || !strings.Contains(raw, `"Failed"`) {
		t.Errorf("SendMessageBatch, all failed: %d %s", status, raw)
	}
	status, raw = jsonCall(t, srv, "ReceiveMessage", `{"QueueUrl":"`+q+`"}`)
	var recv struct {
		Messages []struct{ ReceiptHandle string }
	}
	if err := json.Unmarshal([]byte(raw), &recv); err != nil || status != 200 || len(recv.Messages) != 1 {
		t.Fatalf("ReceiveMessage: %d %s", status, raw)
	}
	h := recv.Messages[0].ReceiptHandle
	status, raw = jsonCall(t, srv, "ChangeMessageVisibilityBatch", `{"QueueUrl":"`+q+`","Entries":[{"Id":"a","ReceiptHandle":"`+h+`","VisibilityTimeout":60}]}`)
	if status != 200 || strings.Contains(raw, `"Failed"`) {
		t.Errorf("ChangeMessageVisibilityBatch: %d %s", status, raw)
	}
	status, raw = jsonCall(t, srv, "DeleteMessageBatch", `{"QueueUrl":"`+q+`","Entries":[{"Id":"a","ReceiptHandle":"`+h+`"}]}`)
	if status != 200 || strings.Contains(raw, `"Failed"`) {
		t.Errorf("DeleteMessageBatch: %d %s", status, raw)
	}
	// The SDK reads the answers without the lists.
	c := newClient(t, srv)
	out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q),
		Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("b"), MessageBody: aws.String("b")}}})
	if err != nil || len(out.Successful) != 1 || len(out.Failed) != 0 {
		t.Errorf("SDK SendMessageBatch: %v %+v", err, out)
	}
}

// TestAttributeNameCharacters: letters of any script are accepted and
// symbols refused on both protocols (validated
// test_send_message_with_invalid_string_attributes).
func TestAttributeNameCharacters(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv)
	ctx := context.Background()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("names")})
	if err != nil {
		t.Fatal(err)
	}
	attr := func(name string) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{name: {DataType: aws.String("String"), StringValue: aws.String("v")}}
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x"), MessageAttributes: attr("attr.1øßä")}); err != nil {
		t.Errorf("JSON attr.1øßä: %v", err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x"), MessageAttributes: attr("Invalid-§-attr")}); err == nil {
		t.Error("JSON Invalid-§-attr accepted")
	}
	for name, want := range map[string]int{"attr.1øßä": 200, "Invalid-§-attr": 400} {
		status, raw := queryCall(t, srv, "/000000000000/names", url.Values{"Action": {"SendMessage"}, "MessageBody": {"x"},
			"MessageAttribute.1.Name": {name}, "MessageAttribute.1.Value.DataType": {"String"}, "MessageAttribute.1.Value.StringValue": {"v"}}, nil)
		if status != want || want == 400 && !strings.Contains(raw, "<Code>InvalidParameterValue</Code>") {
			t.Errorf("Query %s: %d %s, want %d", name, status, raw, want)
		}
	}
}

// TestJSONAnswersLeaveHTMLCharactersAsTheyAre: AWS writes <, > and & of a
// message body as they are in a JSON answer; encoding/json would write
// \u003c, \u003e and \u0026 unless told not to. The answers' buffers are
// reused, so the same holds after an answer too large to be kept.
func TestJSONAnswersLeaveHTMLCharactersAsTheyAre(t *testing.T) {
	srv := newServer(t)
	q := srv.URL + "/000000000000/html"
	if status, raw := jsonCall(t, srv, "CreateQueue", `{"QueueName":"html"}`); status != 200 {
		t.Fatalf("CreateQueue: %d %s", status, raw)
	}
	for _, body := range []string{strings.Repeat("x", 200<<10), "a <b> & c"} {
		if status, raw := jsonCall(t, srv, "SendMessage", `{"QueueUrl":"`+q+`","MessageBody":"`+body+`"}`); status != 200 {
			t.Fatalf("SendMessage: %d %s", status, raw)
		}
		status, raw := jsonCall(t, srv, "ReceiveMessage", `{"QueueUrl":"`+q+`"}`)
		if status != 200 || !strings.Contains(raw, `"Body":"`+body+`"`) {
			t.Fatalf("ReceiveMessage of %.20q: %d %.200s", body, status, raw)
		}
		var recv struct {
			Messages []struct{ ReceiptHandle string }
		}
		if err := json.Unmarshal([]byte(raw), &recv); err != nil || len(recv.Messages) != 1 {
			t.Fatalf("ReceiveMessage: %v %.200s", err, raw)
		}
		if status, raw := jsonCall(t, srv, "DeleteMessage", `{"QueueUrl":"`+q+`","ReceiptHandle":"`+recv.Messages[0].ReceiptHandle+`"}`); status != 200 {
			t.Fatalf("DeleteMessage: %d %s", status, raw)
		}
	}
}
