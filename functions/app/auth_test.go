package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/sigv4"
)

func TestParseKeys(t *testing.T) {
	keys, err := app.ParseKeys("AKIDONE:s3cr/et+1, AKIDTWO:secret2:123456789012,ASIATHREE:secret3::tok/en+=,AKIDFOUR:secret4:210987654321:token4")
	if err != nil {
		t.Fatal(err)
	}
	want := []sigv4.Key{
		{AccessKeyID: "AKIDONE", SecretAccessKey: "s3cr/et+1"},
		{AccessKeyID: "AKIDTWO", SecretAccessKey: "secret2", AccountID: "123456789012"},
		{AccessKeyID: "ASIATHREE", SecretAccessKey: "secret3", SessionToken: "tok/en+="},
		{AccessKeyID: "AKIDFOUR", SecretAccessKey: "secret4", AccountID: "210987654321", SessionToken: "token4"},
	}
	if len(keys) != len(want) {
		t.Fatalf("keys %v", keys)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Errorf("key %d = %+v, want %+v", i+1, keys[i].AccessKeyID, want[i].AccessKeyID)
		}
	}

	const secret = "TOPSECRETvalue"
	for _, c := range []struct{ text, want string }{
		{"", "none given"},
		{"AKIDONE", "entry 1 has no secret"},
		{"AKIDONE:" + secret + ",", "entry 2 is empty"},
		{"AKIDONE:", "empty secret"},
		{":" + secret, "empty access key id"},
		{"AKID ONE:" + secret, `access key id "AKID ONE"`},
		{"AKIDONE:" + secret + ":12345", `bad account id "12345"`},
		{"AKIDONE:" + secret + ":123456789012:", "empty session token"},
		{"AKIDONE:" + secret + ":123456789012:tok:extra", "has 5 fields"},
		{"AKIDONE:" + secret + ",AKIDONE:" + secret, "key AKIDONE is given twice"},
	} {
		_, err := app.ParseKeys(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseKeys(%q) = %v, want %q", c.text, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("ParseKeys(%q) shows the secret: %v", c.text, err)
		}
	}
}

func TestValidateAuth(t *testing.T) {
	k := sigv4.Key{AccessKeyID: "AKID", SecretAccessKey: "TOPSECRETvalue"}
	for _, c := range []struct {
		cfg  app.Config
		want string // "" valid
	}{
		{app.Config{}, ""},
		{app.Config{Auth: app.AuthNone}, ""},
		{app.Config{Auth: app.AuthSigV4, AuthKeys: []sigv4.Key{k}}, ""},
		{app.Config{Auth: app.AuthSigV4}, "needs at least one key"},
		{app.Config{AuthKeys: []sigv4.Key{k}}, "auth keys given but authentication is none"},
		{app.Config{Auth: "basic"}, `bad authentication "basic"`},
		{app.Config{Auth: app.AuthSigV4, AuthKeys: []sigv4.Key{k, k}}, "given twice"},
		{app.Config{Auth: app.AuthSigV4, AuthKeys: []sigv4.Key{{AccessKeyID: "AKID"}}}, "empty secret"},
	} {
		err := c.cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg.Auth, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %d keys: %v, want %q", c.cfg.Auth, len(c.cfg.AuthKeys), err, c.want)
		case err != nil && strings.Contains(err.Error(), "TOPSECRET"):
			t.Errorf("error shows the secret: %v", err)
		}
	}
}

// TestAppChecksSignatures runs the app's handler with sigv4 on: a signed
// request acts for its key's account, an unsigned one is refused, and the
// secrets are not logged.
func TestAppChecksSignatures(t *testing.T) {
	var logs bytes.Buffer
	keys, err := app.ParseKeys("AKIDHOME:homesecretXYZ,AKIDTENANT:tenantsecretXYZ:123456789012")
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, app.Config{Store: "mem://", Region: "eu-west-3", Auth: app.AuthSigV4, AuthKeys: keys,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})

	send := func(k sigv4.Key, region string) (int, map[string]any) {
		body := `{"QueueName":"q"}`
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", strings.NewReader(body))
		r.Header.Set("X-Amz-Target", "AmazonSQS.CreateQueue")
		r.Header.Set("Content-Type", "application/x-amz-json-1.0")
		sum := sha256.Sum256([]byte(body))
		if k.AccessKeyID != "" {
			err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey},
				r, hex.EncodeToString(sum[:]), "sqs", region, time.Now())
			if err != nil {
				t.Fatal(err)
			}
		}
		w := httptest.NewRecorder()
		a.Handler().ServeHTTP(w, r)
		return decode(t, w)
	}
	if code, out := send(keys[0], "eu-west-3"); code != 200 || out["QueueUrl"] != "http://127.0.0.1:9324/000000000000/q" {
		t.Errorf("home key: %d %v", code, out)
	}
	if code, out := send(keys[1], "eu-west-3"); code != 200 || out["QueueUrl"] != "http://127.0.0.1:9324/123456789012/q" {
		t.Errorf("tenant key: %d %v", code, out)
	}
	if code, out := send(keys[0], "us-east-1"); code != 403 || out["message"] != "Credential should be scoped to a valid region, not 'us-east-1'. " {
		t.Errorf("other region: %d %v", code, out)
	}
	if code, out := send(sigv4.Key{}, ""); code != 403 || out["__type"] != "com.amazonaws.sqs#AccessDenied" {
		t.Errorf("unsigned: %d %v", code, out)
	}
	if s := logs.String(); strings.Contains(s, "secretXYZ") || !strings.Contains(s, "AKIDTENANT") {
		t.Errorf("logs:\n%s", s)
	}
}

func decode(t *testing.T, w *httptest.ResponseRecorder) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("%d %s", w.Code, w.Body.String())
	}
	return w.Code, out
}
