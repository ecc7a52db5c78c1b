package console_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/console"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/functions/sigv4"
	"github.com/sluicehq/sluice/stores/memstore"
)

// rig is a console over a real service and in-memory store, served over
// real HTTP; the service is there to check each action's effect.
type rig struct {
	t   *testing.T
	svc *service.Service
	srv *httptest.Server
	// user and pass are the Basic credentials sent ("" sends none).
	user, pass string
	csrf       string
}

func newRig(t *testing.T, keys ...sigv4.Key) *rig {
	t.Helper()
	svc := service.New(service.Config{Store: memstore.New(), MoveTaskStep: time.Millisecond, NoCooldowns: false})
	c := console.New(console.Config{Service: svc, Keys: keys, Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return &rig{t: t, svc: svc, srv: srv}
}

func (r *rig) request(method, path, body string, header map[string]string) *http.Response {
	r.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.srv.URL+console.Path+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if r.user != "" {
		req.SetBasicAuth(r.user, r.pass)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// get reads a GET endpoint's JSON into v and returns the status.
func (r *rig) get(path string, v any) int {
	r.t.Helper()
	resp := r.request(http.MethodGet, path, "", nil)
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			r.t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

// login fetches the session's CSRF token, as the page does.
func (r *rig) login() {
	r.t.Helper()
	var s struct{ CSRF string }
	if st := r.get("/api/session", &s); st != http.StatusOK || s.CSRF == "" {
		r.t.Fatalf("session: status %d, token %q", st, s.CSRF)
	}
	r.csrf = s.CSRF
}

// post calls a POST endpoint as the page does; out receives the JSON.
func (r *rig) post(name string, in any, out any) int {
	r.t.Helper()
	b, _ := json.Marshal(in)
	resp := r.request(http.MethodPost, "/api/"+name, string(b), map[string]string{
		"Content-Type": "application/json", console.CSRFHeader: r.csrf,
		"Origin": r.srv.URL, "Sec-Fetch-Site": "same-origin"})
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			r.t.Fatalf("POST %s: %v", name, err)
		}
	}
	return resp.StatusCode
}

type apiErr struct {
	Error struct{ Code, Message string }
}

func (r *rig) create(name string, attrs map[string]string) string {
	r.t.Helper()
	out, err := r.svc.CreateQueue(context.Background(), &contract.CreateQueueInput{QueueName: name, Attributes: attrs})
	if err != nil {
		r.t.Fatal(err)
	}
	return out.QueueUrl
}

func (r *rig) attrs(url string) map[string]string {
	r.t.Helper()
	return r.attrsAs(context.Background(), url)
}

func (r *rig) attrsAs(ctx context.Context, url string) map[string]string {
	r.t.Helper()
	out, err := r.svc.GetQueueAttributes(ctx, &contract.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []string{"All"}})
	if err != nil {
		r.t.Fatal(err)
	}
	return out.Attributes
}

func (r *rig) sendDirect(url, body string) {
	r.t.Helper()
	if _, err := r.svc.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
		r.t.Fatal(err)
	}
}

var testKey = sigv4.Key{AccessKeyID: "AKIDCONSOLE", SecretAccessKey: "s3cret", AccountID: "111122223333"}

func TestPageAndAssetsServed(t *testing.T) {
	r := newRig(t)
	resp := r.request(http.MethodGet, "", "", nil)
	resp.Body.Close()
	if loc := resp.Request.URL.ResolveReference(&url.URL{Path: resp.Header.Get("Location")}); resp.StatusCode != http.StatusMovedPermanently || loc.Path != console.Path+"/" {
		t.Fatalf("GET %s: %d to %q, want a redirect to the slash", console.Path, resp.StatusCode, resp.Header.Get("Location"))
	}
	for path, want := range map[string]string{"/": "text/html", "/app.js": "javascript", "/app.css": "text/css"} {
		resp := r.request(http.MethodGet, path, "", nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), want) || len(b) == 0 {
			t.Errorf("GET %s: %d %q, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
	resp = r.request(http.MethodGet, "/nothing.js", "", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing.js: %d, want 404", resp.StatusCode)
	}
}

func TestKeysRequireBasicCredentials(t *testing.T) {
	temp := sigv4.Key{AccessKeyID: "ASIATEMP", SecretAccessKey: "tmpsecret", SessionToken: "tok"}
	r := newRig(t, testKey, temp)
	for _, c := range []struct{ user, pass string }{
		{"", ""}, {"AKIDCONSOLE", "wrong"}, {"AKIDOTHER", "s3cret"}, {"akidconsole", "s3cret"}, {"ASIATEMP", "tmpsecret"},
	} {
		r.user, r.pass = c.user, c.pass
		for _, path := range []string{"/", "/app.js", "/api/session", "/api/queues"} {
			resp := r.request(http.MethodGet, path, "", nil)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%q/%q GET %s: %d %q, want 401 with a Basic challenge", c.user, c.pass, path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
		// A POST without credentials changes nothing either.
		if st := r.post("send", map[string]string{"queue": "q", "body": "x"}, nil); st != http.StatusUnauthorized {
			t.Errorf("%q/%q POST send: %d, want 401", c.user, c.pass, st)
		}
	}

	// The key's account is whom the console acts for: it sees that
	// account's queue, not the server's own account's.
	ctx := service.WithCaller(context.Background(), service.Caller{AccountID: testKey.AccountID, Region: "us-east-1"})
	if _, err := r.svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "theirs"}); err != nil {
		t.Fatal(err)
	}
	r.create("home", nil)
	r.user, r.pass = testKey.AccessKeyID, testKey.SecretAccessKey
	var s struct{ Account, Auth, AccessKeyID, CSRF string }
	if st := r.get("/api/session", &s); st != http.StatusOK || s.Account != testKey.AccountID || s.Auth != "sigv4" || s.AccessKeyID != testKey.AccessKeyID {
		t.Fatalf("session: %d %+v", st, s)
	}
	var list struct{ Queues []struct{ Name, URL string } }
	r.get("/api/queues", &list)
	if len(list.Queues) != 1 || list.Queues[0].Name != "theirs" || !strings.Contains(list.Queues[0].URL, "/111122223333/theirs") {
		t.Fatalf("queues of the key's account: %+v", list.Queues)
	}

	// A key with a session token takes SECRET:TOKEN, and its token is not
	// the other key's.
	r.user, r.pass = temp.AccessKeyID, temp.SecretAccessKey+":"+temp.SessionToken
	var s2 struct{ CSRF string }
	if st := r.get("/api/session", &s2); st != http.StatusOK {
		t.Fatalf("temporary key: %d", st)
	}
	if s2.CSRF == s.CSRF || s2.CSRF == "" {
		t.Fatalf("tokens of two keys: %q and %q", s.CSRF, s2.CSRF)
	}
	r.csrf = s.CSRF // the other key's token
	if st := r.post("send", map[string]string{"queue": "home", "body": "x"}, nil); st != http.StatusForbidden {
		t.Fatalf("POST with another key's token: %d, want 403", st)
	}
}

func TestCrossSiteRequestsRefused(t *testing.T) {
	r := newRig(t, testKey)
	r.user, r.pass = testKey.AccessKeyID, testKey.SecretAccessKey
	ctx := service.WithCaller(context.Background(), service.Caller{AccountID: testKey.AccountID, Region: "us-east-1"})
	out, err := r.svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "target"})
	if err != nil {
		t.Fatal(err)
	}
	r.login()
	good := map[string]string{"Content-Type": "application/json", console.CSRFHeader: r.csrf, "Origin": r.srv.URL}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range good {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	body := `{"queue":"target","body":"forged"}`
	for name, h := range map[string]map[string]string{
		"no token":            with(console.CSRFHeader, ""),
		"wrong token":         with(console.CSRFHeader, strings.Repeat("0", 64)),
		"form content type":   with("Content-Type", "application/x-www-form-urlencoded"),
		"text/plain":          with("Content-Type", "text/plain"),
		"another origin":      with("Origin", "https://evil.example"),
		"null origin":         with("Origin", "null"),
		"cross-site fetch":    with("Sec-Fetch-Site", "cross-site"),
		"same-site subdomain": with("Sec-Fetch-Site", "same-site"),
	} {
		resp := r.request(http.MethodPost, "/api/send", body, h)
		var e apiErr
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || e.Error.Code != "Forbidden" {
			t.Errorf("%s: %d %+v, want 403 Forbidden", name, resp.StatusCode, e)
		}
	}
	// GET does not run a POST endpoint.
	resp := r.request(http.MethodGet, "/api/purge?queue=target", "", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET purge: %d, want 405", resp.StatusCode)
	}
	if n := r.attrsAs(ctx, out.QueueUrl)["ApproximateNumberOfMessages"]; n != "0" {
		t.Fatalf("refused requests sent %s messages", n)
	}
	// The same request with everything right goes through.
	resp = r.request(http.MethodPost, "/api/send", body, good)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || r.attrsAs(ctx, out.QueueUrl)["ApproximateNumberOfMessages"] != "1" {
		t.Fatalf("good request: %d", resp.StatusCode)
	}
}

func TestQueuesListDepthsAndDeadLetterLinks(t *testing.T) {
	r := newRig(t)
	dlq := r.create("orders-dlq", nil)
	dlqARN := r.attrs(dlq)["QueueArn"]
	src := r.create("orders", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"3"}`})
	r.create("jobs.fifo", map[string]string{"FifoQueue": "true"})
	for range 3 {
		r.sendDirect(src, "m")
	}
	one := int64(1)
	if _, err := r.svc.ReceiveMessage(context.Background(), &contract.ReceiveMessageInput{QueueUrl: src, MaxNumberOfMessages: &one}); err != nil {
		t.Fatal(err)
	}
	delay := int64(60)
	body := "later"
	if _, err := r.svc.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: src, MessageBody: &body, DelaySeconds: &delay}); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Queues []struct {
			Name, ARN, DeadLetterQueue string
			FIFO                       bool
			Visible, InFlight, Delayed int64
			Sources                    []string
			Attributes                 map[string]string
		}
	}
	if st := r.get("/api/queues", &list); st != http.StatusOK {
		t.Fatalf("queues: %d", st)
	}
	var names []string
	for _, q := range list.Queues {
		names = append(names, q.Name)
	}
	if strings.Join(names, ",") != "jobs.fifo,orders,orders-dlq" {
		t.Fatalf("names %v", names)
	}
	jobs, orders, dead := list.Queues[0], list.Queues[1], list.Queues[2]
	if !jobs.FIFO || orders.FIFO {
		t.Errorf("fifo flags: %v %v", jobs.FIFO, orders.FIFO)
	}
	if orders.Visible != 2 || orders.InFlight != 1 || orders.Delayed != 1 {
		t.Errorf("orders depths %d/%d/%d, want 2/1/1", orders.Visible, orders.InFlight, orders.Delayed)
	}
	if orders.DeadLetterQueue != "orders-dlq" || len(dead.Sources) != 1 || dead.Sources[0] != "orders" || dead.ARN != dlqARN {
		t.Errorf("dead-letter links: %q, %v, %q", orders.DeadLetterQueue, dead.Sources, dead.ARN)
	}
	if orders.Attributes["VisibilityTimeout"] != "30" || orders.Attributes["RedrivePolicy"] == "" {
		t.Errorf("attributes %v", orders.Attributes)
	}
}

func TestSendAsAWSDoes(t *testing.T) {
	r := newRig(t)
	std := r.create("plain", nil)
	fifo := r.create("ordered.fifo", map[string]string{"FifoQueue": "true"})
	r.login()

	var sent struct{ MessageID, SequenceNumber string }
	if st := r.post("send", map[string]any{"queue": "plain", "body": "hello", "delaySeconds": 0}, &sent); st != http.StatusOK || sent.MessageID == "" {
		t.Fatalf("send: %d %+v", st, sent)
	}
	ten := int64(10)
	got, err := r.svc.ReceiveMessage(context.Background(), &contract.ReceiveMessageInput{QueueUrl: std, MaxNumberOfMessages: &ten})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Body != "hello" || got.Messages[0].MessageId != sent.MessageID {
		t.Fatalf("received %+v, %v", got, err)
	}

	// FIFO without a group: AWS's error, code and message.
	var e apiErr
	if st := r.post("send", map[string]any{"queue": "ordered.fifo", "body": "x"}, &e); st != http.StatusBadRequest || e.Error.Code != "MissingParameter" ||
		e.Error.Message != "The request must contain the parameter MessageGroupId." {
		t.Fatalf("FIFO send without group: %d %+v", st, e)
	}
	// Without a deduplication id (and no content-based deduplication).
	e = apiErr{}
	if st := r.post("send", map[string]any{"queue": "ordered.fifo", "body": "x", "groupId": "g"}, &e); st != http.StatusBadRequest || e.Error.Code != "InvalidParameterValue" {
		t.Fatalf("FIFO send without dedup id: %d %+v", st, e)
	}
	// With both, twice: the second is a duplicate, the same message.
	var a, b struct{ MessageID, SequenceNumber string }
	in := map[string]any{"queue": "ordered.fifo", "body": "first", "groupId": "g1", "dedupId": "d1"}
	if r.post("send", in, &a) != http.StatusOK || r.post("send", in, &b) != http.StatusOK || a.MessageID != b.MessageID || a.SequenceNumber == "" {
		t.Fatalf("FIFO sends: %+v %+v", a, b)
	}
	got, err = r.svc.ReceiveMessage(context.Background(), &contract.ReceiveMessageInput{QueueUrl: fifo, MaxNumberOfMessages: &ten,
		MessageSystemAttributeNames: []string{"MessageGroupId", "MessageDeduplicationId"}})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Attributes["MessageGroupId"] != "g1" || got.Messages[0].Attributes["MessageDeduplicationId"] != "d1" {
		t.Fatalf("FIFO received %+v, %v", got, err)
	}

	// A queue that does not exist: AWS's error.
	e = apiErr{}
	if st := r.post("send", map[string]any{"queue": "nowhere", "body": "x"}, &e); st != http.StatusBadRequest || e.Error.Code != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Fatalf("send to no queue: %d %+v", st, e)
	}
}

func TestPeekIsAReceiveThatLeavesMessagesVisible(t *testing.T) {
	r := newRig(t)
	url := r.create("peeked", nil)
	r.sendDirect(url, "one")
	r.sendDirect(url, "two")
	r.login()
	type peeked struct {
		Messages []struct {
			MessageID, Body string
			Attributes      map[string]string
		}
	}
	for round := 1; round <= 2; round++ {
		var p peeked
		if st := r.post("peek", map[string]any{"queue": "peeked", "max": 10}, &p); st != http.StatusOK || len(p.Messages) != 2 {
			t.Fatalf("peek %d: %d %+v", round, st, p)
		}
		for _, m := range p.Messages {
			if m.Attributes["ApproximateReceiveCount"] != string(rune('0'+round)) {
				t.Errorf("peek %d: %s ReceiveCount %s", round, m.Body, m.Attributes["ApproximateReceiveCount"])
			}
		}
		if a := r.attrs(url); a["ApproximateNumberOfMessages"] != "2" || a["ApproximateNumberOfMessagesNotVisible"] != "0" {
			t.Fatalf("after peek %d: visible %s, in flight %s; want 2 and 0", round, a["ApproximateNumberOfMessages"], a["ApproximateNumberOfMessagesNotVisible"])
		}
	}
	var e apiErr
	if st := r.post("peek", map[string]any{"queue": "peeked", "max": 11}, &e); st != http.StatusBadRequest || e.Error.Code != "InvalidParameterValue" {
		t.Fatalf("peek of 11: %d %+v", st, e)
	}
	var stats struct{ Sent, Received, Deleted uint64 }
	r.get("/api/stats", &stats)
	if stats.Sent != 2 || stats.Received != 4 || stats.Deleted != 0 {
		t.Fatalf("stats %+v, want 2 sent, 4 received", stats)
	}
}

func TestPurge(t *testing.T) {
	r := newRig(t)
	url := r.create("full", nil)
	for range 5 {
		r.sendDirect(url, "x")
	}
	r.login()
	if st := r.post("purge", map[string]string{"queue": "full"}, nil); st != http.StatusOK {
		t.Fatalf("purge: %d", st)
	}
	if n := r.attrs(url)["ApproximateNumberOfMessages"]; n != "0" {
		t.Fatalf("after purge: %s messages", n)
	}
	// A second purge within 60 s: AWS's PurgeQueueInProgress.
	var e apiErr
	if st := r.post("purge", map[string]string{"queue": "full"}, &e); st != http.StatusForbidden || e.Error.Code != "AWS.SimpleQueueService.PurgeQueueInProgress" {
		t.Fatalf("second purge: %d %+v", st, e)
	}
}

func TestRedriveMovesDeadLettersBack(t *testing.T) {
	r := newRig(t)
	dlq := r.create("work-dlq", nil)
	dlqARN := r.attrs(dlq)["QueueArn"]
	src := r.create("work", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"1"}`})
	r.sendDirect(src, "poison")
	ctx := context.Background()
	zero := int64(0)
	for range 2 { // the second receive moves it: past maxReceiveCount 1
		if _, err := r.svc.ReceiveMessage(ctx, &contract.ReceiveMessageInput{QueueUrl: src, VisibilityTimeout: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.attrs(dlq)["ApproximateNumberOfMessages"]; n != "1" {
		t.Fatalf("dead-letter queue holds %s, want 1", n)
	}
	r.login()
	var started struct{ TaskHandle string }
	if st := r.post("redrive", map[string]any{"sourceArn": dlqARN}, &started); st != http.StatusOK || started.TaskHandle == "" {
		t.Fatalf("redrive: %d %+v", st, started)
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.attrs(src)["ApproximateNumberOfMessages"] != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("not moved back: source %v, dlq %v", r.attrs(src)["ApproximateNumberOfMessages"], r.attrs(dlq)["ApproximateNumberOfMessages"])
		}
		if err := r.svc.RunMoveTasks(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var tasks struct {
		Tasks []struct {
			Status                           string
			ApproximateNumberOfMessagesMoved int64
		}
	}
	if st := r.get("/api/tasks?arn="+dlqARN, &tasks); st != http.StatusOK || len(tasks.Tasks) != 1 || tasks.Tasks[0].ApproximateNumberOfMessagesMoved != 1 {
		t.Fatalf("tasks: %d %+v", st, tasks)
	}
	// A queue that is no dead-letter queue: AWS's error.
	var e apiErr
	srcARN := r.attrs(src)["QueueArn"]
	if st := r.post("redrive", map[string]any{"sourceArn": srcARN}, &e); st != http.StatusBadRequest || e.Error.Code != "InvalidParameterValue" {
		t.Fatalf("redrive of a source queue: %d %+v", st, e)
	}
}
