package systemtest

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// TestPubsubOutage cuts two instances on PostgreSQL off Pub/Sub, their
// wake-ups transport, for a few seconds under load, through a proxy between
// them and the emulator: nothing acknowledged is lost and FIFO order holds
// (the load's ledger), long polls are still answered while it is down (by
// their periodic look at the store), and wake-ups come back by themselves
// once it is reachable again.
func TestPubsubOutage(t *testing.T) {
	host := requirePubsub(t)
	db := newDatabase(t, requirePostgres(t))
	px := newCutProxy(t, host)
	c := newCluster(t, db, 2, "SLUICE_WAKEUPS="+newPubsubTopic(t, host), "PUBSUB_EMULATOR_HOST="+px.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const vis = 2 * time.Second
	c.createQueue(ctx, "orders.fifo", queueAttrs(true, vis))
	c.createQueue(ctx, "events", queueAttrs(false, vis))
	c.createQueue(ctx, "probe", nil)
	for _, pair := range [][2]int{{0, 1}, {1, 0}} {
		if p := c.probe(ctx, "probe", pair[0], pair[1]); p.err != nil || p.latency >= notifyFast {
			t.Fatalf("before the outage: %s, want a wake-up under %s", p, notifyFast)
		}
	}

	var down []probeResult
	fastAt := map[string]time.Duration{}
	const outage = 5 * time.Second
	spec := loadSpec{
		fifoQueue: "orders.fifo", stdQueue: "events",
		groups: 16, perGroup: size(30, 15), stdMessages: size(600, 300),
		fifoProducers: 4, stdProducers: 3,
		fifoConsumers: 2, stdConsumers: 2,
		visibility: vis, dupEvery: 9,
		budget:  90 * time.Second,
		eventAt: 0.3,
		event: func() {
			px.cut()
			start := time.Now()
			t.Logf("Pub/Sub cut off for %s", outage)
			for time.Since(start) < outage {
				down = append(down, c.probe(ctx, "probe", 1, 0))
			}
			px.restore()
			back := time.Now()
			for time.Since(back) < 40*time.Second && len(fastAt) < len(c.insts) {
				for _, pair := range [][2]int{{0, 1}, {1, 0}} {
					p := c.probe(ctx, "probe", pair[0], pair[1])
					if _, ok := fastAt[p.poller]; !ok && p.err == nil && p.latency < notifyFast {
						fastAt[p.poller] = time.Since(back)
					}
				}
			}
		},
	}
	runLoad(t, c, spec)

	if len(down) == 0 {
		t.Fatal("no probe ran during the outage")
	}
	for _, p := range down {
		// Unwoken, a long poll looks at the store every 2 s: the message
		// comes with the next look.
		if p.err != nil || p.latency > 3*time.Second {
			t.Errorf("a long poll during the outage: %s, want it answered within the periodic look (2 s)", p)
		}
	}
	t.Logf("long polls during the outage: %v", down)
	for _, in := range c.insts {
		if d, ok := fastAt[in.name]; !ok {
			t.Errorf("%s was not woken through Pub/Sub again within 40 s of its return", in.name)
		} else {
			t.Logf("%s woken through Pub/Sub again %s after its return", in.name, d.Round(time.Millisecond))
		}
	}
}

// cutProxy forwards TCP connections to target until cut, which closes
// them all and refuses new ones until restore listens again on the same
// address.
type cutProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			if !p.track(in, out) {
				in.Close()
				out.Close()
				return
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// track remembers a pair of connections to close at a cut; false when
// the proxy was cut meanwhile.
func (p *cutProxy) track(in, out net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return false
	}
	p.conns[in], p.conns[out] = true, true
	return true
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *cutProxy) restore() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Errorf("the proxy cannot listen on %s again: %v", p.addr, err)
		return
	}
	p.serve(ln)
}
