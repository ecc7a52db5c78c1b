package pgnotify

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores/wake"
)

// A listening connection that goes silent (a proxy on the way stalls: its
// TCP connections stay open, nothing passes, so TCP never gives up on
// them) is found out by the quiet check: the transport reports itself
// degraded, listens again on a new connection, and another instance's
// events reach it again.
func TestSilentListenerIsNoticed(t *testing.T) {
	dsn := databaseURL(t)
	every, timeout := quietCheckEvery, quietCheckTimeout
	quietCheckEvery, quietCheckTimeout = 200*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { quietCheckEvery, quietCheckTimeout = every, timeout })

	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startStallingProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	channel := testChannel()
	ctx := context.Background()
	tr, err := Open(ctx, dsn, Options{Channel: channel, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	tr.conn.Host, tr.conn.Port = "127.0.0.1", proxy.port // the listening connection goes through the proxy
	h := wake.NewHub(wake.HubOptions{Transport: tr, Logger: quiet()})
	t.Cleanup(func() { _ = h.Close() })
	until(t, 10*time.Second, "the hub listens", func() bool { return !h.Degraded() })
	other, _ := newHub(t, dsn, channel)

	hint, cancel := h.Subscribe("q1")
	other.Publish(ctx, wake.Event{Queue: "q1", Count: 1})
	waitHint(t, hint, "an event before the stall")
	cancel()

	proxy.stall()
	until(t, 5*time.Second, "the silent listening connection is noticed (the transport reports itself degraded)", h.Degraded)
	until(t, 10*time.Second, "the transport listens again", func() bool { return !h.Degraded() })

	hint, cancel = h.Subscribe("q2")
	defer cancel()
	other.Publish(ctx, wake.Event{Queue: "q2", Count: 1})
	waitHint(t, hint, "an event after listening again")
}

func until(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
	}
}

// stallingProxy forwards TCP connections to target; stall makes the
// connections open then stop passing bytes, without closing them. Later
// connections pass.
type stallingProxy struct {
	port  uint16
	mu    sync.Mutex
	pairs []*proxyPair
	done  chan struct{}
}

type proxyPair struct {
	client, server net.Conn
	stalled        atomic.Bool
}

func startStallingProxy(t *testing.T, target string) *stallingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{port: uint16(ln.Addr().(*net.TCPAddr).Port), done: make(chan struct{})}
	t.Cleanup(func() {
		close(p.done)
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, pr := range p.pairs {
			_ = pr.client.Close()
			_ = pr.server.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			pr := &proxyPair{client: c, server: s}
			p.mu.Lock()
			p.pairs = append(p.pairs, pr)
			p.mu.Unlock()
			go p.pass(pr, c, s)
			go p.pass(pr, s, c)
		}
	}()
	return p
}

// pass copies src to dst until either closes; once the pair is stalled,
// what it reads is held back until the test ends.
func (p *stallingProxy) pass(pr *proxyPair, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if pr.stalled.Load() {
			<-p.done
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			_ = dst.Close()
			return
		}
	}
}

func (p *stallingProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.pairs {
		pr.stalled.Store(true)
	}
}
