package pgnotify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores/wake"
)

func TestPayload(t *testing.T) {
	for _, c := range []struct {
		payload, from, name string
		n                   int
		ok                  bool
	}{
		{payload("abc", wake.Event{Queue: "q.fifo", Count: 3}), "abc", "q.fifo", 3, true},
		{payload("abc", wake.Event{Queue: "q"}), "abc", "q", 0, true},
		{"q", "", "q", 0, true}, // an older sluice: the queue name alone
		{"", "", "", 0, false},
		{"abc q x", "", "", 0, false},
		{"abc q -1", "", "", 0, false},
		{"a b", "", "", 0, false},
	} {
		from, ev, ok := parse(c.payload)
		if from != c.from || ev.Queue != c.name || ev.Count != c.n || ok != c.ok {
			t.Errorf("parse(%q) = %q, %+v, %v; want %q, %q, %d, %v", c.payload, from, ev, ok, c.from, c.name, c.n, c.ok)
		}
	}
}

// databaseURL returns DATABASE_URL; without it the test is skipped, except
// under CI=true, where it fails.
func databaseURL(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL is not set, and CI=true forbids skipping the LISTEN/NOTIFY tests")
		}
		t.Skip(`DATABASE_URL is not set (start a throwaway server with: eval "$(infra/scripts/postgres.sh start)")`)
	}
	return dsn
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newHub(t *testing.T, dsn, channel string) (*wake.Hub, *Transport) {
	t.Helper()
	tr, err := Open(context.Background(), dsn, Options{Channel: channel, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	h := wake.NewHub(wake.HubOptions{Transport: tr, Logger: quiet()})
	t.Cleanup(func() { _ = h.Close() })
	// NewHub waits only so long for the listener; a hub that starts
	// listening later wakes every waiter once (as after any recovery),
	// which a test must not take for an event. Wait until it listens.
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

// An event published by one instance wakes a waiter of another on the same
// database and channel, not one of another queue or channel; after the
// listening connection is killed the transport reports itself degraded,
// reconnects, wakes every waiter once, and events flow again.
func TestWakeAcrossInstances(t *testing.T) {
	dsn := databaseURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	channel := "sluice_wake_test_" + hex.EncodeToString(b[:])
	a, _ := newHub(t, dsn, channel)
	bh, btr := newHub(t, dsn, channel)
	elsewhere, _ := newHub(t, dsn, channel+"_other")
	ctx := context.Background()

	hint, cancel := bh.Subscribe("w")
	other, cancelOther := bh.Subscribe("other")
	defer cancelOther()
	far, cancelFar := elsewhere.Subscribe("w")
	defer cancelFar()
	a.Publish(ctx, wake.Event{Queue: "w", Count: 1})
	waitHint(t, hint, "an event from another instance")
	select {
	case <-other:
		t.Error("a waiter of another queue was woken")
	case <-far:
		t.Error("a waiter on another channel was woken")
	case <-time.After(200 * time.Millisecond):
	}
	cancel()

	hint, cancel = bh.Subscribe("w")
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query = $1`, "LISTEN "+pgx.Identifier{btr.channel}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() == 0 {
		t.Fatal("found no listening connection to terminate")
	}
	waitHint(t, hint, "the listener lost") // going degraded wakes all
	for deadline := time.Now().Add(10 * time.Second); bh.Degraded(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still degraded 10 s after the listener was lost")
		}
	}
	waitHint(t, hint, "the listener reconnected") // so does the recovery
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.Publish(ctx, wake.Event{Queue: "w", Count: 1})
		select {
		case <-hint:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no wake-up after the listener reconnected")
		}
	}
}

func TestListenerName(t *testing.T) {
	if got := listenerName("sluice_wake"); got != "sluice-wake sluice_wake" {
		t.Errorf("listenerName(sluice_wake) = %q", got)
	}
	long := strings.Repeat("c", 60)
	for _, ch := range []string{long, "wäke", "tab\there"} {
		got := listenerName(ch)
		if len(got) > 63 || !printableASCII(got) || got == listenerPrefix+ch {
			t.Errorf("listenerName(%q) = %q: want a digest of at most 63 ASCII bytes", ch, got)
		}
	}
	if listenerName(long) == listenerName(long+"d") {
		t.Error("two long channels share a listener name")
	}
}

// observe listens on the channel from a connection that is not taken for
// a sluice listener (its last statement is not its LISTEN), and returns
// the payloads it receives.
func observe(t *testing.T, dsn, channel string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			got <- n.Payload
		}
	}()
	t.Cleanup(func() { cancel(); <-done; conn.Close(context.Background()) })
	return got
}

// expectPayload waits for a payload naming the queue, or fails.
func expectPayload(t *testing.T, got <-chan string, queue, what string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case p := <-got:
			if _, ev, ok := parse(p); ok && ev.Queue == queue {
				return
			}
		case <-timeout:
			t.Fatalf("no notification for %s: %s", queue, what)
		}
	}
}

// expectNone fails when a notification arrives within 300 ms.
func expectNone(t *testing.T, got <-chan string, what string) {
	t.Helper()
	select {
	case p := <-got:
		t.Fatalf("notification %q: %s", p, what)
	case <-time.After(300 * time.Millisecond):
	}
}

// An instance alone on its channel sends no NOTIFY; once another listens
// (a sluice listener, or an older sluice's, known by its LISTEN), it does.
func TestNotifiesOnlyWhenAnotherListens(t *testing.T) {
	dsn := databaseURL(t)
	channel := testChannel()
	a, _ := newHub(t, dsn, channel)
	got := observe(t, dsn, channel)
	ctx := context.Background()

	a.Publish(ctx, wake.Event{Queue: "alone", Count: 1})
	expectNone(t, got, "published while no other instance listens")

	old, err := pgx.Connect(ctx, dsn) // an older sluice's listener: no name
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lookEvery + 50*time.Millisecond)
	a.Publish(ctx, wake.Event{Queue: "old", Count: 1})
	expectPayload(t, got, "old", "an older sluice's listener waits on the channel")
	old.Close(ctx)

	b, _ := newHub(t, dsn, channel)
	hint, cancel := b.Subscribe("new")
	defer cancel()
	a.Publish(ctx, wake.Event{Queue: "new", Count: 1})
	expectPayload(t, got, "new", "another instance listens")
	waitHint(t, hint, "an event while both listen")
}

// A newcomer counts on the others' notifications only once they have seen
// it: right after it reports ready, an event of an instance that last
// looked before it came (and found itself alone) still reaches it.
func TestNewcomerIsHeardOnceReady(t *testing.T) {
	dsn := databaseURL(t)
	channel := testChannel()
	a, _ := newHub(t, dsn, channel)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		a.Publish(ctx, wake.Event{Queue: "before", Count: 1}) // a looks: alone
		b, _ := newHub(t, dsn, channel)
		hint, cancel := b.Subscribe("q")
		a.Publish(ctx, wake.Event{Queue: "q", Count: 1})
		waitHint(t, hint, "an event published as the newcomer became ready")
		cancel()
		_ = b.Close()
	}
}

func testChannel() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sluice_wake_test_" + hex.EncodeToString(b[:])
}
