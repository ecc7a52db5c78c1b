package lambdahttp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// responseWriter buffers what the handler writes. The headers are those at
// WriteHeader, as a server sends them; later changes do not count.
type responseWriter struct {
	header http.Header
	sent   http.Header
	status int
	body   bytes.Buffer
}

func newResponseWriter() *responseWriter { return &responseWriter{header: http.Header{}} }

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.sent != nil || code < 200 { // 1xx: informational, not the answer
		return
	}
	w.status = code
	w.sent = w.header.Clone()
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.sent == nil {
		if w.header.Get("Content-Type") == "" && len(p) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(p)
}

// Flush does nothing: the answer goes back whole.
func (w *responseWriter) Flush() {}

// finish is what a server does when the handler returns without writing.
func (w *responseWriter) finish() {
	if w.sent == nil {
		w.WriteHeader(http.StatusOK)
	}
}

// encodedBody is the body as the event carries it: text when it is valid
// UTF-8, base64 otherwise.
func (w *responseWriter) encodedBody() (string, bool) {
	b := w.body.Bytes()
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// joined is the headers one value each, repeated ones joined with commas;
// Set-Cookie is left out (it cannot be joined).
func (w *responseWriter) joined() map[string]string {
	m := make(map[string]string, len(w.sent))
	for k, vs := range w.sent {
		if k == "Set-Cookie" {
			continue
		}
		m[k] = strings.Join(vs, ", ")
	}
	return m
}

func respondV2(w *responseWriter) ([]byte, error) {
	body, b64 := w.encodedBody()
	return json.Marshal(events.APIGatewayV2HTTPResponse{
		StatusCode:      w.status,
		Headers:         w.joined(),
		Cookies:         w.sent.Values("Set-Cookie"),
		Body:            body,
		IsBase64Encoded: b64,
	})
}

func respondV1(w *responseWriter) ([]byte, error) {
	body, b64 := w.encodedBody()
	return json.Marshal(events.APIGatewayProxyResponse{
		StatusCode:        w.status,
		MultiValueHeaders: w.sent,
		Body:              body,
		IsBase64Encoded:   b64,
	})
}

func albResponse(w *responseWriter) events.ALBTargetGroupResponse {
	body, b64 := w.encodedBody()
	return events.ALBTargetGroupResponse{
		StatusCode:        w.status,
		StatusDescription: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		Body:              body,
		IsBase64Encoded:   b64,
	}
}

func respondALB(w *responseWriter) ([]byte, error) {
	r := albResponse(w)
	r.Headers = w.joined()
	if c := w.sent.Values("Set-Cookie"); len(c) > 0 {
		r.Headers["Set-Cookie"] = c[len(c)-1] // one value each: the last wins
	}
	return json.Marshal(r)
}

func respondALBMulti(w *responseWriter) ([]byte, error) {
	r := albResponse(w)
	r.MultiValueHeaders = w.sent
	return json.Marshal(r)
}
