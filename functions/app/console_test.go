package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/sigv4"
)

func consoleGet(h http.Handler, path, user, pass string) *http.Response {
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9324"+path, nil)
	if user != "" {
		r.SetBasicAuth(user, pass)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// The console is off unless switched on; on, it is behind the API's keys
// when those are checked, and the front page names it.
func TestConsoleRouting(t *testing.T) {
	off := newApp(t, app.Config{Store: "mem://"})
	if resp := consoleGet(off.Handler(), "/_sluice/console/", "", ""); resp.StatusCode == http.StatusOK {
		t.Fatalf("console off: GET answered 200")
	}

	open := newApp(t, app.Config{Store: "mem://", Console: true})
	resp := consoleGet(open.Handler(), "/_sluice/console/", "", "")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "sluice console") {
		t.Fatalf("console on: %d %.80s", resp.StatusCode, b)
	}
	front := consoleGet(open.Handler(), "/", "", "")
	fb, _ := io.ReadAll(front.Body)
	if !strings.Contains(string(fb), "/_sluice/console/") {
		t.Errorf("front page does not name the console:\n%s", fb)
	}

	keys := []sigv4.Key{{AccessKeyID: "AKIDAPP", SecretAccessKey: "appsecret"}}
	signed := newApp(t, app.Config{Store: "mem://", Console: true, Auth: app.AuthSigV4, AuthKeys: keys})
	if resp := consoleGet(signed.Handler(), "/_sluice/console/api/queues", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("keys checked, no credentials: %d, want 401", resp.StatusCode)
	}
	if resp := consoleGet(signed.Handler(), "/_sluice/console/api/queues", "AKIDAPP", "appsecret"); resp.StatusCode != http.StatusOK {
		t.Fatalf("keys checked, the key's credentials: %d, want 200", resp.StatusCode)
	}
	// Functions switch it on with SLUICE_CONSOLE.
	cfg, err := app.FromEnv(envOf(map[string]string{"SLUICE_STORE": "mem://", "SLUICE_AUTH": "none", "SLUICE_CONSOLE": "true"}), io.Discard)
	if err != nil || !cfg.Console {
		t.Fatalf("SLUICE_CONSOLE=true: console %v, %v", cfg.Console, err)
	}
	if _, err := app.FromEnv(envOf(map[string]string{"SLUICE_AUTH": "none", "SLUICE_CONSOLE": "maybe"}), io.Discard); err == nil {
		t.Fatalf("SLUICE_CONSOLE=maybe accepted")
	}
}
