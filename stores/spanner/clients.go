package spanner

import (
	"context"
	"sync"

	sp "cloud.google.com/go/spanner"
)

// clients hands out the client a transaction runs on. Against Spanner
// that is always the one client: its multiplexed session carries any
// number of concurrent transactions. The emulator keeps one current
// transaction per session, so a second transaction on the same session
// invalidates the first ("Invalid transaction ID", "Transaction not
// found") instead of aborting it; there each transaction that has an id
// (read-write, or multi-use read-only) takes a client, and with it a
// session, of its own from a free list, made on demand.
type clients struct {
	main   *sp.Client
	pooled bool
	open   func(ctx context.Context) (*sp.Client, error)

	mu   sync.Mutex
	free []*sp.Client
	all  []*sp.Client
}

// take returns a client for one transaction; give it back with put.
func (c *clients) take(ctx context.Context) (*sp.Client, error) {
	if !c.pooled {
		return c.main, nil
	}
	c.mu.Lock()
	if n := len(c.free); n > 0 {
		cl := c.free[n-1]
		c.free = c.free[:n-1]
		c.mu.Unlock()
		return cl, nil
	}
	c.mu.Unlock()
	cl, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.all = append(c.all, cl)
	c.mu.Unlock()
	return cl, nil
}

func (c *clients) put(cl *sp.Client) {
	if !c.pooled {
		return
	}
	c.mu.Lock()
	c.free = append(c.free, cl)
	c.mu.Unlock()
}

func (c *clients) close() {
	c.mu.Lock()
	all := c.all
	c.all, c.free = nil, nil
	c.mu.Unlock()
	for _, cl := range all {
		cl.Close()
	}
	c.main.Close()
}

// detach returns a context that ends when ctx does, without ctx's values:
// the client refuses a transaction on a context that carries another's
// (Get called inside fn of a RunTx reads outside it, as the contract
// says).
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.Background())
	if dl, ok := ctx.Deadline(); ok {
		var cancelDL context.CancelFunc
		c, cancelDL = context.WithDeadline(c, dl)
		prev := cancel
		cancel = func() { cancelDL(); prev() }
	}
	stop := context.AfterFunc(ctx, cancel)
	return c, func() { stop(); cancel() }
}
