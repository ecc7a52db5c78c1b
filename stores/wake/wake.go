// Package wake is the wake-up seam: how a long poll waiting in one
// instance learns that a queue may have become receivable because of a
// request served by this or another instance.
//
// Wake-ups are hints, separate from storage: the service publishes an Event
// after a store call commits and before it answers, one Hub per process
// fans events out to the long polls waiting there, and a Transport carries
// them to the other instances (PostgreSQL LISTEN/NOTIFY, Pub/Sub, ...). Any
// store can be combined with any transport. A lost, late, repeated or
// reordered event costs latency, never a message: a woken long poll claims
// from the store, which decides, and every long poll also checks the store
// on a repair interval (shorter while the transport reports itself
// degraded).
package wake

import "context"

// Event says that up to Count messages of a queue may have become
// receivable. Count 0 means an unknown number: every waiter looks.
type Event struct {
	Queue string
	Count int
}

// Transport carries events between the instances of one deployment.
// Implementations must be safe for concurrent use.
type Transport interface {
	// Publish hands events to the other instances. It returns once the
	// transport has accepted them (a NOTIFY committed, a publish
	// acknowledged) or has failed; a failure costs latency only. The Hub
	// never calls Publish concurrently with itself and coalesces events
	// that arrive while a Publish runs into the next call.
	Publish(ctx context.Context, events []Event) error
	// Listen delivers other instances' events to r until ctx ends, and
	// returns then. An instance's own events need not come back (the Hub
	// delivered them locally already), but may. It calls r.Degraded(false)
	// as soon as it listens, or r.Degraded(true) when it cannot yet (NewHub
	// waits for that first report). Later, when it may be missing events (a
	// lost connection) it calls r.Degraded(true); when it hears again,
	// r.Degraded(false), after which the Hub wakes every waiter once, since
	// events sent meanwhile may be lost.
	Listen(ctx context.Context, r Receiver) error
	// Close releases what the transport holds (after Listen returned).
	Close() error
}

// A Quieter is a Transport that can tell, without a round trip, that no
// other instance would hear what it published now; the Hub then skips the
// publish and its bookkeeping. Quiet must turn false once what it knows is
// stale, so that a publish looks again.
type Quieter interface {
	Quiet() bool
}

// Receiver is what a Transport delivers to: the Hub.
type Receiver interface {
	Deliver(events []Event)
	Degraded(degraded bool)
}
