package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

// The API refuses a body that is not Unicode text (a lone surrogate, a byte
// that is not UTF-8) with InvalidMessageContents (httpapi.MarkInvalidText);
// the console's send must answer the same, not store U+FFFD in its place.
func TestConsoleSendRefusesNonUnicodeBody(t *testing.T) {
	r := newRig(t)
	url := r.create("q", nil)
	r.login()
	for name, raw := range map[string]string{
		"lone surrogate escape": `{"queue":"q","body":"a\ud800b"}`,
		"invalid UTF-8 byte":    "{\"queue\":\"q\",\"body\":\"a\xffb\"}",
	} {
		resp := r.request(http.MethodPost, "/api/send", raw, map[string]string{
			"Content-Type": "application/json", "X-Sluice-Csrf": r.csrf,
			"Origin": r.srv.URL, "Sec-Fetch-Site": "same-origin"})
		var e apiErr
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Error.Code != "InvalidMessageContents" {
			t.Errorf("%s: console send answered %d %q, want 400 InvalidMessageContents as the API does", name, resp.StatusCode, e.Error.Code)
		}
	}
	max := int64(10)
	out, err := r.svc.ReceiveMessage(context.Background(), &contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: &max})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range out.Messages {
		t.Errorf("stored a body the API refuses, repaired: %q", m.Body)
	}
}
