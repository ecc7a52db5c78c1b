package conformance

import (
	"sync"
	"time"
)

// Clock is a controllable clock. Pass its Now as service.Config.Clock; time
// stands still until Advance moves it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads start until advanced.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (d must not be negative).
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("conformance: Clock.Advance with a negative duration")
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
