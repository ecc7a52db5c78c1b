package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sluicehq/sluice/functions/lambdahttp/bridge"
)

// These tests run the real bootstrap under the real Lambda Runtime
// Interface Emulator, behind the bridge that plays each AWS front end, and
// talk to it with the real SDK client.

var built struct {
	once           sync.Once
	dir            string
	rie, bootstrap string
	err            error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binaries builds the emulator and the bootstrap, once per test binary.
func binaries(t *testing.T) (rie, bootstrap string) {
	t.Helper()
	built.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if built.dir, built.err = os.MkdirTemp("", "sluice-lambda-test-"); built.err != nil {
			return
		}
		if built.rie, built.err = bridge.BuildRIE(ctx, built.dir); built.err != nil {
			return
		}
		built.bootstrap, built.err = bridge.BuildBootstrap(ctx, built.dir)
	})
	if built.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(built.err)
		}
		t.Skipf("cannot build the emulator or the bootstrap: %v", built.err)
	}
	return built.rie, built.bootstrap
}

// logBuffer collects the function's output for failure messages.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs a fresh function (its own memory store) behind fe, with env
// added to its environment. It returns an HTTP client that reaches the
// bridge, over TLS, for the front end's public host, as a client of the
// real front end would (so that it signs that host), and the endpoint to
// give clients.
func start(t *testing.T, fe bridge.FrontEnd, env ...string) (*bridge.Bridge, *http.Client, string, *logBuffer) {
	t.Helper()
	rie, bootstrap := binaries(t)
	log := &logBuffer{}
	fn, err := bridge.StartFunction(context.Background(), bridge.FunctionOptions{
		RIE: rie, Bootstrap: bootstrap, Log: log, Timeout: 30 * time.Second,
		Env: append([]string{"SLUICE_STORE=mem://", "SLUICE_LOG_LEVEL=info"}, env...),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &bridge.Bridge{FrontEnd: fe, Function: fn}
	srv := httptest.NewTLSServer(b)
	t.Cleanup(func() {
		srv.Close()
		if err := fn.Close(); err != nil {
			t.Errorf("the emulator: %v", err)
		}
		if t.Failed() {
			t.Logf("function output:\n%s", log.String())
		}
	})
	return b, frontDoor(srv), fe.Endpoint(bridge.Public{Host: fe.DefaultHost(), Proto: "https"}), log
}

// frontDoor is a client that reaches srv whatever host it addresses.
func frontDoor(srv *httptest.Server) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	addr := srv.Listener.Addr().String()
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		// httptest's certificate names example.com.
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"},
	}}
}

// keys are the access keys the functions check signatures with.
const keys = "SLUICE_ACCESS_KEYS=AKIDEXAMPLE:secret"

func newClient(t *testing.T, endpoint string, hc *http.Client, secret string) *sqs.Client {
	t.Helper()
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CA_BUNDLE", "AWS_USE_FIPS_ENDPOINT",
		"AWS_USE_DUALSTACK_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(v, "")
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", secret, "")),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithRetryMaxAttempts(1),
		config.WithHTTPClient(hc),
	)
	if err != nil {
		t.Fatal(err)
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// TestFrontEnds runs the SDK's signed traffic through every front end:
// signatures verify (the event kept what they cover), queue URLs name the
// public endpoint, Standard and FIFO lifecycles, batches, an SQS error and
// a body past 256 KiB, a long poll.
func TestFrontEnds(t *testing.T) {
	for _, fe := range bridge.FrontEnds {
		t.Run(string(fe), func(t *testing.T) {
			b, hc, endpoint, log := start(t, fe, keys)
			c := newClient(t, endpoint, hc, "secret")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			public := "https://" + fe.DefaultHost() + "/000000000000/"

			// Standard: create, send with an attribute, receive, delete.
			q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(q.QueueUrl); got != public+"jobs" {
				t.Fatalf("QueueUrl %q, want %q", got, public+"jobs")
			}
			if u, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs")}); err != nil || aws.ToString(u.QueueUrl) != public+"jobs" {
				t.Fatalf("GetQueueUrl: %v, %v", u, err)
			}
			_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("héllo & <ok>"),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"kind": {DataType: aws.String("String"), StringValue: aws.String("greeting")}}})
			if err != nil {
				t.Fatal(err) // the SDK checked the MD5s
			}
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Messages) != 1 || aws.ToString(r.Messages[0].Body) != "héllo & <ok>" ||
				aws.ToString(r.Messages[0].MessageAttributes["kind"].StringValue) != "greeting" {
				t.Fatalf("received %+v", r.Messages)
			}
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: r.Messages[0].ReceiptHandle}); err != nil {
				t.Fatal(err)
			}

			// FIFO: a group comes back in order; batches both ways.
			fq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo"),
				Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToString(fq.QueueUrl); got != public+"jobs.fifo" {
				t.Fatalf("QueueUrl %q", got)
			}
			var entries []types.SendMessageBatchRequestEntry
			for i := range 3 {
				entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", i)),
					MessageBody: aws.String(fmt.Sprint("m", i)), MessageGroupId: aws.String("g")})
			}
			sb, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: fq.QueueUrl, Entries: entries})
			if err != nil || len(sb.Successful) != 3 || len(sb.Failed) != 0 {
				t.Fatalf("SendMessageBatch: %+v, %v", sb, err)
			}
			fr, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: fq.QueueUrl, MaxNumberOfMessages: 10})
			if err != nil {
				t.Fatal(err)
			}
			var del []types.DeleteMessageBatchRequestEntry
			for i, m := range fr.Messages {
				if aws.ToString(m.Body) != fmt.Sprint("m", i) {
					t.Errorf("FIFO message %d is %q", i, aws.ToString(m.Body))
				}
				del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("d", i)), ReceiptHandle: m.ReceiptHandle})
			}
			if len(fr.Messages) != 3 {
				t.Fatalf("received %d FIFO messages, want 3", len(fr.Messages))
			}
			db, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: fq.QueueUrl, Entries: del})
			if err != nil || len(db.Successful) != 3 {
				t.Fatalf("DeleteMessageBatch: %+v, %v", db, err)
			}

			// An SQS error comes back through the event as SQS words it.
			_, err = c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
			var missing *types.QueueDoesNotExist
			var re *smithyhttp.ResponseError
			if !errors.As(err, &missing) || !errors.As(err, &re) || re.HTTPStatusCode() != 400 {
				t.Fatalf("GetQueueUrl of a missing queue: %v", err)
			}
			if !strings.Contains(err.Error(), "The specified queue does not exist") {
				t.Errorf("error message: %v", err)
			}

			// A wrong secret is refused, through the event as SQS words it.
			_, err = newClient(t, endpoint, hc, "wrong").GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("jobs")})
			if !errors.As(err, &re) || re.HTTPStatusCode() != 403 || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
				t.Fatalf("a wrong secret: %v", err)
			}

			// A body past 256 KiB, both ways.
			before := b.Base64Events.Load()
			big := strings.Repeat("0123456789abcdef", 300<<10/16)
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(big)}); err != nil {
				t.Fatal(err)
			}
			if fe != bridge.REST && b.Base64Events.Load() == before {
				t.Errorf("the %s front end sent the big body as text, not base64", fe)
			}
			r, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Messages) != 1 || aws.ToString(r.Messages[0].Body) != big {
				t.Fatalf("the big message did not come back whole (%d messages)", len(r.Messages))
			}

			// A long poll on an empty queue holds the invocation, then
			// answers empty.
			began := time.Now()
			r, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: fq.QueueUrl, WaitTimeSeconds: 1})
			if err != nil || len(r.Messages) != 0 || time.Since(began) < 900*time.Millisecond {
				t.Fatalf("long poll: %v messages, %v, after %s", r, err, time.Since(began))
			}

			// The app was built once, at init, for all these invocations.
			if n := strings.Count(log.String(), `"msg":"ready"`); n != 1 {
				t.Errorf("the function started %d times, want once", n)
			}
		})
	}
}

// TestQueryProtocol sends the Query protocol (form POSTs and GETs with the
// parameters in the URL, unsigned: the function checks no signatures)
// through the front ends whose query strings differ: REST decodes them,
// ALB passes them on encoded.
func TestQueryProtocol(t *testing.T) {
	for _, fe := range []bridge.FrontEnd{bridge.FunctionURL, bridge.REST, bridge.ALB, bridge.ALBMulti} {
		t.Run(string(fe), func(t *testing.T) {
			_, hc, endpoint, _ := start(t, fe, "SLUICE_AUTH=none")
			do := func(method, path string, form url.Values) string {
				t.Helper()
				var req *http.Request
				if method == http.MethodPost {
					req, _ = http.NewRequest(method, endpoint+path, strings.NewReader(form.Encode()))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				} else {
					req, _ = http.NewRequest(method, endpoint+path+"?"+form.Encode(), nil)
				}
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 {
					t.Fatalf("%s %s: %s\n%s", method, path, resp.Status, body)
				}
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/xml") {
					t.Errorf("Content-Type %q", ct)
				}
				return string(body)
			}
			v := func(kv ...string) url.Values {
				out := url.Values{"Version": {"2012-11-05"}}
				for i := 0; i < len(kv); i += 2 {
					out.Set(kv[i], kv[i+1])
				}
				return out
			}
			queueURL := "https://" + fe.DefaultHost() + "/000000000000/q"
			if body := do(http.MethodPost, "/", v("Action", "CreateQueue", "QueueName", "q")); !strings.Contains(body, "<QueueUrl>"+queueURL+"</QueueUrl>") {
				t.Fatalf("CreateQueue: %s", body)
			}
			// In the URL: characters that must arrive decoded once.
			msg := "a b&c=d%e/f+g"
			if fe == bridge.REST {
				// Behind the stage the queue path is /prod/000000000000/q,
				// which names no queue: name it in the parameters.
				do(http.MethodGet, "/", v("Action", "SendMessage", "QueueUrl", queueURL, "MessageBody", msg))
			} else {
				do(http.MethodGet, "/000000000000/q", v("Action", "SendMessage", "MessageBody", msg))
			}
			do(http.MethodPost, "/", v("Action", "SendMessage", "QueueUrl", queueURL, "MessageBody", "second"))
			body := do(http.MethodGet, "/", v("Action", "ReceiveMessage", "QueueUrl", queueURL, "MaxNumberOfMessages", "10"))
			for _, want := range []string{"<Body>a b&amp;c=d%e/f+g</Body>", "<Body>second</Body>"} {
				if !strings.Contains(body, want) {
					t.Errorf("ReceiveMessage lacks %s: %s", want, body)
				}
			}
		})
	}
}

// TestOtherEvents: a scheduled event runs the housekeeping and answers
// {}; an event of no front end is a function error.
func TestOtherEvents(t *testing.T) {
	b, _, _, _ := start(t, bridge.FunctionURL, "SLUICE_AUTH=none")
	fn := b.Function.(*bridge.Function)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := fn.Invoke(ctx, []byte(`{"version":"0","id":"e1","detail-type":"Scheduled Event","source":"aws.events",`+
		`"account":"123456789012","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail":{}}`))
	if err != nil || string(out) != "{}" {
		t.Errorf("scheduled event: %s, %v", out, err)
	}
	out, err = fn.Invoke(ctx, []byte(`{"Records":[{"eventSource":"aws:sqs"}]}`))
	if err != nil || !strings.Contains(string(out), `"errorType"`) || !strings.Contains(string(out), "not an HTTP event") {
		t.Errorf("an SQS event: %s, %v; want a function error", out, err)
	}
	if _, err := b.FrontEnd.Response(out); !errors.Is(err, bridge.ErrFunction) {
		t.Errorf("the front end takes a function error for an answer: %v", err)
	}
}
