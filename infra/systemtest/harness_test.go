package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/infra/ownbody"
)

// ---- PostgreSQL

// mustRun reports whether a missing prerequisite must fail the test rather
// than skip it: CI never skips.
func mustRun() bool {
	ci := strings.ToLower(os.Getenv("CI"))
	return ci == "true" || ci == "1" || os.Getenv("SLUICE_REQUIRE_POSTGRES") == "1"
}

// requirePostgres returns DATABASE_URL, or skips the test (fails it in CI or
// with SLUICE_REQUIRE_POSTGRES=1) when it is not set.
func requirePostgres(t *testing.T) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		const how = "start one with: eval \"$(bash infra/scripts/postgres.sh start)\" (make test-go does this)"
		if mustRun() {
			t.Fatalf("DATABASE_URL is not set, and CI=true or SLUICE_REQUIRE_POSTGRES=1 forbids skipping; %s", how)
		}
		t.Skipf("DATABASE_URL is not set: system tests need PostgreSQL; %s", how)
	}
	if sluiceBin == "" {
		t.Fatal("the sluice binary was not built (TestMain)")
	}
	return u
}

var nonIdent = regexp.MustCompile(`[^a-z0-9]+`)

// newDatabase creates a database of its own for the test on the server of
// adminURL and returns its URL; it is dropped when the test ends (after the
// instances using it, which are stopped first).
func newDatabase(t *testing.T, adminURL string) string {
	t.Helper()
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("DATABASE_URL must be a postgres:// URL, got %q (%v)", redact(adminURL), err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	base := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(base) > 30 {
		base = base[:30]
	}
	name := "sluice_st_" + base + "_" + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatalf("connect to DATABASE_URL %s: %v", redact(adminURL), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			t.Errorf("drop database %s: connect: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	du := *u
	du.Path = "/" + name
	t.Logf("database %s on %s", name, u.Host)
	return du.String()
}

// ---- Firestore

// requireFirestore returns FIRESTORE_EMULATOR_HOST, or skips the test
// (fails it in CI or with SLUICE_REQUIRE_FIRESTORE=1) when it is not set.
func requireFirestore(t *testing.T) string {
	t.Helper()
	h := os.Getenv("FIRESTORE_EMULATOR_HOST")
	if h == "" {
		const how = "start the emulator with: eval \"$(bash infra/scripts/firestore.sh start)\" (make test-go does this)"
		ci := strings.ToLower(os.Getenv("CI"))
		if ci == "true" || ci == "1" || os.Getenv("SLUICE_REQUIRE_FIRESTORE") == "1" {
			t.Fatalf("FIRESTORE_EMULATOR_HOST is not set, and CI=true or SLUICE_REQUIRE_FIRESTORE=1 forbids skipping; %s", how)
		}
		t.Skipf("FIRESTORE_EMULATOR_HOST is not set: the Firestore system tests need the emulator; %s", how)
	}
	if sluiceBin == "" {
		t.Fatal("the sluice binary was not built (TestMain)")
	}
	return h
}

// requirePubsub returns PUBSUB_EMULATOR_HOST, or skips the test (fails it
// under CI=true) when it is unset.
func requirePubsub(t *testing.T) string {
	t.Helper()
	h := os.Getenv("PUBSUB_EMULATOR_HOST")
	if h == "" {
		const how = "start the emulator with: eval \"$(bash infra/scripts/pubsub.sh start)\" (make test-go does this)"
		ci := strings.ToLower(os.Getenv("CI"))
		if ci == "true" || ci == "1" {
			t.Fatalf("PUBSUB_EMULATOR_HOST is not set, and CI=true forbids skipping; %s", how)
		}
		t.Skipf("PUBSUB_EMULATOR_HOST is not set: the Pub/Sub wake-up tests need the emulator; %s", how)
	}
	if sluiceBin == "" {
		t.Fatal("the sluice binary was not built (TestMain)")
	}
	return h
}

// newPubsubTopic returns the wake-ups URL pubsub://systest/<random>: a
// topic of the test's own on the emulator (the instances create it and
// their subscriptions, and reach the emulator through
// PUBSUB_EMULATOR_HOST, which they inherit).
func newPubsubTopic(t *testing.T, host string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	topic := "systest-" + hex.EncodeToString(b)
	t.Logf("Pub/Sub topic %s on the emulator at %s", topic, host)
	return "pubsub://systest/" + topic
}

// newFirestoreProject returns the store URL firestore://systest-<random>: a
// project of the test's own on the emulator, which keeps every project
// apart. Its documents are deleted when the test ends (after the instances
// using it, which are stopped first). The instances reach the emulator
// through FIRESTORE_EMULATOR_HOST, which they inherit.
func newFirestoreProject(t *testing.T, host string) string {
	t.Helper()
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	project := "systest-" + hex.EncodeToString(suffix)
	t.Cleanup(func() {
		// The emulator's own endpoint that deletes a database's documents.
		// It answers 409 Conflict ("Transaction lock timeout") while a
		// transaction holds locks, as those a killed instance left open do
		// for longer than a test should wait: try again for a few seconds.
		// Only housekeeping: a failure is logged, and the project's
		// documents stay in the emulator's memory.
		u := "http://" + host + "/emulator/v1/projects/" + project + "/databases/(default)/documents"
		hc := &http.Client{Timeout: 30 * time.Second}
		var last string
		for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
			req, err := http.NewRequest(http.MethodDelete, u, nil)
			if err != nil {
				t.Logf("clearing Firestore project %s: %v", project, err)
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				last = err.Error()
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status + ": " + strings.TrimSpace(string(body))
		}
		t.Logf("clearing Firestore project %s on the emulator: %s", project, last)
	})
	t.Logf("Firestore project %s on the emulator at %s", project, host)
	return "firestore://" + project
}

// ---- Spanner

// requireSpanner returns SPANNER_EMULATOR_HOST, or skips the test (fails
// it in CI or with SLUICE_REQUIRE_SPANNER=1) when it is not set.
func requireSpanner(t *testing.T) string {
	t.Helper()
	h := os.Getenv("SPANNER_EMULATOR_HOST")
	if h == "" {
		const how = "start the emulator with: eval \"$(bash infra/scripts/spanner.sh start)\" (make test-go does this)"
		ci := strings.ToLower(os.Getenv("CI"))
		if ci == "true" || ci == "1" || os.Getenv("SLUICE_REQUIRE_SPANNER") == "1" {
			t.Fatalf("SPANNER_EMULATOR_HOST is not set, and CI=true or SLUICE_REQUIRE_SPANNER=1 forbids skipping; %s", how)
		}
		t.Skipf("SPANNER_EMULATOR_HOST is not set: the Spanner system tests need the emulator; %s", how)
	}
	if sluiceBin == "" {
		t.Fatal("the sluice binary was not built (TestMain)")
	}
	return h
}

// newSpannerDatabase returns the store URL of a database of the test's
// own on the emulator (the first instance creates it; the emulator keeps
// it in memory until it stops). The instances reach the emulator through
// SPANNER_EMULATOR_HOST, which they inherit.
func newSpannerDatabase(t *testing.T, host string) string {
	t.Helper()
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	db := "s" + hex.EncodeToString(suffix)
	t.Logf("Spanner database %s on the emulator at %s", db, host)
	return "spanner://projects/systest/instances/systest/databases/" + db
}

// ---- the stores the multi-instance tests run on

// storeKind is a shared store that several `sluice serve` processes can
// run on as one SQS. The multi-instance tests run once on each (see
// onStores), as subtests named after it.
type storeKind struct {
	name string
	// newStore returns a store URL of the test's own, or skips the test
	// (fails it in CI) when the service behind it is missing.
	newStore func(t *testing.T) string
	// crossWake tells whether `sluice serve` on this store has, by
	// default, a wake-up transport between instances (PostgreSQL:
	// LISTEN/NOTIFY on the store's database; Firestore: snapshot
	// listeners). Without one a long poll learns of a send through
	// another instance only from its periodic check of the store
	// (service.repairInterval, 2 s): the wake-up probes then check that
	// every long poll is answered with its message within its wait, not
	// how fast.
	crossWake bool
	// moderate: the store is slow under contention (the Firestore
	// emulator locks pessimistically and breaks deadlocks only by a lock
	// timeout of about 2 s), so the loads on it are cut down
	// (loadSpec.moderated) and long polls across instances wait longer.
	moderate bool
	// env is added to each instance's environment (KEY=value), e.g. a
	// wake-up transport other than the store's default.
	env func(t *testing.T) []string
	// wakeKind, when set, is the wake-up transport each instance must log
	// that it uses (the kind wake.OpenTransport names).
	wakeKind string
}

var multiInstanceStores = []storeKind{
	{
		name: "postgres",
		newStore: func(t *testing.T) string {
			return newDatabase(t, requirePostgres(t))
		},
		crossWake: true,
	},
	{
		name: "firestore",
		newStore: func(t *testing.T) string {
			return newFirestoreProject(t, requireFirestore(t))
		},
		// Snapshot listeners (stores/wake/fslisten), the default for
		// firestore://.
		crossWake: true,
		moderate:  true,
	},
	{
		name: "spanner",
		newStore: func(t *testing.T) string {
			return newSpannerDatabase(t, requireSpanner(t))
		},
		// Pub/Sub, the default for spanner:// (a topic per database;
		// here one per test, on the emulator).
		env: func(t *testing.T) []string {
			return []string{"SLUICE_WAKEUPS=" + newPubsubTopic(t, requirePubsub(t))}
		},
		crossWake: true,
		// The emulator runs one read-write transaction at a time.
		moderate: true,
		wakeKind: "pubsub",
	},
}

// wakeVariants are stores with a wake-up transport other than their
// default, for the tests that check wake-ups across instances.
var wakeVariants = []storeKind{
	{
		name: "postgres+pubsub",
		newStore: func(t *testing.T) string {
			return newDatabase(t, requirePostgres(t))
		},
		// Pub/Sub (stores/wake/pubsub) instead of LISTEN/NOTIFY.
		env: func(t *testing.T) []string {
			return []string{"SLUICE_WAKEUPS=" + newPubsubTopic(t, requirePubsub(t))}
		},
		crossWake: true,
		wakeKind:  "pubsub",
	},
}

// onStores runs test as one subtest per store in multiInstanceStores (and
// in extra).
func onStores(t *testing.T, test func(t *testing.T, k storeKind), extra ...storeKind) {
	for _, k := range append(slices.Clip(multiInstanceStores), extra...) {
		t.Run(k.name, func(t *testing.T) { test(t, k) })
	}
}

// newCluster starts n instances on a store of the test's own.
func (k storeKind) newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	var env []string
	if k.env != nil {
		env = k.env(t)
	}
	c := newCluster(t, k.newStore(t), n, env...)
	if k.wakeKind != "" {
		for _, in := range c.insts {
			b, err := os.ReadFile(in.logPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte("transport="+k.wakeKind)) {
				t.Fatalf("%s does not log wake-ups transport=%s; log:\n%s", in.name, k.wakeKind, in.logTail(30))
			}
		}
	}
	c.crossWake = k.crossWake
	switch {
	case k.moderate:
		// The store is slow under contention (the Spanner emulator runs
		// one read-write transaction at a time): a woken poll's claim may
		// queue behind the load's for seconds, so it gets SQS's longest
		// wait. The latency is judged by the median all the same.
		c.probeWait = 20
	case !k.crossWake:
		// Room for a periodic check or two that finds the rows locked.
		c.probeWait = 10
	}
	return c
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// ---- sluice processes

// instance is one `sluice serve` process.
type instance struct {
	name    string
	url     string // http://127.0.0.1:PORT
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed when the process has exited
	waitErr error         // set before exited is closed
	killed  atomic.Bool
	stopped atomic.Bool
}

var listeningRE = regexp.MustCompile(`^sluice listening on (http://127\.0\.0\.1:\d+)$`)

// startInstance starts `sluice serve` on a free loopback port over store and
// waits until it listens. The test's cleanup stops it gracefully (SIGTERM)
// and fails the test when it does not exit cleanly or its log shows a data
// race or a panic.
func startInstance(t *testing.T, name, store string) *instance {
	t.Helper()
	return startInstanceEnv(t, name, store)
}

// startInstanceEnv is startInstance with environment variables added
// (KEY=value).
func startInstanceEnv(t *testing.T, name, store string, extraEnv ...string) *instance {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sluiceBin, "serve", "--addr", "127.0.0.1:0", "--store", store,
		"--shutdown-timeout", "10s", "--log-level", "info")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") {
			env = append(env, kv)
		}
	}
	if binRace {
		env = append(env, "GORACE=halt_on_error=0 exitcode=66")
	}
	cmd.Env = append(env, extraEnv...)
	cmd.Stderr = logFile
	// Should the test binary die (a timeout panic), so does the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	in := &instance{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	go func() {
		in.waitErr = cmd.Wait()
		logFile.Close()
		close(in.exited)
	}()
	t.Cleanup(func() { in.stop(t) })
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				<-in.exited
				t.Fatalf("%s exited before listening (%v); log:\n%s", name, in.waitErr, in.logTail(30))
			}
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				in.url = m[1]
				t.Logf("%s (pid %d) listening on %s", name, cmd.Process.Pid, in.url)
				return in
			}
		case <-timer.C:
			_ = cmd.Process.Kill()
			<-in.exited
			t.Fatalf("%s did not print its address within 30s; log:\n%s", name, in.logTail(30))
		}
	}
}

// alive tells whether the process is still running.
func (in *instance) alive() bool {
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

// kill ends the process with SIGKILL and waits for it.
func (in *instance) kill(t *testing.T) {
	t.Helper()
	in.killed.Store(true)
	if err := in.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Errorf("kill -9 %s: %v", in.name, err)
	}
	select {
	case <-in.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("%s still running 10s after SIGKILL", in.name)
	}
}

// stop ends the process gracefully (SIGTERM) and checks how it went.
func (in *instance) stop(t *testing.T) {
	if in.stopped.Swap(true) {
		return
	}
	if !in.killed.Load() {
		if !in.alive() {
			t.Errorf("%s exited on its own during the test: %v; log tail:\n%s", in.name, in.waitErr, in.logTail(40))
		} else {
			_ = in.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-in.exited:
				if in.waitErr != nil {
					t.Errorf("%s: unclean exit after SIGTERM: %v; log tail:\n%s", in.name, in.waitErr, in.logTail(40))
				}
			case <-time.After(20 * time.Second):
				_ = in.cmd.Process.Kill()
				<-in.exited
				t.Errorf("%s did not exit within 20s of SIGTERM; log tail:\n%s", in.name, in.logTail(40))
			}
		}
	}
	log, _ := os.ReadFile(in.logPath)
	if bytes.Contains(log, []byte("WARNING: DATA RACE")) {
		t.Errorf("%s: the race detector found a data race in sluice; log:\n%s", in.name, excerpt(log, "WARNING: DATA RACE", 60))
	}
	if bytes.Contains(log, []byte("panic:")) {
		t.Errorf("%s: panic in sluice; log:\n%s", in.name, excerpt(log, "panic:", 40))
	}
	if t.Failed() {
		t.Logf("%s log tail:\n%s", in.name, in.logTail(25))
	}
}

// logTail returns the last n lines of the instance's log.
func (in *instance) logTail(n int) string {
	b, err := os.ReadFile(in.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// logSummary counts the log's warnings and errors by message.
func (in *instance) logSummary() string {
	b, err := os.ReadFile(in.logPath)
	if err != nil {
		return err.Error()
	}
	counts := map[string]int{}
	msgRE := regexp.MustCompile(`level=(WARN|ERROR) msg=("(?:[^"\\]|\\.)*"|\S+)`)
	for _, line := range strings.Split(string(b), "\n") {
		if m := msgRE.FindStringSubmatch(line); m != nil {
			counts[m[1]+" "+m[2]]++
		}
		if strings.Contains(line, "listener reconnected") {
			counts["INFO listener reconnected"]++
		}
	}
	if len(counts) == 0 {
		return "no warnings or errors"
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteString("; ")
		}
		fmt.Fprintf(&sb, "%s ×%d", k, counts[k])
	}
	return sb.String()
}

func excerpt(log []byte, marker string, lines int) string {
	i := bytes.Index(log, []byte(marker))
	if i < 0 {
		return ""
	}
	rest := strings.Split(string(log[i:]), "\n")
	if len(rest) > lines {
		rest = rest[:lines]
	}
	return strings.Join(rest, "\n")
}

// ---- SDK clients

// newHTTPClient is shared by a test's SDK clients. Long polls last up to
// 5 s here; the timeout bounds everything else. Its requests carry bodies
// of their own (ownbody): with the SDK's own body a late write loop in
// net/http can lose an answer the server sent, and the SDK's retry then
// stores a send twice or finds a long poll's message in flight, which the
// ledgers and probes would take for the server's fault.
func newHTTPClient() *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &http.Client{Transport: ownbody.Transport{Next: tr}, Timeout: 20 * time.Second}
}

// newClient is an SQS client for one instance. The SDK retries as usual
// (3 attempts, so a refused connection or a 500 is retried) but with a
// short backoff and without the client-side retry quota, which would
// otherwise turn an outage into "retry quota exceeded" for a while.
func newClient(endpoint string, hc *http.Client) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   hc,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.MaxBackoff = 300 * time.Millisecond
			o.RateLimiter = ratelimit.None
		}),
	})
}

// errKind names an error for the counts: the API error code, or the kind of
// transport failure.
func errKind(err error) string {
	var ae smithy.APIError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &ae):
		return "api:" + ae.ErrorCode()
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	s := err.Error()
	for _, k := range []string{"connection refused", "connection reset", "EOF", "broken pipe", "timeout", "retry quota"} {
		if strings.Contains(s, k) {
			return "net:" + k
		}
	}
	return "other"
}

// apiCode is the error's API error code, or "" when it is not an API error.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// ---- cluster: instances and their clients

type cluster struct {
	t       *testing.T
	insts   []*instance
	clients []*sqs.Client
	hc      *http.Client
	// crossWake: a send through one instance wakes long polls on the
	// others at once (storeKind.crossWake); probeWait is the probes' long
	// poll's WaitTimeSeconds.
	crossWake bool
	probeWait int32
	// urls[queue][i] is the queue's URL as instance i names it.
	mu   sync.Mutex
	urls map[string][]string
}

// newCluster starts n instances on store, each with extraEnv (KEY=value)
// added to its environment.
func newCluster(t *testing.T, store string, n int, extraEnv ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, hc: newHTTPClient(), urls: map[string][]string{}, crossWake: true, probeWait: 5}
	for i := range n {
		in := startInstanceEnv(t, fmt.Sprintf("sluice-%c", 'A'+i), store, extraEnv...)
		c.insts = append(c.insts, in)
		c.clients = append(c.clients, newClient(in.url, c.hc))
	}
	t.Cleanup(c.hc.CloseIdleConnections)
	return c
}

// createQueue creates a queue through instance 0 and looks its URL up
// through every instance.
func (c *cluster) createQueue(ctx context.Context, name string, attrs map[string]string) {
	c.t.Helper()
	if _, err := c.clients[0].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs}); err != nil {
		c.t.Fatalf("CreateQueue %s: %v", name, err)
	}
	urls := make([]string, len(c.clients))
	for i, cl := range c.clients {
		out, err := cl.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			c.t.Fatalf("GetQueueUrl %s through %s: %v", name, c.insts[i].name, err)
		}
		urls[i] = aws.ToString(out.QueueUrl)
	}
	c.mu.Lock()
	c.urls[name] = urls
	c.mu.Unlock()
}

func (c *cluster) url(queue string, i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[queue][i]
}

// counts returns the queue's visible, in-flight and delayed message counts,
// asked of the first instance that answers.
func (c *cluster) counts(ctx context.Context, queue string) ([3]int, error) {
	var last error
	for i, cl := range c.clients {
		if !c.insts[i].alive() {
			continue
		}
		out, err := cl.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(c.url(queue, i)),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
				types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
				types.QueueAttributeNameApproximateNumberOfMessagesDelayed},
		})
		if err != nil {
			last = err
			continue
		}
		var n [3]int
		for j, k := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
			fmt.Sscan(out.Attributes[k], &n[j])
		}
		return n, nil
	}
	if last == nil {
		last = errors.New("no instance alive")
	}
	return [3]int{}, last
}

// ---- wake-up probes

// probeResult is one long poll woken by a send through another instance.
type probeResult struct {
	poller, sender string
	latency        time.Duration // from the send's start to the poll's answer
	err            error
}

func (p probeResult) String() string {
	if p.err != nil {
		return fmt.Sprintf("%s<-%s: %v", p.poller, p.sender, p.err)
	}
	return fmt.Sprintf("%s<-%s %s", p.poller, p.sender, p.latency.Round(time.Millisecond))
}

// probeDelay is how long a probe lets its long poll settle into waiting
// before sending. A long poll that nobody wakes looks again every 2 s
// (service.repairInterval), so a wake-up through NOTIFY answers well within
// notifyFast of the send, while the periodic look comes about
// 2s-probeDelay after it.
const (
	probeDelay = 400 * time.Millisecond
	notifyFast = time.Second
)

var probeSeq atomic.Int64

// probe starts a long poll (WaitTimeSeconds=c.probeWait) on queue through instance
// poller, sends one message through instance sender and measures how soon
// the poll answers with it. The queue must be empty and used by nobody else.
func (c *cluster) probe(ctx context.Context, queue string, poller, sender int) probeResult {
	res := probeResult{poller: c.insts[poller].name, sender: c.insts[sender].name}
	body := fmt.Sprintf("P:%d", probeSeq.Add(1))
	type got struct {
		out *sqs.ReceiveMessageOutput
		err error
		at  time.Time
	}
	ch := make(chan got, 1)
	pollStart := time.Now()
	go func() {
		out, err := c.clients[poller].ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(c.url(queue, poller)), MaxNumberOfMessages: 1,
			WaitTimeSeconds: c.probeWait, VisibilityTimeout: 30,
		})
		ch <- got{out, err, time.Now()}
	}()
	select {
	case g := <-ch:
		res.err = fmt.Errorf("long poll answered before the send, after %s: %v (%d messages)", time.Since(pollStart), g.err, lenMsgs(g.out))
		return res
	case <-time.After(probeDelay):
	}
	sent := time.Now()
	if _, err := c.clients[sender].SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(c.url(queue, sender)), MessageBody: aws.String(body)}); err != nil {
		res.err = fmt.Errorf("probe send: %w", err)
		<-ch
		return res
	}
	g := <-ch
	switch {
	case g.err != nil:
		res.err = fmt.Errorf("long poll: %w", g.err)
	case len(g.out.Messages) == 0:
		res.err = fmt.Errorf("long poll (WaitTimeSeconds=%d) ended empty %s after the send through %s", c.probeWait, g.at.Sub(sent).Round(time.Millisecond), res.sender)
	case aws.ToString(g.out.Messages[0].Body) != body:
		res.err = fmt.Errorf("long poll got %q, want %q", aws.ToString(g.out.Messages[0].Body), body)
	default:
		res.latency = g.at.Sub(sent)
		if _, err := c.clients[poller].DeleteMessage(ctx, &sqs.DeleteMessageInput{
			QueueUrl: aws.String(c.url(queue, poller)), ReceiptHandle: g.out.Messages[0].ReceiptHandle}); err != nil {
			res.err = fmt.Errorf("deleting the probe message: %w", err)
		}
	}
	return res
}

func lenMsgs(out *sqs.ReceiveMessageOutput) int {
	if out == nil {
		return 0
	}
	return len(out.Messages)
}

func medianLatency(rs []probeResult) time.Duration {
	var ds []time.Duration
	for _, r := range rs {
		if r.err == nil {
			ds = append(ds, r.latency)
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// ---- the throwaway PostgreSQL script

// pgScript is infra/scripts/postgres.sh, from this package's directory.
var pgScript = filepath.Join("..", "scripts", "postgres.sh")

// runPGScript runs the script with DATABASE_URL removed from its
// environment (so `start` starts a cluster instead of echoing the URL) and
// returns its stdout; stderr goes to the test log on failure.
func runPGScript(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{pgScript}, args...)...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "SLUICE_PG_DIR=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.Stdin = nil
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("postgres.sh %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

var exportRE = regexp.MustCompile(`(?m)^export DATABASE_URL='([^']*)'$`)

// privatePostgres starts a PostgreSQL cluster for this test alone, in a
// directory of its own, with infra/scripts/postgres.sh; it is stopped and
// removed when the test ends. It returns the cluster's URL and directory.
func privatePostgres(t *testing.T) (string, string) {
	t.Helper()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	// Not under t.TempDir(): as root the server runs as the postgres user,
	// which must be able to reach the directory; and the unix socket path
	// must stay short.
	dir := filepath.Join(os.TempDir(), "sluice-st-pg-"+hex.EncodeToString(suffix))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := runPGScript(ctx, "start", dir)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := runPGScript(ctx, "stop", dir); err != nil {
			t.Errorf("stopping the private PostgreSQL: %v", err)
		}
	})
	if err != nil {
		if mustRun() {
			t.Fatalf("cannot start a private PostgreSQL: %v", err)
		}
		t.Skipf("cannot start a private PostgreSQL with %s: %v", pgScript, err)
	}
	m := exportRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("postgres.sh start printed no DATABASE_URL: %q", out)
	}
	t.Logf("private PostgreSQL in %s at %s (started in %s)", dir, redact(m[1]), time.Since(start).Round(time.Millisecond))
	return m[1], dir
}
