package lambdahttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Options configure a Handler.
type Options struct {
	// Scheduled, when set, is run for an EventBridge scheduled event (the
	// housekeeping a server does in the background; see docs/lambda.md).
	// Nil: such an event is refused.
	Scheduled func(ctx context.Context) error
}

// Handler is a Lambda handler (it implements aws-lambda-go's
// lambda.Handler) that serves HTTP events with an http.Handler.
type Handler struct {
	h    http.Handler
	opts Options
}

// New returns the Lambda handler that serves h.
func New(h http.Handler, opts Options) *Handler {
	return &Handler{h: h, opts: opts}
}

// Kind is the front end an event came from.
type Kind int

const (
	Unknown   Kind = iota
	V2             // function URL or HTTP API, payload format 2.0
	V1             // REST API, or HTTP API with payload format 1.0
	ALB            // Application Load Balancer target group
	Scheduled      // EventBridge scheduled event
)

func (k Kind) String() string {
	switch k {
	case V2:
		return "2.0"
	case V1:
		return "1.0"
	case ALB:
		return "alb"
	case Scheduled:
		return "scheduled"
	}
	return "unknown"
}

// probe holds what tells the events apart.
type probe struct {
	Version        string `json:"version"`
	HTTPMethod     string `json:"httpMethod"`
	Source         string `json:"source"`
	DetailType     string `json:"detail-type"`
	RequestContext struct {
		ELB  json.RawMessage `json:"elb"`
		HTTP json.RawMessage `json:"http"`
	} `json:"requestContext"`
}

// KindOf says which front end sent payload.
func KindOf(payload []byte) (Kind, error) {
	var p probe
	if err := json.Unmarshal(payload, &p); err != nil {
		return Unknown, fmt.Errorf("lambdahttp: the event is not a JSON object: %w", err)
	}
	switch {
	case p.Version == "2.0" && len(p.RequestContext.HTTP) > 0:
		return V2, nil
	case len(p.RequestContext.ELB) > 0:
		return ALB, nil
	case p.HTTPMethod != "":
		return V1, nil
	case p.Source == "aws.events" && p.DetailType == "Scheduled Event":
		return Scheduled, nil
	}
	return Unknown, errors.New("lambdahttp: not an HTTP event of a function URL, API Gateway or an ALB, nor a scheduled event")
}

// Invoke serves one event. An error is the invocation's error (the front
// end answers 502): an event it cannot read, or a failed scheduled run.
// Whatever the HTTP handler answers, errors included, is a response.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	kind, err := KindOf(payload)
	if err != nil {
		return nil, err
	}
	if kind == Scheduled {
		if h.opts.Scheduled == nil {
			return nil, errors.New("lambdahttp: a scheduled event, and no scheduled work is set")
		}
		if err := h.opts.Scheduled(ctx); err != nil {
			return nil, err
		}
		return []byte("{}"), nil
	}
	req, respond, err := decode(ctx, kind, payload)
	if err != nil {
		return nil, err
	}
	w := newResponseWriter()
	h.h.ServeHTTP(w, req)
	w.finish()
	return respond(w)
}

// decode turns payload into a request and returns how to answer it.
func decode(ctx context.Context, kind Kind, payload []byte) (*http.Request, func(*responseWriter) ([]byte, error), error) {
	switch kind {
	case V2:
		return decodeV2(ctx, payload)
	case V1:
		return decodeV1(ctx, payload)
	case ALB:
		return decodeALB(ctx, payload)
	}
	return nil, nil, fmt.Errorf("lambdahttp: no request in a %s event", kind)
}
