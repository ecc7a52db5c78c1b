package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/contract"
)

// ErrorHandler answers every request with e, in the request's protocol and
// with the headers NewHandler's handler sets (a request id, the Query error
// header on JSON), without reading the body. An entry point serves it while
// it has no service to call, such as a function whose store could not be
// opened at a cold start: SDKs then see an SQS error they retry, not a
// connection reset or a page of HTML. Only opts.Logger and
// opts.RequestLogLevel apply.
func ErrorHandler(e *contract.Error, opts Options) http.Handler {
	h := &handler{log: opts.Logger, reqLevel: opts.RequestLogLevel}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.reqLevel == nil {
		h.reqLevel = slog.LevelDebug
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := &exchange{h: h, w: w, r: r, id: newRequestID(), start: time.Now()}
		if _, ok := r.Header[http.CanonicalHeaderKey(headerTarget)]; ok {
			x.proto = protoJSON
		} else {
			x.queryJSON = acceptsJSON(r)
		}
		w.Header().Set(headerRequestID, x.id)
		x.errCode = e.Code
		switch {
		case x.proto == protoJSON:
			x.writeJSONError(e)
		case x.queryJSON:
			x.writeQueryJSONError(e)
		default:
			x.writeXMLError(e)
		}
		x.done()
	})
}
