package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is a `sluice serve` process started by Spawn.
type Server struct {
	URL   string // http://127.0.0.1:PORT
	PID   int
	Store string // the store URL, password redacted

	cmd  *exec.Cmd
	done chan struct{}
	err  error // of Wait, once done is closed

	mu      sync.Mutex
	lines   int
	samples []string
}

// listenPrefix is what `sluice serve` prints on standard output once it
// listens.
const listenPrefix = "sluice listening on "

// Spawn starts `bin serve --addr 127.0.0.1:0 --store store --log-level warn`
// followed by extra (e.g. --wakeups URL) and waits (up to a minute) until it prints the address it listens on.
// What the server writes to stderr goes to log, prefixed with "server: ",
// and is counted.
func Spawn(ctx context.Context, bin, store string, log io.Writer, extra ...string) (*Server, error) {
	return SpawnOn(ctx, "", bin, store, log, extra...)
}

// SpawnOn is Spawn with the server pinned to cpus (a taskset(1) list such
// as "1"), when not empty: taskset sets the affinity and execs the server,
// so the process id is the server's and every thread it starts inherits
// the set.
func SpawnOn(ctx context.Context, cpus, bin, store string, log io.Writer, extra ...string) (*Server, error) {
	if log == nil {
		log = io.Discard
	}
	s := &Server{Store: Redact(store), done: make(chan struct{})}
	addr := make(chan string, 1)
	var logMu sync.Mutex
	out := &lineWriter{fn: func(line string) {
		if u, ok := strings.CutPrefix(line, listenPrefix); ok {
			select {
			case addr <- strings.TrimSpace(u):
			default:
			}
			return
		}
		logMu.Lock()
		fmt.Fprintf(log, "server: %s\n", line)
		logMu.Unlock()
	}}
	errw := &lineWriter{fn: func(line string) {
		s.mu.Lock()
		s.lines++
		if len(s.samples) < 10 {
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			s.samples = append(s.samples, line)
		}
		s.mu.Unlock()
		logMu.Lock()
		fmt.Fprintf(log, "server: %s\n", line)
		logMu.Unlock()
	}}
	argv := append([]string{bin, "serve", "--addr", "127.0.0.1:0", "--store", store, "--log-level", "warn"}, extra...)
	if cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout = out
	s.cmd.Stderr = errw
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	s.PID = s.cmd.Process.Pid
	go func() {
		s.err = s.cmd.Wait()
		out.flush()
		errw.flush()
		close(s.done)
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case u := <-addr:
		s.URL = u
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s serve exited before listening (%v): %s", bin, s.err, strings.Join(s.LogSamples(), " | "))
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-s.done
		return nil, fmt.Errorf("%s serve did not print %q within a minute", bin, listenPrefix)
	case <-ctx.Done():
		_ = s.cmd.Process.Kill()
		<-s.done
		return nil, ctx.Err()
	}
}

// LogSamples are the first lines the server wrote to stderr; LogLines how
// many it wrote.
func (s *Server) LogSamples() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.samples...)
}

func (s *Server) LogLines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines
}

// Stop sends SIGTERM and waits for the exit (40 s, then SIGKILL). It
// returns the exit status.
func (s *Server) Stop() (int, error) {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(40 * time.Second)
		select {
		case <-s.done:
			timer.Stop()
		case <-timer.C:
			_ = s.cmd.Process.Kill()
			<-s.done
			return -1, errors.New("the server did not stop within 40s of SIGTERM; killed")
		}
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		return ee.ExitCode(), nil
	}
	if s.err != nil {
		return -1, s.err
	}
	return 0, nil
}

// Stats returns what is known about the server so far.
func (s *Server) Stats() *ServerStats {
	return &ServerStats{PID: s.PID, Spawned: true, Store: s.Store, LogLines: s.LogLines(), LogSamples: s.LogSamples()}
}

// lineWriter calls fn for every complete line written to it.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	fn  func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.buf[:i]), "\r")
		w.buf = w.buf[i+1:]
		w.fn(line)
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.fn(string(w.buf))
		w.buf = nil
	}
}

// Redact hides the password of a store URL.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// StoreKind names the kind of store a URL opens: memory, embedded or
// postgres.
func StoreKind(raw string) string {
	scheme, _, ok := strings.Cut(strings.TrimSpace(raw), "://")
	if !ok {
		return "embedded"
	}
	switch strings.ToLower(scheme) {
	case "mem", "memory":
		return "memory"
	case "postgres", "postgresql":
		return "postgres"
	case "file", "embedded":
		return "embedded"
	}
	return strings.ToLower(scheme)
}
