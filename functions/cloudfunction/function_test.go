package cloudfunction_test

// The built function (buildpack_test.go) under its Framework's own server,
// driven by the real AWS SDK for Go v2 and by plain Query requests.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice/internal/testproc"
)

// The access key the functions under test accept (SLUICE_ACCESS_KEYS) and
// the clients sign with.
const (
	testKeyID  = "AKIDEXAMPLE"
	testSecret = "secret"
)

// newClient is an SDK client for endpoint that reads nothing of the
// machine's AWS set-up and does not retry (an error shows as it came).
func newClient(t *testing.T, endpoint string) *sqs.Client {
	t.Helper()
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CA_BUNDLE", "AWS_USE_FIPS_ENDPOINT",
		"AWS_USE_DUALSTACK_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(v, "")
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(testKeyID, testSecret, "")),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithRetryMaxAttempts(1),
	)
	if err != nil {
		t.Fatal(err)
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

func TestFunctionMemory(t *testing.T) {
	f := startFunction(t, "SLUICE_STORE=mem://")
	exercise(t, f)
	if got := f.logs.waitLines("sluice started", "store_kind=memory"); len(got) != 1 {
		t.Errorf("want one start line, the app built once per instance; got %q", got)
	}
}

// TestFunctionFirestore runs the same against the Firestore emulator when
// FIRESTORE_EMULATOR_HOST names one (infra/scripts/firestore.sh start).
func TestFunctionFirestore(t *testing.T) {
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		t.Skip("FIRESTORE_EMULATOR_HOST is not set; eval \"$(infra/scripts/firestore.sh start)\" to run this")
	}
	project := "sluice-gcf-" + strings.ToLower(strings.ReplaceAll(time.Now().Format("150405.000"), ".", ""))
	f := startFunction(t, "SLUICE_STORE=firestore://"+project)
	exercise(t, f)
}

// exercise drives f through what a client of SQS does.
func exercise(t *testing.T, f *function) {
	c := newClient(t, f.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("standard", func(t *testing.T) {
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
		if err != nil {
			t.Fatal(err)
		}
		if want := f.URL + "/000000000000/jobs"; aws.ToString(q.QueueUrl) != want {
			t.Fatalf("QueueUrl %q, want %q", aws.ToString(q.QueueUrl), want)
		}
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
			t.Fatal(err)
		}
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) != 1 || aws.ToString(r.Messages[0].Body) != "hello" {
			t.Fatalf("received %+v", r.Messages)
		}
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: r.Messages[0].ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
		attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if n := attrs.Attributes["ApproximateNumberOfMessages"] + "/" + attrs.Attributes["ApproximateNumberOfMessagesNotVisible"]; n != "0/0" {
			t.Errorf("after the delete: visible/in flight %s, want 0/0", n)
		}
	})

	t.Run("fifo", func(t *testing.T) {
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders.fifo"),
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{"first", "second", "first"} { // the second "first" is a duplicate
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body),
				MessageGroupId: aws.String("g")}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil {
			t.Fatal(err)
		}
		var bodies []string
		for _, m := range r.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
		if strings.Join(bodies, ",") != "first,second" {
			t.Fatalf("received %q, want first,second (in order, the duplicate dropped)", bodies)
		}
		for _, m := range r.Messages {
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("batch", func(t *testing.T) {
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("batch")})
		if err != nil {
			t.Fatal(err)
		}
		sent, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("a"), MessageBody: aws.String("1")},
			{Id: aws.String("b"), MessageBody: aws.String("2")},
			{Id: aws.String("c"), MessageBody: aws.String("3")},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(sent.Successful) != 3 || len(sent.Failed) != 0 {
			t.Fatalf("batch send: %d sent, %d failed", len(sent.Successful), len(sent.Failed))
		}
		var entries []types.DeleteMessageBatchRequestEntry
		for tries := 0; len(entries) < 3 && tries < 10; tries++ {
			r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range r.Messages {
				entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String("m" + string(rune('0'+len(entries)))), ReceiptHandle: m.ReceiptHandle})
			}
		}
		if len(entries) != 3 {
			t.Fatalf("received %d of 3", len(entries))
		}
		del, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries})
		if err != nil {
			t.Fatal(err)
		}
		if len(del.Successful) != 3 || len(del.Failed) != 0 {
			t.Fatalf("batch delete: %d deleted, %d failed", len(del.Successful), len(del.Failed))
		}
	})

	t.Run("no such queue", func(t *testing.T) {
		_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
		var dne *types.QueueDoesNotExist
		if !errors.As(err, &dne) {
			t.Fatalf("err %v, want QueueDoesNotExist", err)
		}
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AWS.SimpleQueueService.NonExistentQueue" ||
			apiErr.ErrorMessage() != "The specified queue does not exist." {
			t.Errorf("err %v, want code AWS.SimpleQueueService.NonExistentQueue and SQS's message", err)
		}
	})

	t.Run("long poll woken by a send", func(t *testing.T) {
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("poll")})
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			out *sqs.ReceiveMessageOutput
			err error
			at  time.Duration
		}
		start := time.Now()
		got := make(chan result, 1)
		go func() {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 20})
			got <- result{out, err, time.Since(start)}
		}()
		time.Sleep(500 * time.Millisecond)
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("wake")}); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.out.Messages) != 1 || aws.ToString(r.out.Messages[0].Body) != "wake" {
			t.Fatalf("long poll returned %+v", r.out.Messages)
		}
		if r.at < 400*time.Millisecond || r.at > 5*time.Second {
			t.Errorf("long poll returned after %s; want soon after the send at 0.5s", r.at)
		}
	})

	t.Run("signatures are checked", func(t *testing.T) {
		bad := newClient(t, f.URL)
		_, err := bad.ListQueues(ctx, &sqs.ListQueuesInput{}, func(o *sqs.Options) {
			o.Credentials = credentials.NewStaticCredentialsProvider(testKeyID, "not-the-secret", "")
		})
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "SignatureDoesNotMatch" {
			t.Errorf("a wrong secret: err %v, want SignatureDoesNotMatch", err)
		}
	})

	t.Run("query protocol", func(t *testing.T) {
		status, b := query(t, f.URL, "", nil, url.Values{"Action": {"GetQueueUrl"}, "QueueName": {"jobs"}})
		var doc struct {
			Result struct{ QueueUrl string } `xml:"GetQueueUrlResult"`
		}
		if err := xml.Unmarshal(b, &doc); status != 200 || err != nil {
			t.Fatalf("status %d, %v: %s", status, err, b)
		}
		if want := f.URL + "/000000000000/jobs"; doc.Result.QueueUrl != want {
			t.Errorf("QueueUrl %q, want %q", doc.Result.QueueUrl, want)
		}
	})

	// Behind Cloud Run's front end the request reaches the instance over
	// plain HTTP with the function's public host in Host and the client's
	// scheme in X-Forwarded-Proto.
	t.Run("queue urls behind the front end", func(t *testing.T) {
		const host = "sluice-abc123-uc.a.run.app"
		status, b := query(t, f.URL, host, http.Header{"X-Forwarded-Proto": {"https"}},
			url.Values{"Action": {"CreateQueue"}, "QueueName": {"public"}})
		var doc struct {
			Result struct{ QueueUrl string } `xml:"CreateQueueResult"`
		}
		if err := xml.Unmarshal(b, &doc); status != 200 || err != nil {
			t.Fatalf("status %d, %v: %s", status, err, b)
		}
		if want := "https://" + host + "/000000000000/public"; doc.Result.QueueUrl != want {
			t.Errorf("QueueUrl %q, want %q", doc.Result.QueueUrl, want)
		}
	})
}

// query posts a Query-protocol form to endpoint, with Host set to host
// when not empty, signed with the test's access key (testKey) as an SDK
// signs it.
func query(t *testing.T, endpoint, host string, h http.Header, form url.Values) (int, []byte) {
	t.Helper()
	body := form.Encode()
	req, err := http.NewRequest(http.MethodPost, endpoint+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if host != "" {
		req.Host = host
	}
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "sqs", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestFunctionStoreDown: a store that cannot be opened leaves the instance
// up, answering InternalError (which SDKs retry) and saying why in its
// logs, instead of crashing at start.
func TestFunctionStoreDown(t *testing.T) {
	f := startFunction(t, "SLUICE_STORE=postgres://sluice:pw@127.0.0.1:1/sluice?connect_timeout=2")
	c := newClient(t, f.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 2; i++ {
		_, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InternalError" {
			t.Fatalf("request %d: err %v, want InternalError", i, err)
		}
	}
	select {
	case <-f.done:
		t.Fatalf("the function exited: %v", f.err)
	default:
	}
	lines := f.logs.waitLines("sluice cannot start")
	if len(lines) != 1 {
		t.Fatalf("want one log line saying why (the second request within RetryAfter does not try again), got %q", lines)
	}
	if strings.Contains(lines[0], ":pw@") {
		t.Errorf("the log line shows the password: %s", lines[0])
	}
}

// TestFunctionNoStore: without SLUICE_STORE the function says so.
func TestFunctionNoStore(t *testing.T) {
	f := startFunction(t, "SLUICE_STORE=")
	_, err := newClient(t, f.URL).ListQueues(context.Background(), &sqs.ListQueuesInput{})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InternalError" {
		t.Fatalf("err %v, want InternalError", err)
	}
	if len(f.logs.waitLines("sluice cannot start", "SLUICE_STORE is not set")) != 1 {
		t.Errorf("no log line naming SLUICE_STORE:\n%s", f.logs.String())
	}
}

// TestFunctionNoKeys: a function reachable from anywhere does not serve
// without access keys unless SLUICE_AUTH=none says so; with it, unsigned
// requests are served.
func TestFunctionNoKeys(t *testing.T) {
	f := startFunction(t, "SLUICE_STORE=mem://", "SLUICE_ACCESS_KEYS=")
	_, err := newClient(t, f.URL).ListQueues(context.Background(), &sqs.ListQueuesInput{})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InternalError" {
		t.Fatalf("err %v, want InternalError", err)
	}
	if len(f.logs.waitLines("sluice cannot start", "no access keys")) != 1 {
		t.Errorf("no log line saying why:\n%s", f.logs.String())
	}

	open := startFunction(t, "SLUICE_STORE=mem://", "SLUICE_ACCESS_KEYS=", "SLUICE_AUTH=none")
	resp, err := http.PostForm(open.URL+"/", url.Values{"Action": {"ListQueues"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("unsigned ListQueues with SLUICE_AUTH=none: status %d", resp.StatusCode)
	}
}

// TestFunctionSIGTERM: the signal Cloud Run sends an instance it stops
// ends a waiting long poll at once with an empty answer, and the process
// exits cleanly.
func TestFunctionSIGTERM(t *testing.T) {
	f := startFunction(t, "SLUICE_STORE=mem://")
	c := newClient(t, f.URL)
	ctx := context.Background()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("idle")})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 20})
		if err != nil {
			got <- result{err: err}
			return
		}
		got <- result{n: len(out.Messages)}
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil || r.n != 0 {
			t.Fatalf("long poll: %d messages, err %v; want an empty answer", r.n, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll still waits 5 s after SIGTERM")
	}
	select {
	case <-f.done:
		if f.err != nil {
			t.Errorf("exit: %v", f.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the function still runs 5 s after SIGTERM")
	}
	t.Logf("long poll answered and process exited %s after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// TestFunctionEntryPoint: the Framework serves the function registered
// under FUNCTION_TARGET; another entry point is refused at start.
func TestFunctionEntryPoint(t *testing.T) {
	cmd := exec.Command(functionBinary(t))
	cmd.Env = append(os.Environ(), "PORT="+testproc.FreePort(t), "FUNCTION_TARGET=Other", "SLUICE_STORE=mem://")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `no matching function found with name: "Other"`) {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
}

// TestFunctionTrustForwardedOff: a function trusts the front end's
// forwarding headers unless SLUICE_TRUST_FORWARDED says otherwise.
func TestFunctionTrustForwardedOff(t *testing.T) {
	f := startFunction(t, "SLUICE_STORE=mem://", "SLUICE_TRUST_FORWARDED=false")
	const host = "sluice-abc123-uc.a.run.app"
	status, b := query(t, f.URL, host, http.Header{"X-Forwarded-Proto": {"https"}},
		url.Values{"Action": {"CreateQueue"}, "QueueName": {"plain"}})
	var doc struct {
		Result struct{ QueueUrl string } `xml:"CreateQueueResult"`
	}
	if err := xml.Unmarshal(b, &doc); status != 200 || err != nil {
		t.Fatalf("status %d, %v: %s", status, err, b)
	}
	if want := "http://" + host + "/000000000000/plain"; doc.Result.QueueUrl != want {
		t.Errorf("QueueUrl %q, want %q", doc.Result.QueueUrl, want)
	}
}

// TestFunctionMaintain: a scheduler runs maintenance passes through the
// function itself, with the bearer token; without it the path is refused.
func TestFunctionMaintain(t *testing.T) {
	f := startFunction(t, "SLUICE_STORE=mem://", "SLUICE_MAINTENANCE_TOKEN=tok-123")
	post := func(auth string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, f.URL+"/_sluice/maintain", nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := post(""); status != http.StatusForbidden {
		t.Errorf("without the token: %d %s, want 403", status, body)
	}
	if status, body := post("Bearer tok-123"); status != 200 || !strings.Contains(body, "took_ms") {
		t.Errorf("with the token: %d %s, want 200 with took_ms", status, body)
	}
}
