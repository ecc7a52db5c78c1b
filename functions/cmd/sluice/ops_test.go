package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestServeRejectsBadOpsFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--request-log-level", "loud"},
		{"serve", "--metrics-max-queues", "-1"},
		{"serve", "--queues", filepath.Join(t.TempDir(), "missing.json")},
	} {
		if code, _, _ := runCmd(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	for _, env := range []string{"SLUICE_DEV_NO_COOLDOWNS=maybe", "SLUICE_METRICS_MAX_QUEUES=many"} {
		k, v, _ := strings.Cut(env, "=")
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			if code, _, errs := runCmd("serve", "--store", "mem://"); code != 2 || !strings.Contains(errs, k) {
				t.Errorf("%s: exit %d %q, want 2", env, code, errs)
			}
		})
	}
}

func writeQueues(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "queues.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A bad queues file is bad usage (exit 2) with a message that names the
// file, the line or the queue, and what is wrong; nothing is served.
func TestServeBadQueuesFile(t *testing.T) {
	syntax := writeQueues(t, "{\"queues\": [\n  {\"name\": \"a\"\n]}")
	code, out, errs := runCmd("serve", "--addr", "127.0.0.1:0", "--store", "mem://", "--queues", syntax)
	if code != 2 || out != "" || !strings.Contains(errs, "sluice serve: --queues "+syntax+": line 3: ") {
		t.Errorf("syntax error: exit %d %q %q", code, out, errs)
	}
	refused := writeQueues(t, `{"queues": [{"name": "ok"}, {"name": "slow", "attributes": {"DelaySeconds": 901}}]}`)
	code, out, errs = runCmd("serve", "--addr", "127.0.0.1:0", "--store", "mem://", "--queues", refused)
	if code != 2 || out != "" || !strings.Contains(errs, `sluice serve: --queues `+refused+`: queue "slow": InvalidAttributeValue: Invalid value for the parameter DelaySeconds.`) {
		t.Errorf("refused queue: exit %d %q %q", code, out, errs)
	}
}

// TestServeOps starts the command on the default embedded store with the
// operator's switches and checks each on the wire.
func TestServeOps(t *testing.T) {
	dir := t.TempDir()
	queues := writeQueues(t, `{"queues": [{"name": "boot", "attributes": {"VisibilityTimeout": 5}}]}`)
	_, base, stderr := startServerIn(t, dir, "--metrics-addr", "127.0.0.1:0", "--queues", queues,
		"--dev-no-cooldowns", "--log-format", "json", "--request-log-level", "info")

	records := func(msg string) []map[string]any {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == msg {
				out = append(out, rec)
			}
		}
		return out
	}
	// stderr is copied from a pipe: the line may trail the stdout one.
	deadline := time.Now().Add(5 * time.Second)
	for len(records("listening")) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	listening := records("listening")
	if len(listening) != 1 {
		t.Fatalf("no listening line: %s", stderr)
	}
	l := listening[0]
	wantDir, _ := filepath.EvalSymlinks(filepath.Join(dir, "sluice-data"))
	gotDir, _ := filepath.EvalSymlinks(l["store_dir"].(string))
	if l["store_kind"] != "embedded" || gotDir != wantDir || l["dev_no_cooldowns"] != true ||
		!strings.HasPrefix(l["version"].(string), "(devel) (") {
		t.Errorf("listening line %v; want the embedded store in %s", l, wantDir)
	}

	// The queues file's queue is there.
	code, body := queryGet(t, base, url.Values{"Action": {"GetQueueUrl"}, "QueueName": {"boot"}})
	if code != 200 || !strings.Contains(string(body), "/000000000000/boot</QueueUrl>") {
		t.Errorf("GetQueueUrl boot: %d %s", code, body)
	}
	// No cooldown: delete and create again at once.
	queryGet(t, base, url.Values{"Action": {"DeleteQueue"}, "QueueUrl": {base + "/000000000000/boot"}})
	if code, body := queryGet(t, base, url.Values{"Action": {"CreateQueue"}, "QueueName": {"boot"}}); code != 200 {
		t.Errorf("re-create at once: %d %s", code, body)
	}

	// Metrics live on --metrics-addr only; health on both.
	ml := records("metrics listening")
	if len(ml) != 1 {
		t.Fatalf("no metrics listening line: %s", stderr)
	}
	metrics := "http://" + ml[0]["addr"].(string)
	resp, err := http.Get(metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `sluice_requests_total{action="CreateQueue",error_code=""} 1`) {
		t.Errorf("metrics: %d %.2000s", resp.StatusCode, b)
	}
	// The embedded store counts its durable commits: the queues file's
	// queue, its deletion and its re-creation were one each at least.
	if m := regexp.MustCompile(`(?m)^sluice_store_commits_total (\d+)$`).FindStringSubmatch(string(b)); m == nil {
		t.Errorf("metrics: no sluice_store_commits_total")
	} else if n, _ := strconv.Atoi(m[1]); n < 3 {
		t.Errorf("sluice_store_commits_total %d, want at least 3", n)
	}
	for _, u := range []string{base + "/healthz", base + "/readyz", metrics + "/healthz", metrics + "/readyz"} {
		resp, err := http.Get(u)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", u, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	if resp, err := http.Get(base + "/metrics"); err != nil || resp.StatusCode == 200 {
		t.Errorf("main listener serves /metrics: %v %v", resp, err)
	}

	// One request line per request, at info.
	deadline = time.Now().Add(5 * time.Second)
	for len(records("request")) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	found := false
	for _, r := range records("request") {
		found = found || (r["action"] == "GetQueueUrl" && r["queue"] == "boot" && r["status"] == float64(200) && r["level"] == "INFO")
	}
	if !found {
		t.Errorf("no request line for GetQueueUrl boot: %s", stderr)
	}
}

// TestServeConsole: the console is off by default and on with --console.
func TestServeConsole(t *testing.T) {
	status := func(base string) int {
		resp, err := http.Get(base + "/_sluice/console/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_, off, _ := startServer(t, "--store", "mem://")
	if got := status(off); got == http.StatusOK {
		t.Errorf("without --console: %d", got)
	}
	_, on, _ := startServer(t, "--store", "mem://", "--console")
	if got := status(on); got != http.StatusOK {
		t.Errorf("with --console: %d, want 200", got)
	}
}
