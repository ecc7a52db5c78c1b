package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/functions/app"
)

// The console is reached under a front end's prefix (an API Gateway
// stage, a base path). Its redirect to the slash must stay under that
// prefix: /prod/_sluice/console must not send the browser to
// /_sluice/console/, which the front end does not route to sluice.
func TestConsoleRedirectKeepsFrontEndPrefix(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", Console: true})
	resp := consoleGet(a.Handler(), "/prod/_sluice/console", "", "")
	loc := resp.Header.Get("Location")
	base := mustParse(t, "http://127.0.0.1:9324/prod/_sluice/console")
	got := base.ResolveReference(mustParse(t, loc)).Path
	if resp.StatusCode != http.StatusMovedPermanently || got != "/prod/_sluice/console/" {
		t.Fatalf("GET /prod/_sluice/console: %d, Location %q (resolves to %q), want the console under /prod/", resp.StatusCode, loc, got)
	}
}

// --body-memory bounds "bytes all request bodies in flight may hold
// together"; a console POST body is a request body too, and is read whole
// (up to 4 MiB) without taking any of that budget.
func TestConsoleBodiesCountAgainstBodyMemory(t *testing.T) {
	const budget = 128 << 10
	a := newApp(t, app.Config{Store: "mem://", Console: true, BodyMemory: budget})
	if code, out := call(t, a.Handler(), "CreateQueue", `{"QueueName":"q"}`); code != 200 {
		t.Fatalf("CreateQueue: %d %v", code, out)
	}
	big := strings.Repeat("x", 512<<10) // four times the whole budget

	// The API: throttled.
	code, out := call(t, a.Handler(), "SendMessage", `{"QueueUrl":"q","MessageBody":"`+big+`"}`)
	if code != http.StatusBadRequest || !strings.HasSuffix(out["__type"].(string), "RequestThrottled") {
		t.Fatalf("API SendMessage of a 512 KiB body with a 128 KiB budget: %d %v, want 400 RequestThrottled", code, out["__type"])
	}

	// The console: the same body, throttled too.
	sess := consoleGet(a.Handler(), "/_sluice/console/api/session", "", "")
	b, _ := io.ReadAll(sess.Body)
	csrf := between(string(b), `"csrf":"`, `"`)
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9324/_sluice/console/api/send",
		strings.NewReader(`{"queue":"q","body":"`+big+`"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Sluice-Csrf", csrf)
	w := httptest.NewRecorder()
	a.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "RequestThrottled") {
		t.Fatalf("console send of the same body: %d %.120s; want 503 RequestThrottled, as the API throttles it", w.Code, w.Body.String())
	}
}

func between(s, from, to string) string {
	_, after, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(after, to)
	return v
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
