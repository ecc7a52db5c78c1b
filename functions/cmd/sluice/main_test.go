package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testproc"
	"github.com/sluicehq/sluice/stores/registry"
)

// TestMain lets the test binary act as the command: run with
// SLUICE_TEST_RUN_MAIN=1 it runs main with its arguments.
func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpAndVersion(t *testing.T) {
	if code, out, _ := runCmd("version"); code != 0 || !strings.HasPrefix(out, "sluice ") {
		t.Errorf("version: %d %q", code, out)
	}
	if code, out, _ := runCmd("help"); code != 0 || !strings.Contains(out, "sluice serve") || !strings.Contains(out, "SLUICE_STORE") {
		t.Errorf("help: %d %q", code, out)
	}
	if code, _, errs := runCmd(); code != 2 || !strings.Contains(errs, "Usage") {
		t.Errorf("no command: %d %q", code, errs)
	}
	if code, _, errs := runCmd("frobnicate"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Errorf("unknown command: %d %q", code, errs)
	}
	if code, _, _ := runCmd("serve", "--help"); code != 0 {
		t.Errorf("serve --help: %d", code)
	}
}

func TestServeRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--account-id", "12"},
		{"serve", "--region", "US East"},
		{"serve", "--base-url", "sqs.example.com"},
		{"serve", "--base-url", "http://h/with/path"},
		{"serve", "--log-level", "loud"},
		{"serve", "--log-format", "xml"},
		{"serve", "--shutdown-timeout", "0s"},
		{"serve", "--body-memory", "-1"},
		{"serve", "--body-memory", "lots"},
		{"serve", "--body-timeout", "-1s"},
		{"serve", "--nope"},
		{"serve", "extra"},
	} {
		if code, _, _ := runCmd(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestServeEnvDefaults(t *testing.T) {
	t.Setenv("SLUICE_ACCOUNT_ID", "bad")
	if code, _, errs := runCmd("serve", "--store", "mem://"); code != 2 || !strings.Contains(errs, `bad account id "bad"`) {
		t.Errorf("env account id not used: %d %q", code, errs)
	}
}

// TestShipsEveryStore: stores.go links every store of the module, so
// --store opens each form.
func TestShipsEveryStore(t *testing.T) {
	want := []string{"", "embedded", "file", "firestore", "mem", "memory", "postgres", "postgresql", "spanner"}
	if got := registry.Schemes(); !slices.Equal(got, want) {
		t.Errorf("schemes %q; want %q", got, want)
	}
}

func TestServeUnknownStore(t *testing.T) {
	code, _, errs := runCmd("serve", "--addr", "127.0.0.1:0", "--store", "redis://:pw@h")
	if code != 1 || !strings.Contains(errs, "postgres://") || strings.Contains(errs, "pw@") {
		t.Errorf("redis: %d %q", code, errs)
	}
}

func TestServeUnreachableStore(t *testing.T) {
	// Nothing listens on port 1: serve must fail at start, and say so
	// without showing the password.
	code, _, errs := runCmd("serve", "--addr", "127.0.0.1:0", "--store", "postgres://u:pw@127.0.0.1:1/db?connect_timeout=2")
	if code != 1 || !strings.Contains(errs, "PostgreSQL") || strings.Contains(errs, "pw@") {
		t.Errorf("postgres: %d %q", code, errs)
	}
}

func TestMaintain(t *testing.T) {
	if code, _, errs := runCmd("maintain", "--store", "mem://"); code != 0 {
		t.Errorf("maintain mem: %d %s", code, errs)
	}
	dir := filepath.Join(t.TempDir(), "data")
	if code, _, errs := runCmd("maintain", "--store", "file://"+dir, "--log-format", "json"); code != 0 || !strings.Contains(errs, `"msg":"maintenance done"`) {
		t.Errorf("maintain embedded: %d %s", code, errs)
	}
}

var listeningRE = regexp.MustCompile(`^sluice listening on (http://127\.0\.0\.1:(\d+))$`)

// startServer runs `sluice serve` as a child process and returns its base
// URL once it listens.
func startServer(t *testing.T, args ...string) (*exec.Cmd, string, *testproc.Output) {
	t.Helper()
	return startServerIn(t, "", args...)
}

// startServerIn is startServer in the working directory dir ("": this one).
func startServerIn(t *testing.T, dir string, args ...string) (*exec.Cmd, string, *testproc.Output) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLUICE_TEST_RUN_MAIN=1")
	var stderr testproc.Output // written by exec's copying goroutine while tests read it
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		m := listeningRE.FindStringSubmatch(line)
		if m == nil || m[2] == "0" {
			t.Fatalf("unexpected first line %q", line)
		}
		return cmd, m[1], &stderr
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not start; stderr: %s", stderr.String())
	}
	return nil, "", nil
}

func queryGet(t *testing.T, base string, params url.Values) (int, []byte) {
	t.Helper()
	resp, err := http.Get(base + "/?" + params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestServeGracefulShutdown starts the server, parks a 20-second long poll,
// sends SIGTERM and checks that the poll ends at once with an empty answer
// and the process exits 0.
func TestServeGracefulShutdown(t *testing.T) {
	cmd, base, stderr := startServer(t, "--store", "mem://", "--log-level", "debug")

	code, body := queryGet(t, base, url.Values{"Action": {"CreateQueue"}, "QueueName": {"q1"}})
	var created struct {
		URL string `xml:"CreateQueueResult>QueueUrl"`
	}
	if err := xml.Unmarshal(body, &created); code != 200 || err != nil || created.URL != base+"/000000000000/q1" {
		t.Fatalf("CreateQueue: %d %s", code, body)
	}

	type result struct {
		code int
		body []byte
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		code, body := queryGet(t, base, url.Values{"Action": {"ReceiveMessage"}, "QueueUrl": {created.URL}, "WaitTimeSeconds": {"20"}})
		done <- result{code, body, time.Since(start)}
	}()
	time.Sleep(500 * time.Millisecond) // let the poll start waiting

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.code != 200 || !bytes.Contains(r.body, []byte("<ReceiveMessageResult/>")) {
			t.Errorf("long poll answered %d %s", r.code, r.body)
		}
		if r.took > 10*time.Second {
			t.Errorf("long poll took %s after SIGTERM", r.took)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("long poll did not end on shutdown")
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("server did not exit")
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("stderr: %s", stderr.String())
	}
	// The listener is closed.
	if _, err := http.Get(base + "/"); err == nil {
		t.Error("server still accepts connections")
	}
}

// TestServeBaseURL checks that --base-url fixes the host of queue URLs.
func TestServeBaseURL(t *testing.T) {
	_, base, _ := startServer(t, "--store", "mem://", "--base-url", "https://sqs.example.com/", "--account-id", "123456789012")
	code, body := queryGet(t, base, url.Values{"Action": {"CreateQueue"}, "QueueName": {"q2"}})
	if code != 200 || !bytes.Contains(body, []byte("<QueueUrl>https://sqs.example.com/123456789012/q2</QueueUrl>")) {
		t.Errorf("CreateQueue: %d %s", code, body)
	}
}

// TestServeHeaderLimit: the server's header limit is the deliberate 64 KiB,
// not net/http's 1 MiB default. Past it net/http answers 431 itself, in
// plain text: no handler runs.
func TestServeHeaderLimit(t *testing.T) {
	_, base, _ := startServer(t, "--store", "mem://")
	get := func(header int) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/?Action=ListQueues", nil)
		req.Header.Set("X-Padding", strings.Repeat("p", header))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(32 << 10); code != 200 {
		t.Errorf("32 KiB of headers: %d, want 200", code)
	}
	if code := get(128 << 10); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("128 KiB of headers: %d, want 431", code)
	}
}

// TestServeBodyMemory: --body-memory reaches the handler's budget.
func TestServeBodyMemory(t *testing.T) {
	_, base, _ := startServer(t, "--store", "mem://", "--body-memory", "64")
	resp, err := http.Post(base+"/", "application/x-www-form-urlencoded",
		strings.NewReader("Action=CreateQueue&QueueName="+strings.Repeat("q", 70)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !bytes.Contains(b, []byte("<Code>RequestThrottled</Code>")) {
		t.Errorf("a body past --body-memory: %d %s", resp.StatusCode, b)
	}
}
