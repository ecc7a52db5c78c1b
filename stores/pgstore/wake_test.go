package pgstore

import "testing"

func TestWakePayload(t *testing.T) {
	for _, c := range []struct {
		payload, from, name string
		n                   int
		ok                  bool
	}{
		{wakePayload("abc", "q.fifo", 3), "abc", "q.fifo", 3, true},
		{wakePayload("abc", "q", 0), "abc", "q", 0, true},
		{"q", "", "q", 0, true}, // an older sluice: the queue name alone
		{"", "", "", 0, false},
		{"abc q x", "", "", 0, false},
		{"abc q -1", "", "", 0, false},
		{"a b", "", "", 0, false},
	} {
		from, name, n, ok := parseWake(c.payload)
		if from != c.from || name != c.name || n != c.n || ok != c.ok {
			t.Errorf("parseWake(%q) = %q, %q, %d, %v; want %q, %q, %d, %v", c.payload, from, name, n, ok, c.from, c.name, c.n, c.ok)
		}
	}
}

// A wake-up of n reaches n of the queue's subscribers (one already holding
// a hint counts), 0 reaches all, and other queues' subscribers none.
func TestFanOutN(t *testing.T) {
	s := &Store{subs: map[string]map[*subscription]struct{}{}}
	var chans []<-chan struct{}
	for range 4 {
		ch, cancel := s.Subscribe("q")
		defer cancel()
		chans = append(chans, ch)
	}
	other, cancel := s.Subscribe("other")
	defer cancel()
	drain := func() int {
		n := 0
		for _, ch := range chans {
			select {
			case <-ch:
				n++
			default:
			}
		}
		return n
	}
	s.fanOutN("q", 1)
	if got := drain(); got != 1 {
		t.Errorf("wake 1: %d subscribers woken", got)
	}
	s.fanOutN("q", 2)
	s.fanOutN("q", 2) // the two holding hints count: at most 4 are woken in all
	if got := drain(); got < 2 || got > 4 {
		t.Errorf("wake 2 twice: %d subscribers woken", got)
	}
	s.fanOutN("q", 0)
	if got := drain(); got != 4 {
		t.Errorf("wake all: %d of 4 subscribers woken", got)
	}
	s.fanOutN("q", 10)
	if got := drain(); got != 4 {
		t.Errorf("wake 10 of 4: %d woken", got)
	}
	select {
	case <-other:
		t.Error("a wake-up of q reached a subscriber of another queue")
	default:
	}
}
