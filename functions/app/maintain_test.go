package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sluicehq/sluice/functions/app"
)

// operatorRequest is a body-less request to one of the operator's paths,
// signed with a key (when akid is set) and carrying a bearer token (when
// set), as the app's handler answers it.
func operatorRequest(t *testing.T, a *app.App, method, path, akid, secret, token string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:9324"+path, strings.NewReader(""))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if akid != "" {
		sum := sha256.Sum256(nil)
		if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret},
			r, hex.EncodeToString(sum[:]), "sqs", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	w := httptest.NewRecorder()
	a.Handler().ServeHTTP(w, r)
	return w
}

// maintainCall posts to the maintenance path (see operatorRequest).
func maintainCall(t *testing.T, a *app.App, method, akid, secret, token string) (int, map[string]any) {
	t.Helper()
	return decode(t, operatorRequest(t, a, method, app.PathMaintain, akid, secret, token))
}

// The maintenance path runs a pass that steps move tasks: a message in a
// dead-letter queue goes back to its source through it.
func TestMaintainPathRunsAPass(t *testing.T) {
	a := newApp(t, app.Config{Store: "mem://", Auth: app.AuthNone})
	h := a.Handler()
	mustOK := func(action, body string) map[string]any {
		t.Helper()
		code, out := call(t, h, action, body)
		if code != 200 {
			t.Fatalf("%s: %d %v", action, code, out)
		}
		return out
	}
	mustOK("CreateQueue", `{"QueueName":"dlq"}`)
	const dlqArn = "arn:aws:sqs:us-east-1:000000000000:dlq"
	mustOK("CreateQueue", fmt.Sprintf(`{"QueueName":"src","Attributes":{"RedrivePolicy":"{\"deadLetterTargetArn\":\"%s\",\"maxReceiveCount\":1}"}}`, dlqArn))
	mustOK("SendMessage", `{"QueueUrl":"http://h/000000000000/dlq","MessageBody":"back"}`)
	mustOK("StartMessageMoveTask", fmt.Sprintf(`{"SourceArn":%q,"DestinationArn":"arn:aws:sqs:us-east-1:000000000000:src"}`, dlqArn))
	if code, out := maintainCall(t, a, http.MethodGet, "", "", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d %v, want 405", code, out)
	}
	time.Sleep(20 * time.Millisecond) // the task's pace (500/s) allows a message after 2 ms
	if code, out := maintainCall(t, a, http.MethodPost, "", "", ""); code != 200 {
		t.Fatalf("POST: %d %v", code, out)
	}
	out := mustOK("ReceiveMessage", `{"QueueUrl":"http://h/000000000000/src"}`)
	if ms, _ := out["Messages"].([]any); len(ms) != 1 {
		t.Errorf("src after the pass: %v, want the moved message", out)
	}
}

// With signatures checked, the path wants a signature by a key or the
// maintenance token; with only a token, the token.
func TestMaintainPathIsAuthenticated(t *testing.T) {
	keys, err := app.ParseKeys("AKIDMAINT:maintsecret")
	if err != nil {
		t.Fatal(err)
	}
	signed := newApp(t, app.Config{Store: "mem://", Auth: app.AuthSigV4, AuthKeys: keys, MaintenanceToken: "tok-123"})
	for _, c := range []struct {
		what                string
		akid, secret, token string
		want                int
	}{
		{"unsigned", "", "", "", 403},
		{"a wrong secret", "AKIDMAINT", "wrong", "", 403},
		{"a wrong token", "", "", "tok-124", 403},
		{"signed by the key", "AKIDMAINT", "maintsecret", "", 200},
		{"the token", "", "", "tok-123", 200},
	} {
		if code, out := maintainCall(t, signed, http.MethodPost, c.akid, c.secret, c.token); code != c.want {
			t.Errorf("signatures checked, %s: %d %v, want %d", c.what, code, out, c.want)
		}
	}
	tokenOnly := newApp(t, app.Config{Store: "mem://", Auth: app.AuthNone, MaintenanceToken: "tok-123"})
	if code, _ := maintainCall(t, tokenOnly, http.MethodPost, "", "", ""); code != 403 {
		t.Errorf("no signatures, a token configured, none sent: %d, want 403", code)
	}
	if code, _ := maintainCall(t, tokenOnly, http.MethodPost, "", "", "tok-123"); code != 200 {
		t.Errorf("no signatures, the token sent: %d, want 200", code)
	}
}
