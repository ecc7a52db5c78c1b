package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/memstore"
)

// newServerWith runs the handler with opts over a fresh memstore.
func newServerWith(t *testing.T, opts httpapi.Options) *httptest.Server {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	store := memstore.New()
	svc := service.New(service.Config{Store: store, Logger: logger})
	opts.Logger = logger
	srv := httptest.NewServer(httpapi.NewHandler(svc, opts))
	t.Cleanup(func() {
		svc.Shutdown()
		srv.Close()
		_ = store.Close()
	})
	return srv
}

// slowRequest is a request whose body is sent but for its last byte.
type slowRequest struct {
	conn net.Conn
	br   *bufio.Reader
	last string
}

// startSlow writes the head and all but the last byte of a JSON SendMessage
// of a body of n bytes in total.
func startSlow(t *testing.T, srv *httptest.Server, queueURL string, n int) *slowRequest {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := `{"QueueUrl":"` + queueURL + `","MessageBody":"`
	body := head + strings.Repeat("x", n-len(head)-2) + `"}`
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nX-Amz-Target: AmazonSQS.SendMessage\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: %d\r\n\r\n",
		srv.Listener.Addr(), len(body))
	if _, err := io.WriteString(c, body[:len(body)-1]); err != nil {
		t.Fatal(err)
	}
	return &slowRequest{conn: c, br: bufio.NewReader(c), last: body[len(body)-1:]}
}

// response reads the answer to the request.
func (s *slowRequest) response(t *testing.T) (int, string) {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	code, _, _ := strings.Cut(resp.Header.Get("x-amzn-query-error"), ";")
	return resp.StatusCode, code
}

// TestBodyMemoryBudget: 32 clients each hold a body of 100 KiB but for its
// last byte against a budget of 1 MiB. Exactly ten fit; the other 22 are
// throttled at once, before their bodies are read, and the ten complete
// once their last byte arrives.
func TestBodyMemoryBudget(t *testing.T) {
	const (
		clients = 32
		size    = 100 << 10
		budget  = 1 << 20
		fit     = budget / size
	)
	srv := newServerWith(t, httpapi.Options{BodyMemory: budget})
	c := newClient(t, srv)
	qurl := createQueue(t, c, "budget")

	reqs := make([]*slowRequest, clients)
	for i := range reqs {
		reqs[i] = startSlow(t, srv, qurl, size)
	}
	// The throttled answer without waiting for their bodies; the admitted
	// do not answer before their last byte. Read the throttled ones first:
	// which requests are admitted is the server's order of arrival, so
	// collect every answer concurrently.
	type answer struct {
		i      int
		status int
		code   string
	}
	answers := make(chan answer, clients)
	for i, r := range reqs {
		go func() {
			st, code := r.response(t)
			answers <- answer{i, st, code}
		}()
	}
	throttled := map[int]bool{}
	for len(throttled) < clients-fit {
		a := <-answers
		if a.status != http.StatusBadRequest || a.code != "RequestThrottled" {
			t.Fatalf("request %d answered %d %s before its body was complete, want 400 RequestThrottled", a.i, a.status, a.code)
		}
		throttled[a.i] = true
	}
	for i, r := range reqs {
		if !throttled[i] {
			if _, err := io.WriteString(r.conn, r.last); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range fit {
		a := <-answers
		if throttled[a.i] || a.status != http.StatusOK {
			t.Errorf("admitted request %d answered %d %s, want 200", a.i, a.status, a.code)
		}
	}
	// The budget is back: a new body of the whole budget fits.
	r := startSlow(t, srv, qurl, budget)
	_, _ = io.WriteString(r.conn, r.last)
	if st, code := r.response(t); st != 200 {
		t.Errorf("a body of the whole budget after the others: %d %s", st, code)
	}
}

// Bodies take the budget as they arrive, not as they declare: connections
// that declare the whole budget between them and send nothing leave room
// for everyone else's requests (reserved up front, they would have had
// every request throttled for the body timeout).
func TestDeclaredBodiesTakeTheBudgetAsTheyArrive(t *testing.T) {
	const budget = 4 << 20
	srv := newServerWith(t, httpapi.Options{BodyMemory: budget})
	c := newClient(t, srv)
	createQueue(t, c, "declared")
	for range 8 {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AmazonSQS.ListQueues\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: %d\r\n\r\n", budget/2)
	}
	time.Sleep(200 * time.Millisecond) // let the server start reading them
	if _, err := c.ListQueues(context.Background(), &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("a small request beside idle connections that declared %d bytes between them: %v", 8*budget/2, err)
	}
}

// TestBodyMemoryBudgetChunked: a body of unknown length takes the budget as
// it arrives and is throttled when it runs out.
func TestBodyMemoryBudgetChunked(t *testing.T) {
	srv := newServerWith(t, httpapi.Options{BodyMemory: 256 << 10})
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", pr)
	req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	go func() {
		_, _ = io.WriteString(pw, `{"MessageBody":"`)
		chunk := strings.Repeat("x", 32<<10)
		for range 64 { // 2 MiB, unless the server stops reading
			if _, err := io.WriteString(pw, chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(pw, `"}`)
		pw.Close()
	}()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pr.Close()
	if code, _, _ := strings.Cut(resp.Header.Get("x-amzn-query-error"), ";"); resp.StatusCode != 400 || code != "RequestThrottled" {
		t.Errorf("chunked body past the budget: %d %s, want 400 RequestThrottled", resp.StatusCode, code)
	}
}

// TestThrottledIsSQSShaped: the throttling answer is RequestThrottled on
// both protocols, which the SDKs retry.
func TestThrottledIsSQSShaped(t *testing.T) {
	srv := newServerWith(t, httpapi.Options{BodyMemory: 10})
	body := `{"QueueName":"throttled-json"}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(body))
	req.Header.Set("X-Amz-Target", "AmazonSQS.CreateQueue")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var je struct {
		Type string `json:"__type"`
	}
	_ = json.Unmarshal(b, &je)
	if resp.StatusCode != 400 || je.Type != "com.amazonaws.sqs#RequestThrottled" || resp.Header.Get("x-amzn-query-error") != "RequestThrottled;Sender" {
		t.Errorf("json: %d %s %q", resp.StatusCode, resp.Header.Get("x-amzn-query-error"), b)
	}
	st, code, _ := rawQueryCall(t, srv, "Action=CreateQueue&QueueName=throttled-query")
	if st != 400 || code != "RequestThrottled" {
		t.Errorf("query: %d %s", st, code)
	}
}

// TestBodyCapsFollowTheProtocols: the largest legal SendMessageBatch (1 MiB
// of payload, every byte a character JSON encoders may escape six-fold,
// Query percent-encodes three-fold, binary values base64 then
// percent-encoded) passes; one byte past each protocol's cap is refused
// before it is read.
func TestBodyCapsFollowTheProtocols(t *testing.T) {
	srv := newServerWith(t, httpapi.Options{BodyMemory: 64 << 20})
	c := newClient(t, srv)
	qurl := createQueue(t, c, "caps")

	// JSON: ten bodies of '<', written as \u003c as encoding/json does.
	per := contract.MaxMessageSizeLimit / 10
	type entry struct {
		Id, MessageBody string
	}
	var entries []entry
	for i := range 10 {
		entries = append(entries, entry{fmt.Sprint("e", i), strings.Repeat("<", per)})
	}
	jb, _ := json.Marshal(map[string]any{"QueueUrl": qurl, "Entries": entries})
	if len(jb) < 6*contract.MaxMessageSizeLimit-1000 {
		t.Fatalf("the JSON batch is %d bytes; the test means to send the worst case", len(jb))
	}
	st, code, msg := rawJSONCall(t, srv, "SendMessageBatch", string(jb))
	if st != 200 {
		t.Errorf("worst-case legal JSON batch (%d bytes): %d %s %s", len(jb), st, code, msg)
	}

	// Query: one binary attribute of 1 MiB less the body, base64 of which
	// is all '+' and '/', percent-encoded.
	bin := strings.Repeat("+/+/", (contract.MaxMessageSizeLimit-1-len("b")-len("Binary"))/3)
	q := "Action=SendMessage&QueueUrl=" + url.QueryEscape(qurl) + "&MessageBody=x&MessageAttribute.1.Name=b" +
		"&MessageAttribute.1.Value.DataType=Binary&MessageAttribute.1.Value.BinaryValue=" + url.QueryEscape(bin)
	if st, code, msg := rawQueryCall(t, srv, q); st != 200 {
		t.Errorf("worst-case legal Query send (%d bytes): %d %s %s", len(q), st, code, msg)
	}

	for _, p := range []struct {
		name, target, ct string
		cap              int
	}{
		{"json", "AmazonSQS.SendMessage", "application/x-amz-json-1.0", contract.MaxJSONRequestBytes},
		{"query", "", "application/x-www-form-urlencoded", contract.MaxQueryRequestBytes},
	} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		target := ""
		if p.target != "" {
			target = "X-Amz-Target: " + p.target + "\r\n"
		}
		// Only the head is sent: the answer must not wait for the body.
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\n%sContent-Type: %s\r\nContent-Length: %d\r\n\r\n", target, p.ct, p.cap+1)
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: a body of cap+1 = %d bytes: status %d, want 413", p.name, p.cap+1, resp.StatusCode)
		}
		resp.Body.Close()
		c.Close()
	}
}

// TestBodyTimeout: a body that stops arriving is answered, as SQS shapes
// errors, once the body timeout passes.
func TestBodyTimeout(t *testing.T) {
	srv := newServerWith(t, httpapi.Options{BodyTimeout: 200 * time.Millisecond})
	r := startSlow(t, srv, "http://x/000000000000/q", 1000)
	st, code := r.response(t)
	if st != 400 || code != "RequestTimeout" {
		t.Errorf("a stalled body: %d %s, want 400 RequestTimeout", st, code)
	}
}

func createQueue(t *testing.T, c *sqs.Client, name string) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}
