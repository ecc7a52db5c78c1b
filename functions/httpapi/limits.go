package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sluicehq/sluice/contract"
)

// Request bodies are bounded three ways: each by what its protocol can
// legally carry (contract.MaxJSONRequestBytes, contract.MaxQueryRequestBytes),
// all of them together by a memory budget (beyond it a request is throttled
// the way SQS throttles, and the SDKs back off and retry), and in time (a
// body that trickles in is cut off).

const (
	// DefaultBodyMemory is the budget of all request bodies in flight:
	// about sixteen of the largest legal JSON batches.
	DefaultBodyMemory = 96 << 20
	// DefaultBodyTimeout is how long a request body may take to arrive.
	DefaultBodyTimeout = 30 * time.Second
	// bodyChunk is the step in which a body of unknown length (chunked)
	// reserves budget as it arrives.
	bodyChunk = 64 << 10
)

// BodyBudget counts the bytes that request bodies in flight hold, across
// the front ends that share it (the SQS handler, the console).
type BodyBudget struct {
	mu   sync.Mutex
	max  int64
	used int64
}

// NewBodyBudget returns a budget of max bytes (DefaultBodyMemory when max
// is not positive).
func NewBodyBudget(max int64) *BodyBudget {
	if max <= 0 {
		max = DefaultBodyMemory
	}
	return &BodyBudget{max: max}
}

// Take reserves n bytes, or reports that they are not available.
func (b *BodyBudget) Take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// Give returns n bytes that Take reserved.
func (b *BodyBudget) Give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// bodyCap is the cap of a request body on the request's protocol.
func (h *handler) bodyCap(p protocol) int64 {
	if h.max > 0 {
		return h.max
	}
	if p == protoJSON {
		return contract.MaxJSONRequestBytes
	}
	return contract.MaxQueryRequestBytes
}

// readBody reads the whole request body within its cap, the budget and the
// body timeout. What it reserves is given back when the request ends. A
// body it refuses is not read any further: the connection closes after the
// answer (net/http would otherwise try to read the rest before answering).
// The body is read once; later calls return it again.
func (x *exchange) readBody() ([]byte, *contract.Error) {
	if x.bodyRead {
		return x.body, nil
	}
	b, err := x.readBodyWithin()
	if err != nil {
		x.w.Header().Set("Connection", "close")
		return nil, err
	}
	x.body, x.bodyRead = b, true
	return b, nil
}

func (x *exchange) readBodyWithin() ([]byte, *contract.Error) {
	r := x.r
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	limit := x.h.bodyCap(x.proto)
	if r.ContentLength > limit {
		// Refused before a byte of it is read; the server then closes the
		// connection rather than read it.
		return nil, errRequestTooLarge(limit)
	}
	rc := http.NewResponseController(x.w)
	if rc.SetReadDeadline(time.Now().Add(x.h.bodyTimeout)) == nil {
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	if r.ContentLength >= 0 && r.ContentLength <= bodyChunk {
		// A small body, nearly every one: its declared length is reserved
		// and read at once; net/http reads no further than it.
		if !x.reserve(r.ContentLength) {
			return nil, errThrottled()
		}
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, x.bodyError(err)
		}
		return buf, nil
	}
	// A larger body, or one of unknown length, reserves each chunk before
	// reading it: it holds the budget (and the memory) of what has
	// arrived, not of what it declares, so that connections that declare
	// large bodies and send nothing cannot hold the budget that everyone's
	// requests share for the body timeout.
	remaining := r.ContentLength // -1: unknown
	body := io.Reader(r.Body)
	if remaining < 0 {
		body = http.MaxBytesReader(x.w, r.Body, limit)
	}
	var chunks [][]byte
	for {
		n := int64(bodyChunk)
		if remaining >= 0 {
			if remaining == 0 {
				return bytes.Join(chunks, nil), nil
			}
			n = min(n, remaining)
		}
		if !x.reserve(n) {
			return nil, errThrottled()
		}
		c := make([]byte, n)
		k, err := io.ReadFull(body, c)
		chunks = append(chunks, c[:k])
		if remaining >= 0 {
			remaining -= int64(k)
			if err != nil {
				return nil, x.bodyError(err) // shorter than declared, or too slow
			}
			continue
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return bytes.Join(chunks, nil), nil
		}
		if err != nil {
			return nil, x.bodyError(err)
		}
	}
}

func (x *exchange) bodyError(err error) *contract.Error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return errRequestTooLarge(mbe.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errBodyTimeout(x.h.bodyTimeout)
	}
	return contract.ErrMalformedRequest("The request body could not be read.")
}

// reserve takes n more bytes of the budget for this request.
func (x *exchange) reserve(n int64) bool {
	if !x.h.budget.Take(n) {
		return false
	}
	x.held += n
	return true
}

// errRequestTooLarge answers a body over the handler's cap.
func errRequestTooLarge(limit int64) *contract.Error {
	return &contract.Error{Code: "RequestEntityTooLarge", Type: "RequestEntityTooLarge",
		Status: http.StatusRequestEntityTooLarge, Sender: true,
		Message: fmt.Sprintf("The request body must be at most %d bytes.", limit)}
}

// errThrottled answers a body the budget cannot hold now.
func errThrottled() *contract.Error {
	return contract.ErrRequestThrottled("Too many request bodies are in flight; retry the request later.")
}

// errBodyTimeout answers a body that did not arrive in time. RequestTimeout
// is a code the SDKs retry.
func errBodyTimeout(d time.Duration) *contract.Error {
	return &contract.Error{Code: "RequestTimeout", Type: "RequestTimeout", Status: http.StatusBadRequest, Sender: true,
		Message: fmt.Sprintf("The request body was not received within %s.", d)}
}
