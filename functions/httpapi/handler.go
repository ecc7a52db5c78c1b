// Package httpapi is the HTTP face of sluice: it speaks both wire protocols
// of Amazon SQS, AWS JSON 1.0 (current SDKs) and the older AWS Query protocol
// (form parameters in, XML out), decodes each request into the contract
// input type of its action, calls the service and encodes the output or the
// error the way Amazon SQS does.
//
// A request is JSON when it carries an X-Amz-Target header, Query otherwise.
// It may be sent to "/" or to a queue URL path ("/<account-id>/<queue-name>"),
// in which case the path supplies the QueueUrl the request leaves out.
//
// The handler holds no state of its own besides its options.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/functions/sigv4"
)

// Options configure the handler.
type Options struct {
	// Logger receives request logs (debug) and internal errors (error).
	// Nil means slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes caps a request body; 0 means the cap of its protocol,
	// contract.MaxJSONRequestBytes or contract.MaxQueryRequestBytes.
	MaxBodyBytes int64
	// RequestLogLevel is the level of the one line logged per request; nil
	// means debug (see observe.go).
	RequestLogLevel slog.Leveler
	// Observe, when set, is told about every request once it is answered.
	Observe func(*RequestInfo)
	// BodyMemory bounds the bytes all request bodies in flight may hold
	// together; beyond it requests are throttled (RequestThrottled). 0 means
	// DefaultBodyMemory.
	BodyMemory int64
	// Budget, when set, is the body budget this handler shares with other
	// front ends of the process (the console); BodyMemory is then unused.
	Budget *BodyBudget
	// BodyTimeout bounds how long a request body may take to arrive; 0
	// means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// TrustForwarded takes the scheme and host of queue URLs from the
	// X-Forwarded-Proto and X-Forwarded-Host headers, which a front end
	// (a load balancer, Cloud Run, API Gateway) sets. Only for a handler
	// that nothing reaches but through such a front end: anyone else can
	// send those headers too.
	TrustForwarded bool
	// Verify, when set, authenticates every request (functions/sigv4) once
	// its body is read and before anything of it is decoded or dispatched:
	// a refused request changes nothing and learns nothing. Its error is
	// answered as it is when it is a *contract.Error. Nil: no verification.
	Verify func(r *http.Request, body []byte) (Caller, error)
}

// Caller is whom a verified request acts for. An empty AccountID means
// the service's configured account.
type Caller struct {
	AccountID string
}

type handler struct {
	svc      *service.Service
	log      *slog.Logger
	max      int64
	ops      map[string]*operation
	reqLevel slog.Leveler
	observe  func(*RequestInfo)

	budget         *BodyBudget
	bodyTimeout    time.Duration
	trustForwarded bool
	verify         func(*http.Request, []byte) (Caller, error)
	regions        signingRegions
}

// signingRegions warns, once per region, of clients that sign for another
// region than the server's when nothing checks signatures (a check would
// refuse them): their ARNs name the server's region, not theirs.
type signingRegions struct {
	mu     sync.Mutex
	warned map[string]bool
}

// maxWarnedRegions bounds what signingRegions remembers (regions come
// from clients).
const maxWarnedRegions = 64

func (s *signingRegions) note(region, own string, log *slog.Logger) {
	if region == "" || region == own {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warned[region] || len(s.warned) >= maxWarnedRegions {
		return
	}
	if s.warned == nil {
		s.warned = map[string]bool{}
	}
	s.warned[region] = true
	log.Warn("a client signs for another region than this server's; its queue ARNs name the server's (set --region to its region, or give access keys to refuse such requests)",
		"signing_region", region, "server_region", own)
}

// NewHandler returns the http.Handler that serves the SQS API of svc over
// both protocols.
func NewHandler(svc *service.Service, opts Options) http.Handler {
	h := &handler{svc: svc, log: opts.Logger, max: opts.MaxBodyBytes, ops: operations,
		reqLevel: opts.RequestLogLevel, observe: opts.Observe,
		budget: opts.Budget, bodyTimeout: opts.BodyTimeout, trustForwarded: opts.TrustForwarded, verify: opts.Verify}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.reqLevel == nil {
		h.reqLevel = slog.LevelDebug
	}
	if h.budget == nil {
		h.budget = NewBodyBudget(opts.BodyMemory)
	}
	if h.bodyTimeout <= 0 {
		h.bodyTimeout = DefaultBodyTimeout
	}
	return h
}

// Actions lists the names of the actions the handler dispatches, sorted.
func Actions() []string { return actionNames() }

// protocol is what a request speaks; it decides how answers are written.
type protocol int

const (
	protoQuery protocol = iota
	protoJSON
)

func (p protocol) String() string {
	if p == protoJSON {
		return "json"
	}
	return "query"
}

const (
	headerTarget     = "X-Amz-Target"
	headerRequestID  = "x-amzn-RequestId"
	headerQueryError = "x-amzn-query-error"
	targetPrefix     = "AmazonSQS."
	contentTypeJSON  = "application/x-amz-json-1.0"
	contentTypeXML   = "text/xml"
)

// exchange is one request in flight.
type exchange struct {
	h      *handler
	w      http.ResponseWriter
	r      *http.Request
	id     string
	proto  protocol
	action string
	start  time.Time
	status int
	// queryJSON: a Query request that accepts application/json, answered
	// in JSON (see query_json.go).
	queryJSON bool
	// wrote is set once a response has been started.
	wrote bool
	// queue and errCode are for the request log and metrics.
	queue   string
	errCode string
	// held is what the body holds of the handler's budget.
	held int64
	// body is the request body once read (bodyRead).
	body     []byte
	bodyRead bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &exchange{h: h, w: w, r: r, id: newRequestID(), start: time.Now()}
	if _, ok := r.Header[http.CanonicalHeaderKey(headerTarget)]; ok {
		x.proto = protoJSON
	} else {
		// Known before verification, so that a refusal is answered in JSON too.
		x.queryJSON = acceptsJSON(r)
	}
	w.Header().Set(headerRequestID, x.id)

	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.log.Error("panic serving request", "request_id", x.id, "action", x.action, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !x.wrote {
				x.fail(contract.ErrInternal())
			}
		}
		x.done()
	}()

	defer func() { h.budget.Give(x.held) }()
	ctx := service.WithRequestID(service.WithRequestBase(r.Context(), requestBase(r, h.trustForwarded)), x.id)
	if h := r.Header.Get("X-Amzn-Trace-Id"); h != "" {
		ctx = service.WithTraceHeader(ctx, h)
	}
	if h.verify != nil {
		var ok bool
		if ctx, ok = x.authenticate(ctx); !ok {
			return
		}
	} else {
		h.regions.note(sigv4.ScopeRegion(r), h.svc.Region(), h.log)
	}
	if x.proto == protoJSON {
		x.serveJSON(ctx)
	} else {
		x.serveQuery(ctx)
	}
}

// authenticate reads the body and has it and the request verified; a
// refused request is answered here. The caller's account, when the key
// names one, is the account the request acts for.
func (x *exchange) authenticate(ctx context.Context) (context.Context, bool) {
	body, cerr := x.readBody()
	if cerr != nil {
		x.fail(cerr)
		return ctx, false
	}
	c, err := x.h.verify(x.r, body)
	if err != nil {
		x.fail(err)
		return ctx, false
	}
	if c.AccountID != "" {
		ctx = service.WithCaller(ctx, service.Caller{AccountID: c.AccountID, Region: x.h.svc.Region()})
	}
	return ctx, true
}

// call runs the operation and writes its output or error.
func (x *exchange) call(ctx context.Context, op *operation, in any) {
	if op.setQueueURL != nil && op.queueURL(in) == "" {
		if u := pathQueueURL(x.r, x.h.trustForwarded); u != "" {
			op.setQueueURL(in, u)
		}
	}
	x.queue = requestQueue(op, in)
	out, err := op.call(ctx, x.h.svc, in)
	if err != nil {
		x.fail(err)
		return
	}
	switch {
	case x.proto == protoJSON:
		x.writeJSON(out)
	case x.queryJSON:
		x.writeQueryJSON(op, out)
	default:
		x.writeXML(op, out)
	}
}

// fail writes err in the request's protocol. Errors that are not
// *contract.Error are ours: they are logged and answered as InternalError.
func (x *exchange) fail(err error) {
	var ce *contract.Error
	if !errors.As(err, &ce) {
		if errors.Is(err, context.Canceled) && x.r.Context().Err() != nil {
			x.h.log.Debug("request cancelled by the client", "request_id", x.id, "action", x.action)
		} else {
			x.h.log.Error("internal error", "request_id", x.id, "action", x.action, "error", err)
		}
		ce = contract.ErrInternal()
	}
	x.errCode = ce.Code
	switch {
	case x.proto == protoJSON:
		x.writeJSONError(ce)
	case x.queryJSON:
		x.writeQueryJSONError(ce)
	default:
		x.writeXMLError(ce)
	}
}

// contentTypeValue shares one header value slice per content type among
// the responses (net/http only reads it).
func contentTypeValue(ct string) []string {
	switch ct {
	case contentTypeJSON:
		return contentTypeJSONValue
	case contentTypeXML:
		return contentTypeXMLValue
	}
	return []string{ct}
}

var (
	contentTypeJSONValue = []string{contentTypeJSON}
	contentTypeXMLValue  = []string{contentTypeXML}
)

func (x *exchange) writeHead(contentType string, status int, n int) {
	h := x.w.Header()
	// Canonical keys assigned directly: Set would canonicalise them again.
	h["Content-Type"] = contentTypeValue(contentType)
	h["Content-Length"] = []string{strconv.Itoa(n)}
	x.status = status
	x.wrote = true
	x.w.WriteHeader(status)
}

func errStatus(e *contract.Error) int {
	if e.Status >= 400 && e.Status <= 599 {
		return e.Status
	}
	if e.Sender {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// RequestBase is scheme://host of r as the client addressed it, as the
// handler reads it for queue URLs (see Options.TrustForwarded), for other
// handlers of the same server that build queue URLs or check origins.
func RequestBase(r *http.Request, trustForwarded bool) string { return requestBase(r, trustForwarded) }

// requestBase is scheme://host of the request as the client addressed it:
// as it reached this server, or, with trustForwarded, as the front end
// before it says (the first value of each forwarding header).
func requestBase(r *http.Request, trustForwarded bool) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if trustForwarded {
		if p := firstForwarded(r, "X-Forwarded-Proto"); p == "http" || p == "https" {
			scheme = p
		}
		if h := firstForwarded(r, "X-Forwarded-Host"); h != "" && !strings.ContainsAny(h, "/?#@ ") {
			host = h
		}
	}
	if host == "" {
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			host = a.String()
		}
	}
	return scheme + "://" + host
}

// firstForwarded is the first value of a forwarding header, lower-cased
// and trimmed (a chain of proxies appends theirs after it).
func firstForwarded(r *http.Request, name string) string {
	v, _, _ := strings.Cut(r.Header.Get(name), ",")
	return strings.ToLower(strings.TrimSpace(v))
}

// pathQueueURL returns the absolute queue URL the request was sent to when
// its path has the form /<account-id>/<queue-name>, or "".
func pathQueueURL(r *http.Request, trustForwarded bool) string {
	p := strings.TrimPrefix(r.URL.Path, "/")
	p = strings.TrimSuffix(p, "/")
	account, name, ok := strings.Cut(p, "/")
	if !ok || account == "" || name == "" || strings.Contains(name, "/") {
		return ""
	}
	return requestBase(r, trustForwarded) + "/" + account + "/" + name
}

// newRequestID returns a random (version 4) UUID.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
