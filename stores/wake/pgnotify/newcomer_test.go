package pgnotify

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores/wake"
)

// While instance A's listening connection is down (a database restart
// drops them all; it reconnects with backoff), A's publisher looks for
// other listeners and finds nobody. Instance B, starting then, finds nobody
// either, but does not count on wake-ups before A's look is stale: A's
// next publishes, skipped as Quiet while its look is fresh, would be lost
// to B.
func TestNewcomerHeardWhileAPublishersListenerIsDown(t *testing.T) {
	dsn := databaseURL(t)
	channel := testChannel()
	ctx := context.Background()
	a, atr := newHub(t, dsn, channel)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	lost := 0
	const rounds = 5
	for i := 0; i < rounds; i++ {
		for deadline := time.Now().Add(10 * time.Second); a.Degraded() || atr.listenerPID.Load() == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a did not listen again")
			}
		}
		if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", int64(atr.listenerPID.Load())); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); !a.Degraded(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a's listener was not lost")
			}
		}
		a.Publish(ctx, wake.Event{Queue: "before", Count: 1}) // a looks: nobody listens
		b, _ := newHub(t, dsn, channel)                       // b finds nobody either
		hint, cancel := b.Subscribe("q")
		a.Publish(ctx, wake.Event{Queue: "q", Count: 1})
		select {
		case <-hint:
		case <-time.After(2 * time.Second):
			lost++
			t.Errorf("round %d: b (healthy: degraded=%v) did not hear a's event published after b reported ready", i, b.Degraded())
		}
		cancel()
		_ = b.Close()
	}
	t.Logf("%d of %d events lost", lost, rounds)
}
