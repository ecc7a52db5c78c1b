package fslisten

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/wake"
)

func TestParseURL(t *testing.T) {
	for in, want := range map[string][2]string{
		"firestore://proj":        {"proj", ""},
		"firestore://proj/":       {"proj", ""},
		"FIRESTORE://proj/orders": {"proj", "orders"},
	} {
		p, d, err := parseURL(in)
		if err != nil || p != want[0] || d != want[1] {
			t.Errorf("parseURL(%q) = %q, %q, %v; want %q, %q", in, p, d, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"firestore://", "firestore:///db", "firestore://a/b/c", "postgres://x", "proj"} {
		if _, _, err := parseURL(bad); err == nil {
			t.Errorf("parseURL(%q) accepted", bad)
		}
	}
}

// emulatorHost returns FIRESTORE_EMULATOR_HOST; without it the test is
// skipped, except under CI=true or SLUICE_REQUIRE_FIRESTORE=1, where it
// fails.
func emulatorHost(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("FIRESTORE_EMULATOR_HOST"); h != "" {
		return h
	}
	if os.Getenv("CI") == "true" || os.Getenv("SLUICE_REQUIRE_FIRESTORE") == "1" {
		t.Fatal("FIRESTORE_EMULATOR_HOST is not set, and CI=true or SLUICE_REQUIRE_FIRESTORE=1 forbids skipping the Firestore wake-up tests")
	}
	t.Skip(`FIRESTORE_EMULATOR_HOST is not set (start the emulator with: eval "$(infra/scripts/firestore.sh start)")`)
	return ""
}

// newProject returns an emulator project of the test's own, whose
// documents are dropped when the test ends.
func newProject(t *testing.T) string {
	t.Helper()
	host := emulatorHost(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	project := "sluice-wake-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete,
			"http://"+host+"/emulator/v1/projects/"+project+"/databases/(default)/documents", nil)
		c := http.Client{Timeout: 10 * time.Second}
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return project
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func open(t *testing.T, project string, opts Options) *Transport {
	t.Helper()
	opts.Logger = quiet()
	tr, err := Open(context.Background(), project, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func newHub(t *testing.T, project string, opts Options) (*wake.Hub, *Transport) {
	t.Helper()
	tr := open(t, project, opts)
	h := wake.NewHub(wake.HubOptions{Transport: tr, Logger: quiet()})
	t.Cleanup(func() { _ = h.Close() })
	return h, tr
}

// recorder is a Receiver that keeps what it is given.
type recorder struct {
	mu       sync.Mutex
	events   []wake.Event
	delivers int
	reports  []bool // Degraded calls, in order
	changed  chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

func (r *recorder) Deliver(events []wake.Event) {
	r.mu.Lock()
	r.events = append(r.events, events...)
	r.delivers++
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) Degraded(d bool) {
	r.mu.Lock()
	r.reports = append(r.reports, d)
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) poke() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// until waits for cond (checked under the recorder's lock) for 15 s.
func (r *recorder) until(t *testing.T, what string, cond func(r *recorder) bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		r.mu.Lock()
		ok := cond(r)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("timed out waiting for %s; events %v, reports %v", what, r.events, r.reports)
		}
	}
}

func healthy(r *recorder) bool { return len(r.reports) > 0 && !r.reports[len(r.reports)-1] }

// listen runs tr.Listen into a new recorder until the test ends, and waits
// for its first healthy report.
func listen(t *testing.T, tr *Transport) *recorder {
	t.Helper()
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tr.Listen(ctx, rec)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = tr.Close()
	})
	rec.until(t, "the listener's first snapshot", healthy)
	return rec
}

func waitHint(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake-up after %s", what)
	}
}

// Two hubs on one project wake each other's waiters, only of the queue
// named, and not those of a hub on another collection.
func TestWakeAcrossHubs(t *testing.T) {
	project := newProject(t)
	a, _ := newHub(t, project, Options{})
	b, _ := newHub(t, project, Options{})
	elsewhere, _ := newHub(t, project, Options{Collection: "other_wake"})
	ctx := context.Background()
	if a.Degraded() || b.Degraded() {
		t.Fatal("a hub is degraded after NewHub")
	}

	hint, cancel := b.Subscribe("w")
	defer cancel()
	other, cancelOther := b.Subscribe("other")
	defer cancelOther()
	far, cancelFar := elsewhere.Subscribe("w")
	defer cancelFar()
	bAlls, farAlls := b.Stats().WakeAlls, elsewhere.Stats().WakeAlls
	a.Publish(ctx, wake.Event{Queue: "w", Count: 1})
	waitHint(t, hint, "an event from another instance")
	// A hub wakes every waiter when its transport becomes healthy or
	// recovers (events may have been lost): such a wake is no delivery.
	select {
	case <-other:
		if b.Stats().WakeAlls == bAlls {
			t.Error("a waiter of another queue was woken")
		}
	case <-far:
		if elsewhere.Stats().WakeAlls == farAlls {
			t.Error("a waiter on another collection was woken")
		}
	case <-time.After(300 * time.Millisecond):
	}
	if n := elsewhere.Stats().Received; n != 0 {
		t.Errorf("a hub on another collection received %d events", n)
	}

	back, cancelBack := a.Subscribe("v")
	defer cancelBack()
	b.Publish(ctx, wake.Event{Queue: "v", Count: 2})
	waitHint(t, back, "an event from the other way")
}

// A listener sees its own instance's writes (Firestore sends them) but
// delivers none of them; another instance's listener delivers each.
func TestOwnEventsNotDelivered(t *testing.T) {
	project := newProject(t)
	a, b := open(t, project, Options{}), open(t, project, Options{})
	ra, rb := listen(t, a), listen(t, b)
	ctx := context.Background()
	for i := range 3 {
		if err := a.Publish(ctx, []wake.Event{{Queue: fmt.Sprintf("q%d", i), Count: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	rb.until(t, "b to hear a's three publishes", func(r *recorder) bool { return len(r.events) == 3 })
	// a's listener has received its own writes once no echo is pending.
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.mu.Lock()
		pending := len(a.echoes)
		a.mu.Unlock()
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's listener never saw %d of its own writes", pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if len(ra.events) != 0 {
		t.Errorf("a delivered its own events: %v", ra.events)
	}
}

// One Publish of many events is one write of one document; a batch over
// maxEvents is split; and concurrent hub publishes share writes.
func TestCoalescing(t *testing.T) {
	project := newProject(t)
	a, b := open(t, project, Options{}), open(t, project, Options{})
	rb := listen(t, b)
	ctx := context.Background()

	events := make([]wake.Event, 40)
	for i := range events {
		events[i] = wake.Event{Queue: fmt.Sprintf("batch-%d", i), Count: i % 3}
	}
	if err := a.Publish(ctx, events); err != nil {
		t.Fatal(err)
	}
	if w := a.BilledOps().Writes; w != 1 {
		t.Errorf("a publish of %d events took %d writes, want 1", len(events), w)
	}
	rb.until(t, "the batch", func(r *recorder) bool { return len(r.events) >= len(events) })
	rb.mu.Lock()
	if rb.delivers != 1 {
		t.Errorf("the batch came in %d deliveries, want 1", rb.delivers)
	}
	for i, ev := range rb.events {
		if ev != events[i] {
			t.Errorf("event %d: got %+v, want %+v", i, ev, events[i])
		}
	}
	rb.mu.Unlock()

	big := make([]wake.Event, maxEvents+10)
	for i := range big {
		big[i] = wake.Event{Queue: fmt.Sprintf("big-%d", i), Count: 1}
	}
	if err := a.Publish(ctx, big); err != nil {
		t.Fatal(err)
	}
	if w := a.BilledOps().Writes; w != 3 {
		t.Errorf("after a publish of %d events: %d writes, want 3", len(big), w)
	}
	rb.until(t, "the big batch", func(r *recorder) bool { return len(r.events) >= len(events)+len(big) })

	// Through a hub: concurrent publishes gather while one is written.
	htr := open(t, project, Options{})
	hub := wake.NewHub(wake.HubOptions{Transport: htr, Logger: quiet()})
	defer hub.Close()
	before := len(events) + len(big)
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { hub.Publish(ctx, wake.Event{Queue: fmt.Sprintf("hub-%d", i), Count: 1}) })
	}
	wg.Wait()
	rb.until(t, "every hub publish", func(r *recorder) bool { return len(r.events) >= before+n })
	w := htr.BilledOps().Writes
	if w >= n {
		t.Errorf("%d concurrent hub publishes took %d writes: not coalesced", n, w)
	}
	t.Logf("%d concurrent hub publishes took %d writes", n, w)
}

// A listener whose client is closed under it reports the transport
// degraded, opens another, reports it healthy again (the hub then wakes
// every waiter), and delivers events again.
func TestListenerLostAndRecovered(t *testing.T) {
	project := newProject(t)
	a, b := open(t, project, Options{}), open(t, project, Options{})
	rb := listen(t, b)
	listen(t, a)
	if !b.closeListener() {
		t.Fatal("b has no listener to close")
	}
	rb.until(t, "a degraded report", func(r *recorder) bool { return len(r.reports) >= 2 && r.reports[1] })
	rb.until(t, "the recovery", healthy)
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := a.Publish(ctx, []wake.Event{{Queue: "after", Count: 1}}); err != nil {
			t.Fatal(err)
		}
		rb.mu.Lock()
		got := len(rb.events) > 0
		rb.mu.Unlock()
		if got {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no events after the listener recovered")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A listener whose connection breaks is retried by the client library
// without a word. The transport finds out when its own publish is not
// heard back, reports itself degraded until a new listener gets through,
// and then delivers again. The listener goes through a TCP proxy to the
// emulator that the test cuts and heals.
func TestDeafListenerDetected(t *testing.T) {
	project := newProject(t)
	px := newProxy(t, emulatorHost(t))
	a := open(t, project, Options{})
	b := open(t, project, Options{EchoTimeout: 500 * time.Millisecond})
	// The publishing clients exist already; b's listeners, opened from
	// now on, go through the proxy.
	t.Setenv("FIRESTORE_EMULATOR_HOST", px.addr())
	rb := listen(t, b)
	ctx := context.Background()
	if err := a.Publish(ctx, []wake.Event{{Queue: "before"}}); err != nil {
		t.Fatal(err)
	}
	rb.until(t, "an event through the proxy", func(r *recorder) bool { return len(r.events) == 1 })

	px.cut()
	reports := func() int { rb.mu.Lock(); defer rb.mu.Unlock(); return len(rb.reports) }
	n := reports()
	// b publishes (directly, so the write succeeds) and waits for its echo.
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := b.Publish(ctx, []wake.Event{{Queue: "probe"}}); err != nil {
			t.Fatal(err)
		}
		if reports() > n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the transport never noticed its listener was deaf")
		}
		time.Sleep(200 * time.Millisecond)
	}
	rb.until(t, "a degraded report", func(r *recorder) bool { return r.reports[len(r.reports)-1] })
	time.Sleep(time.Second)
	rb.mu.Lock()
	still := rb.reports[len(rb.reports)-1]
	rb.mu.Unlock()
	if !still {
		t.Fatal("reported healthy while the proxy was still cut")
	}

	px.heal()
	rb.until(t, "the recovery", healthy)
	deadline = time.Now().Add(15 * time.Second)
	for {
		if err := a.Publish(ctx, []wake.Event{{Queue: "after"}}); err != nil {
			t.Fatal(err)
		}
		rb.mu.Lock()
		got := false
		for _, ev := range rb.events {
			got = got || ev.Queue == "after"
		}
		rb.mu.Unlock()
		if got {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no events after the listener recovered")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// proxy forwards TCP connections to the emulator; cut closes them all and
// refuses new ones (accepting and closing them) until heal.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	down   bool
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve(c net.Conn) {
	p.mu.Lock()
	down := p.down
	p.mu.Unlock()
	if down {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) heal() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// What a wake-up is billed, with 2 and 4 instances: one publish is one
// write, and one read for each listening instance (the publisher's own
// included: Firestore sends it its own write). Run with -v for the numbers.
func TestBilledPerWakeup(t *testing.T) {
	for _, instances := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d instances", instances), func(t *testing.T) {
			project := newProject(t)
			trs := make([]*Transport, instances)
			recs := make([]*recorder, instances)
			for i := range trs {
				trs[i] = open(t, project, Options{})
				recs[i] = listen(t, trs[i])
			}
			total := func() (reads, writes int64) {
				for _, tr := range trs {
					b := tr.BilledOps()
					reads += b.Reads
					writes += b.Writes
				}
				return
			}
			r0, w0 := total()
			const wakeups = 20
			ctx := context.Background()
			for k := range wakeups {
				from := trs[k%instances]
				if err := from.Publish(ctx, []wake.Event{{Queue: "q", Count: 1}}); err != nil {
					t.Fatal(err)
				}
				for i, rec := range recs {
					want := (k + 1) - ((k + 1 + instances - 1 - i) / instances) // publishes by the others so far
					rec.until(t, "the wake-up", func(r *recorder) bool { return len(r.events) >= want })
				}
				// and the publisher's own echo, which is billed too
				deadline := time.Now().Add(10 * time.Second)
				for {
					from.mu.Lock()
					n := len(from.echoes)
					from.mu.Unlock()
					if n == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the publisher's echo never came")
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			r1, w1 := total()
			reads, writes := float64(r1-r0)/wakeups, float64(w1-w0)/wakeups
			t.Logf("%d instances: %.2f billed writes and %.2f billed reads per wake-up", instances, writes, reads)
			if writes != 1 || reads != float64(instances) {
				t.Errorf("per wake-up: %.2f writes, %.2f reads; want 1 write and %d reads", writes, reads, instances)
			}
		})
	}
}
