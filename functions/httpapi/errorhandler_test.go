package httpapi_test

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/httpapi"
)

// TestErrorHandlerSpeaksEachProtocol: the handler an entry point serves
// when it has no service answers in the protocol of each request, as the
// real handler answers its errors.
func TestErrorHandlerSpeaksEachProtocol(t *testing.T) {
	srv := httptest.NewServer(httpapi.ErrorHandler(contract.ErrInternal(), httpapi.Options{Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()

	post := func(t *testing.T, body string, header http.Header) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/000000000000/jobs", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("status %d, want 500; body %s", resp.StatusCode, b)
		}
		if resp.Header.Get("x-amzn-RequestId") == "" {
			t.Error("no x-amzn-RequestId")
		}
		return resp, b
	}

	t.Run("json", func(t *testing.T) {
		resp, b := post(t, `{"QueueUrl":"jobs"}`, http.Header{
			"X-Amz-Target": {"AmazonSQS.SendMessage"}, "Content-Type": {"application/x-amz-json-1.0"}})
		var doc struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if doc.Type != "com.amazonaws.sqs#InternalError" || doc.Message == "" {
			t.Errorf("body %s", b)
		}
		if got := resp.Header.Get("x-amzn-query-error"); got != "InternalError;Receiver" {
			t.Errorf("x-amzn-query-error %q", got)
		}
		if got := resp.Header.Get("Content-Type"); got != "application/x-amz-json-1.0" {
			t.Errorf("Content-Type %q", got)
		}
	})
	t.Run("query", func(t *testing.T) {
		_, b := post(t, url.Values{"Action": {"SendMessage"}, "MessageBody": {"x"}}.Encode(),
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
		var doc struct {
			Error struct{ Type, Code, Message string }
		}
		if err := xml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if doc.Error.Code != "InternalError" || doc.Error.Type != "Receiver" {
			t.Errorf("body %s", b)
		}
	})
	t.Run("query accepting json", func(t *testing.T) {
		_, b := post(t, url.Values{"Action": {"SendMessage"}}.Encode(),
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {"application/json"}})
		var doc struct{ Error struct{ Type, Code string } }
		if err := json.Unmarshal(b, &doc); err != nil || doc.Error.Code != "InternalError" {
			t.Errorf("body %s (%v)", b, err)
		}
	})
}
