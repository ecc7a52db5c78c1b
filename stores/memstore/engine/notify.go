package engine

import "sync"

// notifier broadcasts hints per queue name.
type notifier struct {
	mu   sync.Mutex
	subs map[string]map[*subscription]struct{}
}

type subscription struct {
	ch chan struct{}
}

// Subscribe returns a channel that receives, without blocking the sender and
// possibly coalesced, when the named queue may have become receivable.
func (e *Engine) Subscribe(queueName string) (<-chan struct{}, func()) {
	n := &e.subs
	s := &subscription{ch: make(chan struct{}, 1)}
	n.mu.Lock()
	set := n.subs[queueName]
	if set == nil {
		set = map[*subscription]struct{}{}
		n.subs[queueName] = set
	}
	set[s] = struct{}{}
	n.mu.Unlock()
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if set := n.subs[queueName]; set != nil {
				delete(set, s)
				if len(set) == 0 {
					delete(n.subs, queueName)
				}
			}
		})
	}
	return s.ch, cancel
}

func (n *notifier) notify(queueName string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.subs[queueName] {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
}
