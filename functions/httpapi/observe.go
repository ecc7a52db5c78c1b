package httpapi

import (
	"context"
	"strings"
	"time"

	"github.com/sluicehq/sluice/contract"
)

// RequestInfo is what the handler tells Options.Observe about an answered
// request.
type RequestInfo struct {
	ID       string // the request id of the response (x-amzn-RequestId, <RequestId>)
	Protocol string // "json" or "query"
	// Action is the action's name when the handler dispatches it, or ""
	// (an unknown or missing action: its text is the client's, unbounded).
	Action    string
	Queue     string // the queue's name, when the request names one
	Status    int
	ErrorCode string // the error's (Query) code; "" on success
	Duration  time.Duration
}

// done logs the request line and tells the observer.
func (x *exchange) done() {
	d := time.Since(x.start)
	if x.h.log.Enabled(context.Background(), x.h.reqLevel.Level()) {
		x.h.log.Log(context.Background(), x.h.reqLevel.Level(), "request",
			"request_id", x.id, "protocol", x.proto.String(), "action", x.action, "queue", x.queue,
			"method", x.r.Method, "path", x.r.URL.Path, "status", x.status, "error_code", x.errCode,
			"duration", d)
	}
	if x.h.observe != nil {
		action := ""
		if _, ok := x.h.ops[x.action]; ok {
			action = x.action
		}
		x.h.observe(&RequestInfo{ID: x.id, Protocol: x.proto.String(), Action: action, Queue: x.queue,
			Status: x.status, ErrorCode: x.errCode, Duration: d})
	}
}

// requestQueue names the queue a request is about: the last part of its
// QueueUrl, or its QueueName.
func requestQueue(op *operation, in any) string {
	if op.queueURL != nil {
		u := op.queueURL(in)
		return u[strings.LastIndexByte(u, '/')+1:]
	}
	switch v := in.(type) {
	case *contract.CreateQueueInput:
		return v.QueueName
	case *contract.GetQueueUrlInput:
		return v.QueueName
	}
	return ""
}
