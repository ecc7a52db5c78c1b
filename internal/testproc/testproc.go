// Package testproc holds what the tests that run processes share: a free
// loopback port to give a process, and a buffer its output is copied into
// while the test reads it.
package testproc

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// Output is a buffer safe to read while a process's output (or a
// server's goroutines) write to it.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String is what was written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
