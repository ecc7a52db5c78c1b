package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluicehq/sluice/functions/app"
)

// serve runs a's Handler in a real HTTP server.
func serve(t *testing.T, a *app.App) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		a.Shutdown()
		srv.Close()
	})
	return srv
}

// sdkClient is an AWS SDK for Go v2 client of srv that reads nothing of the
// machine's AWS configuration.
func sdkClient(t *testing.T, srv *httptest.Server) *sqs.Client {
	t.Helper()
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
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(srv.URL) })
}

func get(t *testing.T, method, url string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestHealthReadinessAndFrontPage(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", Version: "v9.8.7"})
	srv := serve(t, a)

	for _, p := range []string{"/healthz", "/readyz"} {
		if code, h, body := get(t, "GET", srv.URL+p); code != 200 || body != "ok\n" || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s: %d %q %v", p, code, body, h)
		}
		if code, _, body := get(t, "HEAD", srv.URL+p); code != 200 || body != "" {
			t.Errorf("HEAD %s: %d %q", p, code, body)
		}
		if code, h, _ := get(t, "POST", srv.URL+p); code != 405 || h.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: %d %v", p, code, h)
		}
	}
	code, h, body := get(t, "GET", srv.URL+"/")
	if code != 200 || !strings.HasPrefix(body, "sluice v9.8.7 (") || !strings.Contains(body, "/metrics") ||
		!strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Errorf("GET /: %d %v %q", code, h, body)
	}
	if code, h, body := get(t, "HEAD", srv.URL+"/"); code != 200 || body != "" || h.Get("Content-Length") == "0" {
		t.Errorf("HEAD /: %d %v %q", code, h, body)
	}
	// A Query request by GET is still SQS, at / and at a queue URL.
	if code, _, body := get(t, "GET", srv.URL+"/?Action=ListQueues"); code != 200 || !strings.Contains(body, "<ListQueuesResponse") {
		t.Errorf("GET /?Action=ListQueues: %d %q", code, body)
	}
	if code, _, body := get(t, "GET", srv.URL+"/000000000000/nope?Action=GetQueueAttributes"); code != 400 || !strings.Contains(body, "NonExistentQueue") {
		t.Errorf("GET queue URL: %d %q", code, body)
	}
	// So is a POST to / without an action: it gets SQS's error, as before.
	if code, _, body := get(t, "POST", srv.URL+"/"); code != 400 || !strings.Contains(body, "InvalidAction") {
		t.Errorf("POST /: %d %q", code, body)
	}
	// And the SDK works beside them.
	c := sdkClient(t, srv)
	if _, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
		t.Fatal(err)
	}

	// Shutting down: readiness fails at once (so that a balancer stops
	// sending), liveness still answers.
	a.Shutdown()
	if code, _, body := get(t, "GET", srv.URL+"/readyz"); code != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("readyz after Shutdown: %d %q", code, body)
	}
	if code, _, _ := get(t, "GET", srv.URL+"/healthz"); code != 200 {
		t.Errorf("healthz after Shutdown: %d", code)
	}
}

// scrape reads h's /metrics.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the sample of the family with exactly these labels (a
// histogram's count), or -1.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func TestMetricsAfterRealRequests(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", MetricsDepthTTL: time.Nanosecond})
	srv := serve(t, a)
	c := sdkClient(t, srv)
	ctx := context.Background()

	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil {
		t.Fatal(err)
	}
	// A long poll that a send claims for (the in-memory store runs
	// hand-offs: stores.Traits.HandOffs), and two more sends that nobody
	// waits for.
	got := make(chan int, 1)
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 10})
		if err != nil {
			t.Error(err)
		}
		got <- len(out.Messages)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for value(scrape(t, srv.URL+"/metrics"), "sluice_long_polls_waiting", nil) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the long poll never waited")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 3 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("hi")}); err != nil {
			t.Fatal(err)
		}
	}
	if n := <-got; n != 1 {
		t.Fatalf("long poll got %d messages", n)
	}
	_, err = c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var qne *types.QueueDoesNotExist
	if !errors.As(err, &qne) {
		t.Fatalf("GetQueueUrl: %v", err)
	}

	fams := scrape(t, srv.URL+"/metrics")
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   float64 // exact, or at least with min
		min    bool
	}{
		{"sluice_requests_total", map[string]string{"action": "SendMessage", "error_code": ""}, 3, false},
		{"sluice_requests_total", map[string]string{"action": "CreateQueue", "error_code": ""}, 1, false},
		{"sluice_requests_total", map[string]string{"action": "GetQueueUrl", "error_code": "AWS.SimpleQueueService.NonExistentQueue"}, 1, false},
		{"sluice_request_duration_seconds", map[string]string{"action": "ReceiveMessage"}, 1, false},
		{"sluice_long_polls_total", map[string]string{"result": "messages"}, 1, false},
		{"sluice_long_poll_wait_seconds", nil, 1, false},
		{"sluice_long_poll_wakeups_total", map[string]string{"cause": "handoff"}, 1, false},
		{"sluice_long_poll_wakeups_total", map[string]string{"cause": "wakeup"}, 0, false},
		{"sluice_long_polls_waiting", nil, 0, false},
		{"sluice_messages_total", map[string]string{"event": "sent"}, 3, false},
		{"sluice_messages_total", map[string]string{"event": "received"}, 1, false},
		{"sluice_messages_total", map[string]string{"event": "deleted"}, 0, false},
		{"sluice_wake_events_published_total", nil, 2, false},
		{"sluice_wake_waiters_woken_total", nil, 0, false},
		{"sluice_store_operation_duration_seconds", map[string]string{"operation": "MessageSend"}, 3, false},
		{"sluice_store_operation_duration_seconds", map[string]string{"operation": "MessageClaim"}, 1, false},
		{"sluice_store_errors_total", map[string]string{"operation": "QueueGet"}, -1, false}, // not found is an answer
		{"sluice_queue_messages", map[string]string{"queue": "jobs", "state": "visible", "account_id": "000000000000", "region": "us-east-1"}, 2, false},
		{"sluice_queue_messages", map[string]string{"queue": "jobs", "state": "in_flight"}, 1, false},
		{"sluice_queue_messages", map[string]string{"queue": "jobs", "state": "delayed"}, 0, false},
		{"sluice_queue_depth_truncated", nil, 0, false},
		{"sluice_build_info", nil, 1, false},
	} {
		v := value(fams, w.name, w.labels)
		if (w.min && v < w.want) || (!w.min && v != w.want) {
			t.Errorf("%s%v = %v, want %s%v", w.name, w.labels, v, map[bool]string{true: ">= "}[w.min], w.want)
		}
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
		t.Error("no Go runtime or process series")
	}
}

func TestQueueDepthsAreBoundedAndCached(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", MetricsMaxQueues: 2, MetricsDepthTTL: time.Hour})
	srv := serve(t, a)
	c := sdkClient(t, srv)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(n)}); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, srv.URL+"/metrics")
	if n := len(fams["sluice_queue_messages"].GetMetric()); n != 2*3 {
		t.Errorf("%d queue depth series, want 6 (2 queues)", n)
	}
	if v := value(fams, "sluice_queue_depth_truncated", nil); v != 1 {
		t.Errorf("truncated = %v", v)
	}
	// Within the TTL the reading is reused: a send does not show.
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(srv.URL + "/000000000000/a"), MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	// (A scrape gathers collectors concurrently: the store series it shows
	// may predate its own depth reading, so compare two later scrapes.)
	reads := value(scrape(t, srv.URL+"/metrics"), "sluice_store_operation_duration_seconds", map[string]string{"operation": "QueueStats"})
	fams = scrape(t, srv.URL+"/metrics")
	if v := value(fams, "sluice_queue_messages", map[string]string{"queue": "a", "state": "visible"}); v != 0 {
		t.Errorf("cached depth of a = %v, want the old 0", v)
	}
	if again := value(fams, "sluice_store_operation_duration_seconds", map[string]string{"operation": "QueueStats"}); again != reads || reads != 2 {
		t.Errorf("a scrape within the TTL read the store: QueueStats %v → %v", reads, again)
	}
}

func TestMetricsElsewhere(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", MetricsElsewhere: true})
	srv := serve(t, a)
	if code, _, body := get(t, "GET", srv.URL+"/metrics"); code == 200 || strings.Contains(body, "sluice_") {
		t.Errorf("Handler serves /metrics: %d %q", code, body)
	}
	ops := httptest.NewServer(a.OpsHandler())
	defer ops.Close()
	if fams := scrape(t, ops.URL+"/metrics"); fams["sluice_build_info"] == nil {
		t.Error("OpsHandler: no sluice_build_info")
	}
	if code, _, _ := get(t, "GET", ops.URL+"/readyz"); code != 200 {
		t.Errorf("OpsHandler /readyz: %d", code)
	}
	if code, _, _ := get(t, "GET", ops.URL+"/"); code != 404 {
		t.Errorf("OpsHandler /: %d", code)
	}
}

// syncBuffer is a log sink the server's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log records whose msg is msg.
func (s *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

func TestRequestLogCarriesTheResponsesRequestID(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a := newApp(t, app.Config{Store: "mem://", Logger: logger, RequestLogLevel: slog.LevelInfo})
	srv := serve(t, a)
	c := sdkClient(t, srv)
	ctx := context.Background()

	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("logged")})
	if err != nil {
		t.Fatal(err)
	}
	okID, _ := awsmiddleware.GetRequestIDMetadata(q.ResultMetadata)
	_, err = c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(srv.URL + "/000000000000/nope")})
	var re interface{ ServiceRequestID() string }
	if !errors.As(err, &re) {
		t.Fatalf("PurgeQueue: %v", err)
	}
	failID := re.ServiceRequestID()

	byID := map[string]map[string]any{}
	for _, rec := range logs.lines(t, "request") {
		byID[rec["request_id"].(string)] = rec
	}
	if rec := byID[okID]; rec == nil || rec["action"] != "CreateQueue" || rec["queue"] != "logged" ||
		rec["status"] != float64(200) || rec["error_code"] != "" || rec["level"] != "INFO" || rec["duration"] == nil {
		t.Errorf("CreateQueue %s: %v", okID, rec)
	}
	if rec := byID[failID]; rec == nil || rec["action"] != "PurgeQueue" || rec["queue"] != "nope" ||
		rec["status"] != float64(400) || rec["error_code"] != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("PurgeQueue %s: %v", failID, rec)
	}

	// A store that fails: the service's error line names the request too.
	_ = a.Close()
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InternalError" || !errors.As(err, &re) {
		t.Fatalf("SendMessage on a closed store: %v", err)
	}
	found := false
	for _, rec := range logs.lines(t, "store failure") {
		found = found || rec["request_id"] == re.ServiceRequestID()
	}
	if !found {
		t.Errorf("no store failure line with request id %s:\n%s", re.ServiceRequestID(), logs.b.String())
	}
}

func TestRequestLogLevel(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a := newApp(t, app.Config{Store: "mem://", Logger: logger}) // default: debug, below the logger's info
	srv := serve(t, a)
	if _, err := sdkClient(t, srv).ListQueues(context.Background(), &sqs.ListQueuesInput{}); err != nil {
		t.Fatal(err)
	}
	if n := len(logs.lines(t, "request")); n != 0 {
		t.Errorf("%d request lines at the default level under an info logger", n)
	}
}

func TestNoCooldowns(t *testing.T) {
	ctx := context.Background()
	for _, off := range []bool{false, true} {
		a := newApp(t, app.Config{Store: "mem://", NoCooldowns: off})
		c := sdkClient(t, serve(t, a))
		q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("again")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl}); err != nil {
			t.Fatal(err)
		}
		_, err = c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl})
		var inProgress *types.PurgeQueueInProgress
		if off != (err == nil) || (!off && !errors.As(err, &inProgress)) {
			t.Errorf("NoCooldowns %v: second purge: %v", off, err)
		}
		if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}); err != nil {
			t.Fatal(err)
		}
		_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("again")})
		var recently *types.QueueDeletedRecently
		if off != (err == nil) || (!off && !errors.As(err, &recently)) {
			t.Errorf("NoCooldowns %v: re-create: %v", off, err)
		}
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "queues.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodQueues = `{
  "queues": [
    {"name": "orders", "attributes": {"VisibilityTimeout": 45, "DelaySeconds": "2"},
     "deadLetterQueue": {"name": "orders-dlq", "maxReceiveCount": 3}, "tags": {"team": "shop"}},
    {"name": "orders-dlq", "attributes": {"MessageRetentionPeriod": 1209600}},
    {"name": "events.fifo", "attributes": {"ContentBasedDeduplication": true}},
    {"name": "guarded", "attributes": {"RedriveAllowPolicy": {"redrivePermission": "denyAll"}}}
  ]
}`

func TestQueuesFile(t *testing.T) {
	specs, err := app.LoadQueuesFile(writeFile(t, goodQueues))
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, app.Config{Store: "mem://", Queues: specs, QueuesSource: "queues.json", Region: "eu-west-1"})
	srv := serve(t, a)
	c := sdkClient(t, srv)
	ctx := context.Background()
	attrs := func(name string) map[string]string {
		u, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl, AttributeNames: []types.QueueAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes
	}
	o := attrs("orders")
	if o["VisibilityTimeout"] != "45" || o["DelaySeconds"] != "2" ||
		o["RedrivePolicy"] != `{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:000000000000:orders-dlq","maxReceiveCount":3}` {
		t.Errorf("orders: %v", o)
	}
	if d := attrs("orders-dlq"); d["MessageRetentionPeriod"] != "1209600" {
		t.Errorf("orders-dlq: %v", d)
	}
	if f := attrs("events.fifo"); f["FifoQueue"] != "true" || f["ContentBasedDeduplication"] != "true" {
		t.Errorf("events.fifo: %v", f)
	}
	if g := attrs("guarded"); g["RedriveAllowPolicy"] != `{"redrivePermission":"denyAll"}` {
		t.Errorf("guarded: %v", g)
	}
	tags, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(srv.URL + "/000000000000/orders")})
	if err != nil || tags.Tags["team"] != "shop" {
		t.Errorf("tags: %v %v", tags, err)
	}
	dlqs, err := c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(srv.URL + "/000000000000/orders-dlq")})
	if err != nil || len(dlqs.QueueUrls) != 1 {
		t.Errorf("dead-letter sources: %v %v", dlqs, err)
	}
}

// TestQueuesFileIsIdempotent applies one file twice to one durable store,
// as two starts of a server do.
func TestQueuesFileIsIdempotent(t *testing.T) {
	specs, err := app.LoadQueuesFile(writeFile(t, goodQueues))
	if err != nil {
		t.Fatal(err)
	}
	// The durable store is not linked in these tests; one App applying
	// the file twice through its service is the same CreateQueue calls.
	a := newApp(t, app.Config{Store: "mem://", Queues: specs})
	if err := app.ApplyQueues(context.Background(), a, "again", specs); err != nil {
		t.Fatalf("second apply: %v", err)
	}
	// A file that now disagrees with the store is refused, naming the queue.
	changed := append([]app.QueueSpec(nil), specs...)
	changed[1].Attributes = map[string]app.AttributeValue{"MessageRetentionPeriod": "60"}
	err = app.ApplyQueues(context.Background(), a, "changed.json", changed)
	var qe *app.QueuesError
	if !errors.As(err, &qe) || qe.Queue != "orders-dlq" || !strings.Contains(err.Error(), "QueueAlreadyExists") {
		t.Errorf("changed file: %v", err)
	}
}

func TestQueuesFileErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"syntax", "{\n  \"queues\": [\n    {\"name\": \"a\",}\n  ]\n}", "line 3"},
		{"unknown field", `{"queues": [{"name": "a", "attribute": {}}]}`, `unknown field "attribute"`},
		{"no name", `{"queues": [{"attributes": {}}]}`, "queue 1 has no name"},
		{"twice", `{"queues": [{"name": "a"}, {"name": "a"}]}`, `queue "a": listed twice`},
		{"cycle", `{"queues": [{"name": "a", "deadLetterQueue": {"name": "b", "maxReceiveCount": 1}},
			{"name": "b", "deadLetterQueue": {"name": "a", "maxReceiveCount": 1}}]}`, "cycle: a → b → a"},
		{"both", `{"queues": [{"name": "a", "attributes": {"RedrivePolicy": "{}"}, "deadLetterQueue": {"name": "b"}}]}`, "not both"},
		{"null", `{"queues": [{"name": "a", "attributes": {"DelaySeconds": null}}]}`, "cannot be null"},
		{"trailing", `{"queues": []} {}`, "unexpected data"},
	} {
		_, err := app.LoadQueuesFile(writeFile(t, tc.body))
		var qe *app.QueuesError
		if !errors.As(err, &qe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a QueuesError with %q", tc.name, err, tc.want)
		}
	}
	if _, err := app.LoadQueuesFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file loaded")
	}

	// What only CreateQueue can judge fails New with the SQS error.
	for _, tc := range []struct{ body, want string }{
		{`{"queues": [{"name": "a", "attributes": {"VisibilityTimeout": 99999}}]}`, "InvalidAttributeValue"},
		{`{"queues": [{"name": "bad name!"}]}`, "InvalidParameterValue"},
		{`{"queues": [{"name": "a", "deadLetterQueue": {"name": "elsewhere", "maxReceiveCount": 2}}]}`, `dead-letter queue "elsewhere"`},
	} {
		specs, err := app.LoadQueuesFile(writeFile(t, tc.body))
		if err != nil {
			t.Fatal(err)
		}
		_, err = app.New(context.Background(), app.Config{Store: "mem://", Queues: specs, QueuesSource: "q.json"})
		var qe *app.QueuesError
		if !errors.As(err, &qe) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "q.json: queue ") {
			t.Errorf("%s: %v, want a QueuesError with %q", tc.body, err, tc.want)
		}
	}
}

// The metrics name every account's queues. On the SQS listener of a server
// that checks signatures they answer a signed request or the metrics token
// only; a listener of their own, or a server that checks nothing, serves
// them to anyone.
func TestMetricsAreAuthenticatedWhereSignaturesAre(t *testing.T) {
	keys, err := app.ParseKeys("AKIDMETRICS:metricssecret")
	if err != nil {
		t.Fatal(err)
	}
	scrapeAs := func(a *app.App, akid, secret, token string) (int, string) {
		t.Helper()
		w := operatorRequest(t, a, http.MethodGet, app.PathMetrics, akid, secret, token)
		return w.Code, w.Body.String()
	}
	signed := newApp(t, app.Config{Store: "mem://", Auth: app.AuthSigV4, AuthKeys: keys, MetricsToken: "mtok",
		Queues: []app.QueueSpec{{Name: "payroll"}}})
	for _, c := range []struct {
		what                string
		akid, secret, token string
		want                int
	}{
		{"unsigned", "", "", "", 403},
		{"a wrong secret", "AKIDMETRICS", "wrong", "", 403},
		{"a wrong token", "", "", "mtok2", 403},
		{"signed by the key", "AKIDMETRICS", "metricssecret", "", 200},
		{"the token", "", "", "mtok", 200},
	} {
		code, body := scrapeAs(signed, c.akid, c.secret, c.token)
		if code != c.want {
			t.Errorf("signatures checked, %s: %d, want %d", c.what, code, c.want)
		}
		if code != 200 && strings.Contains(body, "payroll") {
			t.Errorf("signatures checked, %s: the refusal names a queue: %q", c.what, body)
		}
	}
	open := newApp(t, app.Config{Store: "mem://", Auth: app.AuthNone})
	if code, _ := scrapeAs(open, "", "", ""); code != 200 {
		t.Errorf("no signatures checked: %d, want 200", code)
	}
	elsewhere := newApp(t, app.Config{Store: "mem://", Auth: app.AuthSigV4, AuthKeys: keys, MetricsElsewhere: true})
	ops := httptest.NewServer(elsewhere.OpsHandler())
	defer ops.Close()
	if fams := scrape(t, ops.URL+"/metrics"); fams["sluice_build_info"] == nil {
		t.Error("a listener of their own, signatures checked: no sluice_build_info")
	}
}

// A failed readiness check says why on a server that checks no
// signatures and on the operator's own listener; on the SQS listener of a
// server that checks them it says only that it is not ready (a store's
// error can name its database's address or project).
func TestReadinessSaysWhyOnlyWhereItMay(t *testing.T) {
	keys, err := app.ParseKeys("AKIDREADY:readysecret")
	if err != nil {
		t.Fatal(err)
	}
	signed := newApp(t, app.Config{Store: "mem://", Auth: app.AuthSigV4, AuthKeys: keys})
	srv := serve(t, signed)
	ops := httptest.NewServer(signed.OpsHandler())
	defer ops.Close()
	signed.Shutdown()
	if code, _, body := get(t, "GET", srv.URL+"/readyz"); code != 503 || body != "not ready\n" {
		t.Errorf("signatures checked, the SQS listener: %d %q, want 503 without the reason", code, body)
	}
	if code, _, body := get(t, "GET", ops.URL+"/readyz"); code != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("signatures checked, the operator's listener: %d %q, want 503 with the reason", code, body)
	}
}
