package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/infra/bench"
)

// TestBenchQueryProtocol runs `sluice bench --protocol query` against a
// spawned `sluice serve --store mem://` (this test binary acting as
// sluice), FIFO with batches: the run passes its checks.
func TestBenchQueryProtocol(t *testing.T) {
	t.Setenv("SLUICE_TEST_RUN_MAIN", "1") // the server spawned is this binary acting as sluice
	// The spawned server's log and the command's progress lines share
	// stderr from two goroutines.
	var stdout bytes.Buffer
	errs := &lockedBuffer{}
	code := run(context.Background(), []string{"bench", "--spawn", "mem://", "--server-bin", os.Args[0], "--protocol", "query",
		"--fifo", "--batch", "--producers", "2", "--consumers", "2", "--groups", "4",
		"--duration", "1s", "--warmup", "200ms", "--drain", "10s", "--json"}, &stdout, errs)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs.String())
	}
	var res bench.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Checks.Sent == 0 || res.Checks.Received != res.Checks.Sent || res.Requests["SendMessageBatch"] == 0 {
		t.Errorf("checks %+v, requests %v, errors %v", res.Checks, res.Requests, res.ErrorSamples)
	}
}

func TestBenchBadProtocol(t *testing.T) {
	code, _, errs := runCmd("bench", "--endpoint", "http://127.0.0.1:1", "--protocol", "xml", "--duration", "1s")
	if code == 0 || !strings.Contains(errs, "bad protocol") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
