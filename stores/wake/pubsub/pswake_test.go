package pswake

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/stores/wake"
)

const project = "sluice-test"

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url, project, topic string
		ok                  bool
	}{
		{"pubsub://p/t", "p", "t", true},
		{"pubsub://p", "p", "", true},
		{"PUBSUB://p/t/", "p", "t", true},
		{"pubsub://", "", "", false},
		{"pubsub://p/t/x", "", "", false},
		{"postgres://p/t", "", "", false},
	} {
		p, tp, err := parseURL(c.url)
		if p != c.project || tp != c.topic || (err == nil) != c.ok {
			t.Errorf("parseURL(%q) = %q, %q, %v", c.url, p, tp, err)
		}
	}
}

func TestEncoding(t *testing.T) {
	in := []wake.Event{{Queue: "a.fifo", Count: 3}, {Queue: "b"}, {Queue: ""}, {Queue: "bad name", Count: 1}}
	got := decode(encode(in))
	want := []wake.Event{{Queue: "a.fifo", Count: 3}, {Queue: "b"}}
	if !slices.Equal(got, want) {
		t.Errorf("decode(encode(%v)) = %v, want %v", in, got, want)
	}
	if got := decode([]byte("q x\n q 1\nq -1\nok 2")); !slices.Equal(got, []wake.Event{{Queue: "ok", Count: 2}}) {
		t.Errorf("decode of garbage = %v", got)
	}
}

// emulator returns PUBSUB_EMULATOR_HOST; without it the test is skipped,
// except under CI=true, where it fails.
func emulator(t testing.TB) string {
	t.Helper()
	host := os.Getenv("PUBSUB_EMULATOR_HOST")
	if host == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PUBSUB_EMULATOR_HOST is not set, and CI=true forbids skipping the Pub/Sub tests")
		}
		t.Skip(`PUBSUB_EMULATOR_HOST is not set (start the emulator with: eval "$(infra/scripts/pubsub.sh start)")`)
	}
	return host
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTopic() string {
	b := make([]byte, 6)
	_, _ = crand.Read(b)
	return "wake-test-" + hex.EncodeToString(b)
}

func open(t testing.TB, topic string, clientOpts ...option.ClientOption) *Transport {
	t.Helper()
	tr, err := Open(context.Background(), project, Options{Topic: topic, EchoTimeout: 2 * time.Second, ClientOptions: clientOpts, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func newHub(t testing.TB, topic string) (*wake.Hub, *Transport) {
	t.Helper()
	tr := open(t, topic)
	h := wake.NewHub(wake.HubOptions{Transport: tr, Logger: quiet()})
	t.Cleanup(func() { _ = h.Close() })
	for deadline := time.Now().Add(10 * time.Second); h.Degraded(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hub's transport did not start listening within 10 s")
		}
	}
	return h, tr
}

func waitHint(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake-up after %s", what)
	}
}

func noHint(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("a wake-up after %s", what)
	case <-time.After(300 * time.Millisecond):
	}
}

// admin is a plain client on the emulator, for what the tests do to the
// transport from outside (delete its subscription, publish strays).
func admin(t testing.TB) *pubsub.Client {
	t.Helper()
	c, err := pubsub.NewClient(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func subscriptionExists(t *testing.T, c *pubsub.Client, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: name})
	switch status.Code(err) {
	case codes.OK:
		return true
	case codes.NotFound:
		return false
	}
	t.Fatalf("get subscription %s: %v", name, err)
	return false
}

// TestTwoHubsWakeEachOther: what one hub publishes wakes the other's
// waiters, in both directions, only for the queue named, and Pub/Sub bills
// every publish and pull at least 1,000 bytes.
func TestTwoHubsWakeEachOther(t *testing.T) {
	emulator(t)
	topic := newTopic()
	a, ta := newHub(t, topic)
	b, tb := newHub(t, topic)

	hint, cancel := a.Subscribe("q1")
	defer cancel()
	other, cancelOther := a.Subscribe("q2")
	defer cancelOther()
	b.Publish(context.Background(), wake.Event{Queue: "q1", Count: 1})
	waitHint(t, hint, "b published q1")
	noHint(t, other, "b published q1 (a waiter of q2)")

	back, cancelBack := b.Subscribe("q3")
	defer cancelBack()
	a.Publish(context.Background(), wake.Event{Queue: "q3"})
	waitHint(t, back, "a published q3")

	// Each hub published once; each subscription gets both messages.
	deadline := time.Now().Add(10 * time.Second)
	for ta.BilledOps().Reads < 2 || tb.BilledOps().Reads < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("pulls: a %+v, b %+v; want 2 each (own echo and the other's)", ta.BilledOps(), tb.BilledOps())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for name, tr := range map[string]*Transport{"a": ta, "b": tb} {
		ops := tr.BilledOps()
		if ops.Writes != 1 || ops.Bytes != 1000*(ops.Writes+ops.Reads) {
			t.Errorf("%s billed %+v; want 1 publish and 1,000 bytes per request", name, ops)
		}
	}
}

// TestOnePublishCarriesABatch: events that the hub coalesced go out as one
// message, and the other side delivers all of them.
func TestOnePublishCarriesABatch(t *testing.T) {
	emulator(t)
	topic := newTopic()
	a, _ := newHub(t, topic)
	_, tb := newHub(t, topic)
	var hints []<-chan struct{}
	var events []wake.Event
	for _, q := range []string{"b1", "b2", "b3", "b4"} {
		h, cancel := a.Subscribe(q)
		defer cancel()
		hints = append(hints, h)
		events = append(events, wake.Event{Queue: q, Count: 1})
	}
	if err := tb.Publish(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	for i, h := range hints {
		waitHint(t, h, "one publish of four queues ("+events[i].Queue+")")
	}
	if got := tb.BilledOps().Writes; got != 1 {
		t.Errorf("publishes = %d, want 1", got)
	}
}

// TestDuplicatesHarmless: a message delivered twice, or a stray message
// that names nothing this instance waits on, or garbage, wakes at most an
// extra waiter and leaves the transport healthy and working.
func TestDuplicatesHarmless(t *testing.T) {
	emulator(t)
	topic := newTopic()
	a, _ := newHub(t, topic)
	c := admin(t)
	pub := c.Publisher("projects/" + project + "/topics/" + topic)
	defer pub.Stop()
	hint, cancel := a.Subscribe("dup")
	defer cancel()
	for _, data := range []string{"dup 1\n", "dup 1\n", "garbage", "other 2\n"} {
		m := &pubsub.Message{Data: []byte(data), Attributes: map[string]string{attrFrom: "someone-else", attrSeq: "7"}}
		if _, err := pub.Publish(context.Background(), m).Get(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	waitHint(t, hint, "a duplicated message")
	time.Sleep(300 * time.Millisecond) // the rest arrive
	select {
	case <-hint: // the duplicate's hint, coalesced or not: harmless
	default:
	}
	if a.Degraded() {
		t.Fatal("duplicates and garbage left the transport degraded")
	}
	_, tb := newHub(t, topic)
	if err := tb.Publish(context.Background(), []wake.Event{{Queue: "dup", Count: 1}}); err != nil {
		t.Fatal(err)
	}
	waitHint(t, hint, "a real publish after the duplicates")
}

// TestCloseDeletesSubscription: an instance that stops gracefully leaves
// no subscription behind.
func TestCloseDeletesSubscription(t *testing.T) {
	emulator(t)
	c := admin(t)
	h, tr := newHub(t, newTopic())
	if !subscriptionExists(t, c, tr.Subscription()) {
		t.Fatalf("no subscription %s while listening", tr.Subscription())
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if subscriptionExists(t, c, tr.Subscription()) {
		t.Fatalf("subscription %s still there after Close", tr.Subscription())
	}
}

// recorder is a Receiver that remembers what the transport told it.
type recorder struct {
	mu       sync.Mutex
	degraded []bool
	events   []wake.Event
}

func (r *recorder) Deliver(events []wake.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, events...)
}

func (r *recorder) Degraded(d bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.degraded = append(r.degraded, d)
}

func (r *recorder) reports() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.degraded)
}

func (r *recorder) heard(queue string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.events, func(ev wake.Event) bool { return ev.Queue == queue })
}

// listen runs tr.Listen into a recorder until the test ends.
func listen(t *testing.T, tr *Transport) *recorder {
	t.Helper()
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tr.Listen(ctx, rec) }()
	t.Cleanup(func() { cancel(); <-done; _ = tr.Close() })
	waitFor(t, 10*time.Second, "the first report, healthy", func() bool {
		r := rec.reports()
		return len(r) > 0 && !r[len(r)-1]
	})
	return rec
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

// recoveredAfter: the reports after the first say degraded, then healthy.
func recoveredAfter(reports []bool, from int) bool {
	rest := reports[from:]
	i := slices.Index(rest, true)
	return i >= 0 && slices.Contains(rest[i:], false)
}

// TestDeletedSubscriptionRecreated: when its subscription disappears (an
// operator, or the expiration policy), the transport reports itself
// degraded, makes it anew, reports itself healthy, and hears again.
func TestDeletedSubscriptionRecreated(t *testing.T) {
	emulator(t)
	topic := newTopic()
	ta, tb := open(t, topic), open(t, topic)
	ra := listen(t, ta)
	listen(t, tb)
	c := admin(t)
	before := len(ra.reports())
	ctx := context.Background()
	if err := c.SubscriptionAdminClient.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: ta.Subscription()}); err != nil {
		t.Fatal(err)
	}
	// a publishes now and then: if its stream does not end by itself, the
	// missing echo gives the loss away.
	waitFor(t, 30*time.Second, "degraded, then healthy again", func() bool {
		_ = ta.Publish(ctx, []wake.Event{{Queue: "ping"}})
		return recoveredAfter(ra.reports(), before)
	})
	if !subscriptionExists(t, c, ta.Subscription()) {
		t.Fatal("the subscription was not recreated")
	}
	waitFor(t, 10*time.Second, "b's event heard after the recovery", func() bool {
		_ = tb.Publish(ctx, []wake.Event{{Queue: "after", Count: 1}})
		return ra.heard("after")
	})
}

// proxy forwards TCP to the emulator until cut, so that a test can make
// Pub/Sub unreachable for one transport.
type proxy struct {
	target string
	ln     net.Listener
	addr   string
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{target: target, addr: ln.Addr().String()}
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
			go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
		}
	}()
}

// cut stops listening and closes every connection: the emulator is gone.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// restore listens again on the same address.
func (p *proxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// TestDegradedWhileUnreachable: while Pub/Sub cannot be reached the
// transport says it is degraded; when it can again, healthy, and it hears.
func TestDegradedWhileUnreachable(t *testing.T) {
	host := emulator(t)
	topic := newTopic()
	p := newProxy(t, host)
	start := time.Now()
	t.Cleanup(func() { t.Logf("%v in all", time.Since(start).Round(time.Millisecond)) })
	ta := open(t, topic,
		option.WithEndpoint(p.addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	tb := open(t, topic)
	ra := listen(t, ta)
	listen(t, tb)
	before := len(ra.reports())
	ctx := context.Background()
	p.cut()
	cutAt := time.Now()
	waitFor(t, 20*time.Second, "degraded while unreachable", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_ = ta.Publish(pctx, []wake.Event{{Queue: "ping"}})
		cancel()
		return slices.Contains(ra.reports()[before:], true)
	})
	t.Logf("degraded %v after the cut", time.Since(cutAt).Round(time.Millisecond))
	p.restore(t)
	restoredAt := time.Now()
	waitFor(t, 30*time.Second, "healthy again once reachable", func() bool {
		return recoveredAfter(ra.reports(), before)
	})
	t.Logf("healthy %v after the restore", time.Since(restoredAt).Round(time.Millisecond))
	waitFor(t, 10*time.Second, "b's event heard after the outage", func() bool {
		_ = tb.Publish(ctx, []wake.Event{{Queue: "back", Count: 1}})
		return ra.heard("back")
	})
	t.Logf("heard %v after the restore", time.Since(restoredAt).Round(time.Millisecond))
}

// TestCloseReturnsDuringOutage: Close gives up after closeWait while
// Pub/Sub cannot be reached and a publish is still pending in the library
// (whose own stop waits for it to flush), so that a stopping process does
// not hang on it.
func TestCloseReturnsDuringOutage(t *testing.T) {
	host := emulator(t)
	p := newProxy(t, host)
	tr := open(t, newTopic(),
		option.WithEndpoint(p.addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan struct{})
	go func() { defer close(listening); _ = tr.Listen(ctx, &recorder{}) }()
	p.cut()
	pctx, pcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_ = tr.Publish(pctx, []wake.Event{{Queue: "pending", Count: 1}}) // left pending in the library
	pcancel()
	cancel()
	<-listening
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- tr.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(closeWait + 10*time.Second):
		t.Fatalf("Close did not return within %v of an outage", closeWait+10*time.Second)
	}
}
