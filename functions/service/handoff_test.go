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
	if got := h.take("q", ""); got != first {
		t.Fatalf("take gave %p, want the first poll parked %p", got, first)
	}
	if h.unpark(first) {
		t.Error("unpark of a poll a send took said it was still parked")
	}
	if !h.unpark(second) {
		t.Error("unpark of a poll no send took said a send took it")
	}
	if got := h.take("q", ""); got != nil {
		t.Errorf("take of a queue whose polls all left gave %p", got)
	}
	if got := h.take("r", ""); got != other {
		t.Errorf("take of r gave %p, want %p", got, other)
	}
	if len(h.waiting) != 0 {
		t.Errorf("%d queues still listed with no poll parked", len(h.waiting))
	}
}

// A poll parked for one incarnation of a queue is not given to a send to
// another one of the same name (the queue was deleted and created again).
func TestHandOffsKeepToTheQueueIncarnation(t *testing.T) {
	hub := wake.NewHub(wake.HubOptions{})
	defer hub.Close()
	var h handOffs
	old := h.park(&stores.MessageClaimParams{QueueName: "q", QueueID: "1", Max: 1}, hub.Listen("q"))
	if got := h.take("q", "2"); got != nil {
		t.Errorf("a send to incarnation 2 took a poll of incarnation 1")
	}
	if got := h.take("q", "1"); got != old {
		t.Errorf("a send to incarnation 1 took %p, want its poll %p", got, old)
	}
}
