package httpapi_test

// End-to-end: the handler over a real store (memstore) in an httptest
// server, driven by the real AWS SDK for Go v2 (AWS JSON 1.0), and by plain
// HTTP for the Query protocol.

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/memstore"
)

// newServer runs the handler over a fresh memstore.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	store := memstore.New()
	svc := service.New(service.Config{Store: store, Logger: logger})
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.Options{Logger: logger}))
	t.Cleanup(func() {
		svc.Shutdown()
		srv.Close()
		_ = store.Close()
	})
	return srv
}

// newClient returns an SDK client for srv that reads no configuration of
// the machine it runs on.
func newClient(t *testing.T, srv *httptest.Server) *sqs.Client {
	t.Helper()
	// Settings of the machine that would change or break the client.
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CA_BUNDLE", "AWS_USE_FIPS_ENDPOINT",
		"AWS_USE_DUALSTACK_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(v, "")
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithRetryMaxAttempts(1),
	)
	if err != nil {
		t.Fatal(err)
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
	})
}

func TestSDKEndToEnd(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// create queue, get url
	created, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String("sdk-e2e"),
		Attributes: map[string]string{"VisibilityTimeout": "30"},
		Tags:       map[string]string{"team": "core"},
	})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	qurl := aws.ToString(created.QueueUrl)
	if want := srv.URL + "/000000000000/sdk-e2e"; qurl != want {
		t.Errorf("QueueUrl = %q, want %q", qurl, want)
	}
	got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("sdk-e2e")})
	if err != nil {
		t.Fatalf("GetQueueUrl: %v", err)
	}
	if aws.ToString(got.QueueUrl) != qurl {
		t.Errorf("GetQueueUrl = %q, want %q", aws.ToString(got.QueueUrl), qurl)
	}

	// send with message attributes: the SDK checks the MD5 digests itself
	body := "hello <world> & \"friends\"\r\n\ttab é \U0001F600"
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(qurl),
		MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"str":  {DataType: aws.String("String"), StringValue: aws.String("value")},
			"num":  {DataType: aws.String("Number"), StringValue: aws.String("42")},
			"bin":  {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xff}},
			"cust": {DataType: aws.String("String.custom"), StringValue: aws.String("c")},
		},
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if aws.ToString(sent.MessageId) == "" || aws.ToString(sent.MD5OfMessageAttributes) == "" {
		t.Errorf("SendMessage output %+v", sent)
	}

	// receive
	recv, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(qurl),
		MaxNumberOfMessages:         10,
		WaitTimeSeconds:             1,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(recv.Messages) != 1 {
		t.Fatalf("received %d messages", len(recv.Messages))
	}
	m := recv.Messages[0]
	if aws.ToString(m.Body) != body || aws.ToString(m.MessageId) != aws.ToString(sent.MessageId) {
		t.Errorf("received %q (%s), sent %q (%s)", aws.ToString(m.Body), aws.ToString(m.MessageId), body, aws.ToString(sent.MessageId))
	}
	if v := m.MessageAttributes["bin"]; string(v.BinaryValue) != "\x00\x01\x02\xff" || aws.ToString(v.DataType) != "Binary" {
		t.Errorf("binary attribute %+v", v)
	}
	if v := m.MessageAttributes["num"]; aws.ToString(v.StringValue) != "42" {
		t.Errorf("number attribute %+v", v)
	}
	if m.Attributes["ApproximateReceiveCount"] != "1" || m.Attributes["SentTimestamp"] == "" {
		t.Errorf("system attributes %v", m.Attributes)
	}

	// delete
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(qurl), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}

	// batch send / receive / delete
	var entries []types.SendMessageBatchRequestEntry
	for _, id := range []string{"a", "b", "c"} {
		entries = append(entries, types.SendMessageBatchRequestEntry{
			Id:          aws.String(id),
			MessageBody: aws.String("batch " + id),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"id": {DataType: aws.String("String"), StringValue: aws.String(id)},
			},
		})
	}
	batch, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(qurl), Entries: entries})
	if err != nil {
		t.Fatalf("SendMessageBatch: %v", err)
	}
	if len(batch.Successful) != 3 || len(batch.Failed) != 0 {
		t.Fatalf("SendMessageBatch: %d ok, %d failed", len(batch.Successful), len(batch.Failed))
	}
	var handles []types.DeleteMessageBatchRequestEntry
	deadline := time.Now().Add(10 * time.Second)
	for len(handles) < 3 && time.Now().Before(deadline) {
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(qurl), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"id"}})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		for _, m := range r.Messages {
			id := aws.ToString(m.MessageAttributes["id"].StringValue)
			if aws.ToString(m.Body) != "batch "+id {
				t.Errorf("batch message %q has id attribute %q", aws.ToString(m.Body), id)
			}
			handles = append(handles, types.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if len(handles) != 3 {
		t.Fatalf("received %d of 3 batch messages", len(handles))
	}
	del, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(qurl), Entries: handles})
	if err != nil {
		t.Fatalf("DeleteMessageBatch: %v", err)
	}
	if len(del.Successful) != 3 || len(del.Failed) != 0 {
		t.Errorf("DeleteMessageBatch: %d ok, %d failed", len(del.Successful), len(del.Failed))
	}

	// attributes
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(qurl),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	if attrs.Attributes["VisibilityTimeout"] != "30" || attrs.Attributes["ApproximateNumberOfMessages"] != "0" ||
		attrs.Attributes["QueueArn"] != "arn:aws:sqs:us-east-1:000000000000:sdk-e2e" {
		t.Errorf("attributes %v", attrs.Attributes)
	}

	// a typed error
	_, err = c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("no-such-queue")})
	var dne *types.QueueDoesNotExist
	if !errors.As(err, &dne) {
		t.Fatalf("GetQueueUrl of a missing queue: %T %v", err, err)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("error code %q", apiErr.ErrorCode())
	}

	// list queues
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("other")}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("sdk-")})
	if err != nil {
		t.Fatalf("ListQueues: %v", err)
	}
	if !slices.Equal(list.QueueUrls, []string{qurl}) {
		t.Errorf("ListQueues = %v", list.QueueUrls)
	}
	all, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatalf("ListQueues: %v", err)
	}
	if len(all.QueueUrls) != 2 {
		t.Errorf("ListQueues (all) = %v", all.QueueUrls)
	}

	// tags survive the trip
	tags, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(qurl)})
	if err != nil || tags.Tags["team"] != "core" {
		t.Errorf("ListQueueTags = %v, %v", tags, err)
	}
}

// queryCall posts a Query request and parses the XML answer into out.
func queryCall(t *testing.T, srv *httptest.Server, path string, params url.Values, out any) (int, string) {
	t.Helper()
	params.Set("Version", "2012-11-05")
	resp, err := srv.Client().Post(srv.URL+path, "application/x-www-form-urlencoded", strings.NewReader(params.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/xml" {
		t.Errorf("Content-Type %q", ct)
	}
	if out != nil {
		if err := xml.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	return resp.StatusCode, string(b)
}

// TestQueryEndToEnd drives the Query protocol over HTTP, with requests sent
// to the queue URL path (no QueueUrl parameter), as older SDKs do.
func TestQueryEndToEnd(t *testing.T) {
	srv := newServer(t)

	var created struct {
		URL string `xml:"CreateQueueResult>QueueUrl"`
		ID  string `xml:"ResponseMetadata>RequestId"`
	}
	status, raw := queryCall(t, srv, "/", url.Values{"Action": {"CreateQueue"}, "QueueName": {"qp"},
		"Attribute.1.Name": {"DelaySeconds"}, "Attribute.1.Value": {"0"}}, &created)
	if status != 200 || created.URL != srv.URL+"/000000000000/qp" || created.ID == "" {
		t.Fatalf("CreateQueue: %d %s", status, raw)
	}

	body := "query\r\nbody <&>"
	var sent struct {
		MessageId string `xml:"SendMessageResult>MessageId"`
		MD5       string `xml:"SendMessageResult>MD5OfMessageBody"`
	}
	status, raw = queryCall(t, srv, "/000000000000/qp", url.Values{"Action": {"SendMessage"}, "MessageBody": {body},
		"MessageAttribute.1.Name": {"b"}, "MessageAttribute.1.Value.DataType": {"Binary"},
		"MessageAttribute.1.Value.BinaryValue": {"AAEC"}}, &sent)
	if status != 200 || sent.MessageId == "" || sent.MD5 == "" {
		t.Fatalf("SendMessage: %d %s", status, raw)
	}

	var recv struct {
		Messages []struct {
			MessageId     string
			ReceiptHandle string
			Body          string
			Attrs         []struct{ Name, Value string } `xml:"Attribute"`
			MsgAttrs      []struct {
				Name  string
				Value struct{ BinaryValue, DataType string }
			} `xml:"MessageAttribute"`
		} `xml:"ReceiveMessageResult>Message"`
	}
	status, raw = queryCall(t, srv, "/000000000000/qp", url.Values{"Action": {"ReceiveMessage"},
		"AttributeName.1": {"All"}, "MessageAttributeName.1": {"All"}, "WaitTimeSeconds": {"1"}}, &recv)
	if status != 200 || len(recv.Messages) != 1 {
		t.Fatalf("ReceiveMessage: %d %s", status, raw)
	}
	m := recv.Messages[0]
	if m.Body != body || m.MessageId != sent.MessageId || len(m.Attrs) == 0 ||
		len(m.MsgAttrs) != 1 || m.MsgAttrs[0].Value.BinaryValue != "AAEC" {
		t.Errorf("received %+v", m)
	}

	status, raw = queryCall(t, srv, "/000000000000/qp", url.Values{"Action": {"DeleteMessage"}, "ReceiptHandle": {m.ReceiptHandle}}, nil)
	if status != 200 || !strings.Contains(raw, "<DeleteMessageResponse") || strings.Contains(raw, "DeleteMessageResult") {
		t.Errorf("DeleteMessage: %d %s", status, raw)
	}

	var qerr struct {
		Code    string `xml:"Error>Code"`
		Message string `xml:"Error>Message"`
	}
	status, raw = queryCall(t, srv, "/", url.Values{"Action": {"GetQueueUrl"}, "QueueName": {"missing"}}, &qerr)
	if status != 400 || qerr.Code != "AWS.SimpleQueueService.NonExistentQueue" ||
		qerr.Message != "The specified queue does not exist for this wsdl version." {
		t.Errorf("GetQueueUrl of a missing queue: %d %s", status, raw)
	}
}

// TestJSONToQueuePath sends a JSON request without QueueUrl to the queue
// URL path.
func TestJSONToQueuePath(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv)
	ctx := context.Background()
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jp")}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/000000000000/jp", strings.NewReader(`{"MessageBody":"via path"}`))
	req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"MessageId"`) {
		t.Fatalf("SendMessage to the queue path: %d %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-amz-json-1.0" {
		t.Errorf("Content-Type %q", ct)
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srv.URL + "/000000000000/jp"), WaitTimeSeconds: 1})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "via path" {
		t.Fatalf("ReceiveMessage: %v %+v", err, out)
	}
}
