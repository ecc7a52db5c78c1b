package wake

import (
	"testing"
	"time"
)

// WakeAfter wakes one waiter of its queue when its time comes, not before;
// an earlier time takes the place of a later one, a later one does not
// push an earlier one back, and Close drops what is still to come.
func TestWakeAfter(t *testing.T) {
	h := NewHub(HubOptions{})
	var chans []<-chan struct{}
	for range 2 {
		l := h.Listen("q")
		defer l.Cancel()
		l.Waiting()
		chans = append(chans, l.C)
	}
	waitFor := func(what string, within time.Duration, want int) {
		t.Helper()
		deadline := time.Now().Add(within)
		got := 0
		for got < want && time.Now().Before(deadline) {
			got += drain(chans)
			time.Sleep(time.Millisecond)
		}
		if got != want {
			t.Fatalf("%s: %d waiters woken, want %d", what, got, want)
		}
	}

	h.WakeAfter("q", time.Second)
	h.WakeAfter("q", 200*time.Millisecond) // earlier: takes its place
	h.WakeAfter("q", time.Hour)            // later: changes nothing
	if got := drain(chans); got != 0 {
		t.Fatalf("%d waiters woken before the time", got)
	}
	waitFor("the earlier wake-up", 5*time.Second, 1)
	time.Sleep(time.Second) // past the first time: it was replaced
	if got := drain(chans); got != 0 {
		t.Errorf("%d more waiters woken; the replaced wake-up should not fire", got)
	}
	if st := h.Stats(); st.DueWakes != 1 {
		t.Errorf("DueWakes = %d, want 1", st.DueWakes)
	}

	h.WakeAfter("q", 0) // due now
	waitFor("a wake-up due now", 5*time.Second, 1)

	h.WakeAfter("q", 50*time.Millisecond)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h.WakeAfter("q", 0) // after Close: kept nowhere
	time.Sleep(200 * time.Millisecond)
	if got := drain(chans); got != 0 {
		t.Errorf("%d waiters woken after Close", got)
	}
}
