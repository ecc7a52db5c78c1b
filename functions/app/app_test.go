package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/app"
	_ "github.com/sluicehq/sluice/stores/memstore" // mem://, the only store these tests link
)

// call sends one AWS JSON 1.0 request for action to h.
func call(t *testing.T, h http.Handler, action, body string) (int, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", strings.NewReader(body))
	r.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %d %s", action, w.Code, b)
	}
	return w.Code, out
}

func newApp(t *testing.T, cfg app.Config) *app.App {
	t.Helper()
	a, err := app.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func TestNewServesTheStore(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", Region: "eu-west-3", AccountID: "123456789012",
		BaseURL: "https://sqs.example.com/"})
	code, out := call(t, a.Handler(), "CreateQueue", `{"QueueName":"q"}`)
	if code != 200 || out["QueueUrl"] != "https://sqs.example.com/123456789012/q" {
		t.Fatalf("CreateQueue: %d %v", code, out)
	}
	code, out = call(t, a.Handler(), "GetQueueAttributes",
		`{"QueueUrl":"https://sqs.example.com/123456789012/q","AttributeNames":["QueueArn"]}`)
	attrs, _ := out["Attributes"].(map[string]any)
	if code != 200 || attrs["QueueArn"] != "arn:aws:sqs:eu-west-3:123456789012:q" {
		t.Errorf("GetQueueAttributes: %d %v", code, out)
	}
	if a.Service() == nil {
		t.Error("no service")
	}
	if err := a.Maintain(context.Background()); err != nil {
		t.Errorf("Maintain: %v", err)
	}
}

func TestNewDefaults(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://"})
	code, out := call(t, a.Handler(), "CreateQueue", `{"QueueName":"q"}`)
	if code != 200 || out["QueueUrl"] != "http://127.0.0.1:9324/000000000000/q" {
		t.Errorf("CreateQueue: %d %v", code, out)
	}
}

func TestValidate(t *testing.T) {
	good := []app.Config{
		{},
		{Region: "us-east-1", AccountID: "000000000000", BaseURL: "http://h:9324", QueueCacheTTL: -1},
		{BaseURL: "https://sqs.example.com/"},
		{Wakeups: "local"},
		{Wakeups: "postgres://h/db"},
	}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := map[string]app.Config{
		"region":         {Region: "US East"},
		"account id":     {AccountID: "12"},
		"base URL":       {BaseURL: "sqs.example.com"},
		"base URL path":  {BaseURL: "http://h/with/path"},
		"base URL user":  {BaseURL: "http://u:p@h"},
		"move-task step": {MoveTaskStep: -time.Second},
		"max body bytes": {MaxBodyBytes: -1},
		"body memory":    {BodyMemory: -1},
		"body timeout":   {BodyTimeout: -time.Second},
		"wake-ups":       {Wakeups: "inproc"},
	}
	for name, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, c)
		}
		// New refuses it before opening anything: the URL would fail to open.
		if _, err := app.New(context.Background(), withStore(c, "redis://h")); err == nil || strings.Contains(err.Error(), "redis") {
			t.Errorf("%s: New: %v; want the configuration error", name, err)
		}
	}
}

func withStore(c app.Config, store string) app.Config {
	c.Store = store
	return c
}

// TestNewOpensOnlyLinkedStores: this test binary links memstore alone.
func TestNewOpensOnlyLinkedStores(t *testing.T) {
	_, err := app.New(context.Background(), app.Config{Store: "postgres://u:secret@h/db"})
	if err == nil || !strings.Contains(err.Error(), "not linked in this binary") || strings.Contains(err.Error(), "secret") {
		t.Errorf("postgres: %v", err)
	}
	if _, err := app.New(context.Background(), app.Config{}); err == nil || !strings.Contains(err.Error(), "stores/embedded") {
		t.Errorf("default store: %v", err)
	}
}

// TestShutdownEndsLongPolls: a 20-second poll returns at once, empty.
func TestShutdownEndsLongPolls(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://"})
	_, out := call(t, a.Handler(), "CreateQueue", `{"QueueName":"q"}`)
	qurl, _ := out["QueueUrl"].(string)
	done := make(chan map[string]any, 1)
	start := time.Now()
	go func() {
		_, out := call(t, a.Handler(), "ReceiveMessage", `{"QueueUrl":"`+qurl+`","WaitTimeSeconds":20}`)
		done <- out
	}()
	time.Sleep(200 * time.Millisecond) // let the poll start waiting
	a.Shutdown()
	select {
	case out := <-done:
		if msgs, _ := out["Messages"].([]any); len(msgs) != 0 {
			t.Errorf("ReceiveMessage: %v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll outlived Shutdown")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
}

func TestRunBackgroundStopsWithItsContext(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", MoveTaskStep: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.RunBackground(ctx) })
	time.Sleep(20 * time.Millisecond)
	cancel()
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("RunBackground did not return")
	}
}

func TestCloseClosesTheStoreOnce(t *testing.T) {
	a, err := app.New(context.Background(), app.Config{Store: "mem://"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if code, _ := call(t, a.Handler(), "ListQueues", `{}`); code == 200 {
		t.Error("the store still answers after Close")
	}
}

// An unknown wake-ups scheme is refused, naming what the binary has, and the
// store it opened is closed again.
func TestNewRefusesUnknownWakeups(t *testing.T) {
	_, err := app.New(context.Background(), app.Config{Store: "mem://", Wakeups: "nats://h"})
	if err == nil || !strings.Contains(err.Error(), `unsupported wake-ups scheme "nats"`) || !strings.Contains(err.Error(), "local") {
		t.Fatalf("New with nats:// wake-ups: %v", err)
	}
}
