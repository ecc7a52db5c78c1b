package wake

import "sync/atomic"

// HubStats are a Hub's running counts since it started, for metrics.
type HubStats struct {
	// Published counts the events this process published; Received those
	// its transport delivered from other instances.
	Published, Received uint64
	// Woken counts the waiting long polls the events reached.
	Woken uint64
	// PublishFailures counts transport publishes that failed.
	PublishFailures uint64
	// WakeAlls counts the times every waiter was woken because events may
	// have been lost (the transport became healthy, or recovered).
	WakeAlls uint64
	// DueWakes counts the wake-ups WakeAfter delivered.
	DueWakes uint64
	Degraded bool
}

type hubCounters struct {
	published, received, woken, publishFailures, wakeAlls, dueWakes atomic.Uint64
}

// Stats returns the hub's counts; cheap enough for every scrape.
func (h *Hub) Stats() HubStats {
	return HubStats{
		Published:       h.stats.published.Load(),
		Received:        h.stats.received.Load(),
		Woken:           h.stats.woken.Load(),
		PublishFailures: h.stats.publishFailures.Load(),
		WakeAlls:        h.stats.wakeAlls.Load(),
		DueWakes:        h.stats.dueWakes.Load(),
		Degraded:        h.Degraded(),
	}
}
