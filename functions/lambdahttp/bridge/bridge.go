package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Invoker runs one event.
type Invoker interface {
	Invoke(ctx context.Context, event []byte) ([]byte, error)
}

// Pool is several execution environments of one function, as Lambda
// scales out: each invocation goes to an idle one, and waits for one when
// all are busy. The environments share only what their store shares, so
// more than one needs a shared store (PostgreSQL), not mem://.
type Pool struct{ idle chan *Function }

// NewPool pools fns.
func NewPool(fns ...*Function) *Pool {
	p := &Pool{idle: make(chan *Function, len(fns))}
	for _, f := range fns {
		p.idle <- f
	}
	return p
}

// Invoke runs event on an idle environment.
func (p *Pool) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	select {
	case f := <-p.idle:
		defer func() { p.idle <- f }()
		return f.Invoke(ctx, event)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Bridge serves HTTP by invoking a function through a front end.
type Bridge struct {
	FrontEnd FrontEnd
	// Function runs the events: a *Function (one execution environment)
	// or a *Pool of them.
	Function Invoker
	// Public is the endpoint the events name; empty Host: the front end's
	// DefaultHost, empty Proto: https. Running client suites through the
	// bridge, make it the bridge's own address and http, so that queue
	// URLs lead back to it.
	Public Public

	// Counts, for tests: events sent, and those whose body went base64.
	Events, Base64Events atomic.Int64
}

// ServeHTTP wraps r into an event, invokes the function and answers what
// the front end would.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pub := b.Public
	if pub.Host == "" {
		pub.Host = b.FrontEnd.DefaultHost()
	}
	if pub.Proto == "" {
		pub.Proto = "https"
	}
	ev, b64, err := b.FrontEnd.Event(FromHTTP(r, body), pub, requestID(), time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.Events.Add(1)
	if b64 {
		b.Base64Events.Add(1)
	}
	out, err := b.Function.Invoke(r.Context(), ev)
	var resp *Response
	if err == nil {
		resp, err = b.FrontEnd.Response(out)
	}
	if err != nil {
		status := http.StatusBadGateway
		if !errors.Is(err, ErrFunction) {
			status = http.StatusInternalServerError
		}
		http.Error(w, err.Error(), status)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
