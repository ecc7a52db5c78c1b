package service

import (
	"testing"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
)

func TestHandOffsGoToTheLongestWaitingPollOnce(t *testing.T) {
	hub := wake.NewHub(wake.HubOptions{})
	defer hub.Close()
	var h handOffs
	park := func(queue string) *parkedPoll {
		return h.park(&stores.MessageClaimParams{QueueName: queue, Max: 1}, hub.Listen(queue))
	}
	first, second, other := park("q"), park("q"), park("r")
	if got := h.take("q"); got != first {
		t.Fatalf("take gave %p, want the first poll parked %p", got, first)
	}
	if h.unpark(first) {
		t.Error("unpark of a poll a send took said it was still parked")
	}
	if !h.unpark(second) {
		t.Error("unpark of a poll no send took said a send took it")
	}
	if got := h.take("q"); got != nil {
		t.Errorf("take of a queue whose polls all left gave %p", got)
	}
	if got := h.take("r"); got != other {
		t.Errorf("take of r gave %p, want %p", got, other)
	}
	if len(h.waiting) != 0 {
		t.Errorf("%d queues still listed with no poll parked", len(h.waiting))
	}
}
