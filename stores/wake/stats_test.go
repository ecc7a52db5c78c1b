package wake

import (
	"context"
	"testing"
	"time"
)

// Stats count what this instance published, what reached it from another
// and how many waiters the events woke.
func TestHubStats(t *testing.T) {
	lb := NewLoopback()
	a := NewHub(HubOptions{Transport: lb.Join()})
	b := NewHub(HubOptions{Transport: lb.Join()})
	defer a.Close()
	defer b.Close()
	hint, cancel := b.Subscribe("q")
	defer cancel()
	a.Publish(context.Background(), Event{Queue: "q", Count: 1}, Event{Queue: "other", Count: 1})
	select {
	case <-hint:
	case <-time.After(5 * time.Second):
		t.Fatal("b's waiter was not woken")
	}
	if s := a.Stats(); s.Published != 2 || s.Received != 0 || s.Woken != 0 || s.Degraded {
		t.Errorf("a: %+v", s)
	}
	if s := b.Stats(); s.Published != 0 || s.Received != 2 || s.Woken != 1 {
		t.Errorf("b: %+v", s)
	}
}
