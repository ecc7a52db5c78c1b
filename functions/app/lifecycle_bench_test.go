package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/functions/app"
)

// BenchmarkLifecycle is one Standard message sent, received and deleted
// through the whole handler (AWS JSON 1.0, no signature checks) on
// mem://: the server's own work per lifecycle, without a network or a
// client, for CPU and allocation profiles of the HTTP path
// (go test -bench Lifecycle -benchmem -memprofile mem.out ./functions/app/).
func BenchmarkLifecycle(b *testing.B) {
	benchLifecycle(b, "mem://")
}

func benchLifecycle(b *testing.B, store string) {
	a, err := app.New(context.Background(), app.Config{Store: store, Auth: app.AuthNone,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	h := a.Handler()
	call := func(action, body string) map[string]any {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", action, w.Code, w.Body.String())
		}
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			b.Fatal(err)
		}
		return out
	}
	q := call("CreateQueue", `{"QueueName":"bench"}`)["QueueUrl"].(string)
	payload := strings.Repeat("x", 1024)
	send := `{"QueueUrl":"` + q + `","MessageBody":"` + payload + `"}`
	recv := `{"QueueUrl":"` + q + `","MaxNumberOfMessages":1}`
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call("SendMessage", send)
		msgs := call("ReceiveMessage", recv)["Messages"].([]any)
		rh := msgs[0].(map[string]any)["ReceiptHandle"].(string)
		call("DeleteMessage", `{"QueueUrl":"`+q+`","ReceiptHandle":"`+rh+`"}`)
	}
}
