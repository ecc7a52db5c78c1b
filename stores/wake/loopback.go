package wake

import (
	"context"
	"errors"
	"sync"
)

// Loopback connects the Hubs of several instances that live in one process
// (tests, and a server running two services over one in-memory store): each
// Join returns a Transport, and what one publishes is delivered to every
// other joined one. It never degrades.
type Loopback struct {
	mu      sync.Mutex
	members map[*loopbackMember]struct{}
}

// NewLoopback returns an empty Loopback.
func NewLoopback() *Loopback {
	return &Loopback{members: map[*loopbackMember]struct{}{}}
}

// Join returns a Transport for one more instance.
func (l *Loopback) Join() Transport { return &loopbackMember{l: l} }

type loopbackMember struct {
	l  *Loopback
	mu sync.Mutex
	r  Receiver // set while listening
}

func (m *loopbackMember) Publish(ctx context.Context, events []Event) error {
	m.l.mu.Lock()
	others := make([]*loopbackMember, 0, len(m.l.members))
	for o := range m.l.members {
		if o != m {
			others = append(others, o)
		}
	}
	m.l.mu.Unlock()
	for _, o := range others {
		o.mu.Lock()
		if o.r != nil {
			o.r.Deliver(events)
		}
		o.mu.Unlock()
	}
	return nil
}

func (m *loopbackMember) Listen(ctx context.Context, r Receiver) error {
	m.mu.Lock()
	if m.r != nil {
		m.mu.Unlock()
		return errors.New("wake: loopback member already listening")
	}
	m.r = r
	m.mu.Unlock()
	m.l.mu.Lock()
	m.l.members[m] = struct{}{}
	m.l.mu.Unlock()
	r.Degraded(false)
	<-ctx.Done()
	m.l.mu.Lock()
	delete(m.l.members, m)
	m.l.mu.Unlock()
	m.mu.Lock()
	m.r = nil
	m.mu.Unlock()
	return nil
}

func (m *loopbackMember) Close() error { return nil }
