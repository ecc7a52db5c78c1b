// Package ownbody is an http.RoundTripper for AWS SDK for Go v2 clients that
// hands the transport below a copy of each request body.
//
// The SDK (smithy-go) closes its request body as soon as the response
// headers are back, and its closed body answers WriteTo with io.EOF. When
// net/http's write loop has not yet finished with that body (it drains it
// after sending it; on a loaded core the server can answer first), it takes
// the io.EOF for a write error and closes the connection while the response
// body is still being read: "use of closed network connection" after a 200.
// The SDK then retries, so a send is stored twice and a receive leaves its
// messages in flight until their visibility timeout. A body that belongs to
// the transport is never closed under it.
//
// It is shared by the load generator (infra/bench) and the system tests
// (infra/systemtest), whose ledgers count on every answer the server sent
// reaching the client.
package ownbody

import (
	"bytes"
	"io"
	"net/http"
)

// Transport sends each request through Next with a body of its own.
type Transport struct {
	Next http.RoundTripper // nil: http.DefaultTransport
}

func (t Transport) next() http.RoundTripper {
	if t.Next == nil {
		return http.DefaultTransport
	}
	return t.Next
}

// RoundTrip reads the request's body into memory (SQS requests are at
// most a few hundred KiB), closes it and sends a clone with the copy.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return t.next().RoundTrip(req)
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.ContentLength = int64(len(b))
	return t.next().RoundTrip(r)
}

// CloseIdleConnections passes on to Next, so that http.Client's method of
// the same name still reaches the connection pool.
func (t Transport) CloseIdleConnections() {
	if c, ok := t.next().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
