package httpapi

import (
	"crypto/tls"
	"encoding/json"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// bareHandler is a handler over a service without a store: good for every
// request that is answered before the service is reached.
func bareHandler(opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return NewHandler(service.New(service.Config{Logger: opts.Logger}), opts)
}

func serve(h http.Handler, r *http.Request) *http.Response {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func jsonRequest(target, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	if target != "" {
		r.Header.Set("X-Amz-Target", target)
	}
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	return r
}

func formRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return r
}

type jsonErr struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

func readJSONError(t *testing.T, resp *http.Response) jsonErr {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-amz-json-1.0" {
		t.Errorf("Content-Type = %q", ct)
	}
	b, _ := io.ReadAll(resp.Body)
	var e jsonErr
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	// Nothing but __type and message.
	var all map[string]any
	_ = json.Unmarshal(b, &all)
	if len(all) != 2 {
		t.Errorf("error body has members %v", all)
	}
	return e
}

type xmlErr struct {
	XMLName xml.Name `xml:"http://queue.amazonaws.com/doc/2012-11-05/ ErrorResponse"`
	Error   struct {
		Type    string
		Code    string
		Message string
		Detail  *struct{}
	}
	RequestId string
}

func readXMLError(t *testing.T, resp *http.Response) xmlErr {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/xml" {
		t.Errorf("Content-Type = %q", ct)
	}
	b, _ := io.ReadAll(resp.Body)
	var e xmlErr
	if err := xml.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	if e.Error.Detail == nil {
		t.Errorf("no <Detail/> in %s", b)
	}
	return e
}

func requestID(t *testing.T, resp *http.Response) string {
	t.Helper()
	id := resp.Header.Get("X-Amzn-Requestid")
	if !uuidRE.MatchString(id) {
		t.Errorf("x-amzn-RequestId %q is not a UUID", id)
	}
	return id
}

func TestJSONUnknownTarget(t *testing.T) {
	h := bareHandler(Options{})
	for _, target := range []string{"AmazonSQS.Nope", "AmazonSNS.Publish", "SendMessage", "AmazonSQS."} {
		resp := serve(h, jsonRequest(target, "{}"))
		requestID(t, resp)
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d", target, resp.StatusCode)
		}
		if q := resp.Header.Get("x-amzn-query-error"); q != "UnknownOperationException;Sender" {
			t.Errorf("%s: x-amzn-query-error %q", target, q)
		}
		e := readJSONError(t, resp)
		if e.Type != "com.amazonaws.sqs#UnknownOperationException" || e.Message != "An unknown operation was requested." {
			t.Errorf("%s: %+v", target, e)
		}
	}
}

func TestJSONMalformedBody(t *testing.T) {
	h := bareHandler(Options{})
	cases := map[string]string{
		`{"QueueUrl":`:                        "not valid JSON",
		`{"QueueUrl": 5}`:                     "Member QueueUrl must be a string, not a number",
		`{"QueueUrl":"u","DelaySeconds":"5"}`: "Member DelaySeconds must be an integer, not a string",
		`{"QueueUrl":"u","DelaySeconds":1.5}`: "Member DelaySeconds must be an integer",
		`[1,2]`:                               "must be a JSON object",
		`{"MessageAttributes":{"a":{"BinaryValue":"!!"}}}`: "not valid base64",
		`{"MessageAttributes":[]}`:                         "Member MessageAttributes must be an object, not an array",
		`{"QueueUrl":"u"} trailing`:                        "not valid JSON",
	}
	for body, want := range cases {
		resp := serve(h, jsonRequest("AmazonSQS.SendMessage", body))
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d", body, resp.StatusCode)
		}
		if q := resp.Header.Get("x-amzn-query-error"); q != "SerializationException;Sender" {
			t.Errorf("%s: x-amzn-query-error %q", body, q)
		}
		e := readJSONError(t, resp)
		if e.Type != "com.amazonaws.sqs#SerializationException" || !strings.Contains(e.Message, want) {
			t.Errorf("%s: got %+v, want message containing %q", body, e, want)
		}
	}
}

func TestJSONErrorEncoding(t *testing.T) {
	b := encodeJSONError(contract.ErrQueueDoesNotExist())
	if string(b) != `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}` {
		t.Errorf("got %s", b)
	}
	if h := queryErrorHeader(contract.ErrQueueDoesNotExist()); h != "AWS.SimpleQueueService.NonExistentQueue;Sender" {
		t.Errorf("header %q", h)
	}
	if h := queryErrorHeader(contract.ErrInternal()); h != "InternalError;Receiver" {
		t.Errorf("header %q", h)
	}
	if h := queryErrorHeader(contract.ErrServiceUnavailable()); h != "ServiceUnavailable;Receiver" {
		t.Errorf("header %q", h)
	}
	// Messages are JSON-escaped, not HTML-escaped.
	b = encodeJSONError(contract.ErrInvalidParameterValue(`a "<b>" & c`))
	if string(b) != `{"__type":"com.amazonaws.sqs#InvalidParameterValueException","message":"a \"<b>\" & c"}` {
		t.Errorf("got %s", b)
	}
}

func TestQueryUnknownAction(t *testing.T) {
	h := bareHandler(Options{})
	for body, want := range map[string]string{
		"Action=Nope&Version=2012-11-05": "The action Nope is not valid for this endpoint.",
		"Version=2012-11-05":             "The request must contain the parameter Action.",
	} {
		resp := serve(h, formRequest(body))
		id := requestID(t, resp)
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d", body, resp.StatusCode)
		}
		e := readXMLError(t, resp)
		if e.Error.Type != "Sender" || e.Error.Code != "InvalidAction" ||
			e.Error.Message != want || e.RequestId != id {
			t.Errorf("%s: %+v", body, e)
		}
	}
}

func TestQueryBadIntegerOverHTTP(t *testing.T) {
	h := bareHandler(Options{})
	r := httptest.NewRequest(http.MethodGet, "/?Action=ReceiveMessage&QueueUrl=u&WaitTimeSeconds=soon", nil)
	resp := serve(h, r)
	if resp.StatusCode != 400 {
		t.Errorf("status %d", resp.StatusCode)
	}
	e := readXMLError(t, resp)
	if e.Error.Code != "InvalidParameterValue" || e.Error.Message != "Value soon for parameter WaitTimeSeconds is invalid. Reason: Must be an integer." {
		t.Errorf("%+v", e)
	}
}

func TestQueryMalformedForm(t *testing.T) {
	h := bareHandler(Options{})
	resp := serve(h, formRequest("Action=ListQueues&QueueNamePrefix=%zz"))
	if resp.StatusCode != 400 {
		t.Errorf("status %d", resp.StatusCode)
	}
	if e := readXMLError(t, resp); e.Error.Code != "InvalidParameterValue" {
		t.Errorf("%+v", e)
	}
}

func TestBodyTooLarge(t *testing.T) {
	h := bareHandler(Options{MaxBodyBytes: 100})
	big := strings.Repeat("x", 200)
	resp := serve(h, jsonRequest("AmazonSQS.SendMessage", `{"MessageBody":"`+big+`"}`))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("json: status %d", resp.StatusCode)
	}
	readJSONError(t, resp)
	resp = serve(h, formRequest("Action=SendMessage&MessageBody="+big))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("query: status %d", resp.StatusCode)
	}
	readXMLError(t, resp)
}

func TestRequestIDsDiffer(t *testing.T) {
	h := bareHandler(Options{})
	a := requestID(t, serve(h, jsonRequest("AmazonSQS.Nope", "")))
	b := requestID(t, serve(h, jsonRequest("AmazonSQS.Nope", "")))
	if a == b {
		t.Errorf("request ids repeat: %s", a)
	}
}

func TestRequestBaseAndQueuePath(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "http://sqs.local:9324/000000000000/my-queue", nil)
	if got := requestBase(r, false); got != "http://sqs.local:9324" {
		t.Errorf("base %q", got)
	}
	if got := pathQueueURL(r, false); got != "http://sqs.local:9324/000000000000/my-queue" {
		t.Errorf("queue url %q", got)
	}
	r.Header.Set("X-Forwarded-Proto", "HTTPS, http")
	r.Header.Set("X-Forwarded-Host", "sqs.example.com, inner.local")
	if got := pathQueueURL(r, false); got != "http://sqs.local:9324/000000000000/my-queue" {
		t.Errorf("forwarding headers from an untrusted client changed the queue url: %q", got)
	}
	if got := pathQueueURL(r, true); got != "https://sqs.example.com/000000000000/my-queue" {
		t.Errorf("forwarded queue url %q", got)
	}
	r.Header.Set("X-Forwarded-Host", "evil.example/path")
	r.Header.Set("X-Forwarded-Proto", "gopher")
	if got := requestBase(r, true); got != "http://sqs.local:9324" {
		t.Errorf("malformed forwarding headers: base %q, want the request's own", got)
	}
	r = httptest.NewRequest(http.MethodPost, "https://h/", nil)
	r.TLS = &tls.ConnectionState{}
	if got := requestBase(r, false); got != "https://h" {
		t.Errorf("tls base %q", got)
	}
	for _, p := range []string{"/", "/000000000000", "/000000000000/", "/a/b/c", "//q"} {
		r := httptest.NewRequest(http.MethodPost, "http://h"+p, nil)
		if got := pathQueueURL(r, false); got != "" {
			t.Errorf("%s: queue url %q, want none", p, got)
		}
	}
}

func TestQueueURLFromPathFillsOnlyEmpty(t *testing.T) {
	op := operations["SendMessage"]
	in := op.newInput().(*contract.SendMessageInput)
	if op.setQueueURL == nil || op.queueURL(in) != "" {
		t.Fatal("SendMessage must have a QueueUrl accessor")
	}
	op.setQueueURL(in, "http://h/1/q")
	if in.QueueUrl != "http://h/1/q" {
		t.Errorf("QueueUrl %q", in.QueueUrl)
	}
	for _, name := range []string{"CreateQueue", "GetQueueUrl", "ListQueues", "StartMessageMoveTask", "ListMessageMoveTasks", "CancelMessageMoveTask"} {
		if operations[name].setQueueURL != nil {
			t.Errorf("%s has no QueueUrl but got an accessor", name)
		}
	}
	for _, name := range Actions() {
		op := operations[name]
		_, has := op.inputType.FieldByName("QueueUrl")
		if has != (op.setQueueURL != nil) {
			t.Errorf("%s: QueueUrl accessor mismatch", name)
		}
	}
}

func TestActionsComplete(t *testing.T) {
	want := []string{"AddPermission", "CancelMessageMoveTask", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch",
		"CreateQueue", "DeleteMessage", "DeleteMessageBatch", "DeleteQueue", "GetQueueAttributes", "GetQueueUrl",
		"ListDeadLetterSourceQueues", "ListMessageMoveTasks", "ListQueueTags", "ListQueues", "PurgeQueue",
		"ReceiveMessage", "RemovePermission", "SendMessage", "SendMessageBatch", "SetQueueAttributes",
		"StartMessageMoveTask", "TagQueue", "UntagQueue"}
	got := Actions()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v", got)
	}
}

func TestNewRequestID(t *testing.T) {
	for i := 0; i < 100; i++ {
		if id := newRequestID(); !uuidRE.MatchString(id) {
			t.Fatalf("%q", id)
		}
	}
}

// With nothing checking signatures, a client that signs for another region
// than the server's is warned of once per region.
func TestSigningRegionWarning(t *testing.T) {
	var logs strings.Builder
	h := bareHandler(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	signedFor := func(region string) *http.Request {
		r := jsonRequest("AmazonSQS.ListQueues", "{}")
		r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261201/"+region+"/sqs/aws4_request, SignedHeaders=host, Signature=00")
		return r
	}
	serve(h, signedFor("us-east-1"))
	if strings.Contains(logs.String(), "another region") {
		t.Fatalf("warned of the server's own region:\n%s", logs.String())
	}
	serve(h, signedFor("eu-west-1"))
	serve(h, signedFor("eu-west-1"))
	if n := strings.Count(logs.String(), "signing_region=eu-west-1"); n != 1 {
		t.Errorf("%d warnings of eu-west-1, want one:\n%s", n, logs.String())
	}
}
