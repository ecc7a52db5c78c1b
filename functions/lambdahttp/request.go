package lambdahttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

func decodeV2(ctx context.Context, payload []byte) (*http.Request, func(*responseWriter) ([]byte, error), error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, nil, fmt.Errorf("lambdahttp: reading a 2.0 event: %w", err)
	}
	path := ev.RawPath
	if path == "" {
		path = (&url.URL{Path: ev.RequestContext.HTTP.Path}).EscapedPath()
	}
	h := make(http.Header, len(ev.Headers)+1)
	for k, v := range ev.Headers {
		// 2.0 joins repeated headers with commas into one value; it stays
		// one value here, as a server would read "a, b".
		h.Set(k, v)
	}
	if len(ev.Cookies) > 0 {
		h.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	if h.Get("X-Forwarded-Proto") == "" {
		h.Set("X-Forwarded-Proto", "https")
	}
	r, err := newRequest(ctx, ev.RequestContext.HTTP.Method, path, ev.RawQueryString, h,
		ev.RequestContext.DomainName, ev.Body, ev.IsBase64Encoded)
	if err != nil {
		return nil, nil, err
	}
	r.RemoteAddr = remoteAddr(ev.RequestContext.HTTP.SourceIP)
	if p := ev.RequestContext.HTTP.Protocol; p != "" {
		setProto(r, p)
	}
	return r, respondV2, nil
}

func decodeV1(ctx context.Context, payload []byte) (*http.Request, func(*responseWriter) ([]byte, error), error) {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, nil, fmt.Errorf("lambdahttp: reading a 1.0 event: %w", err)
	}
	h := headersOf(ev.Headers, ev.MultiValueHeaders)
	if h.Get("X-Forwarded-Proto") == "" {
		h.Set("X-Forwarded-Proto", "https")
	}
	// requestContext.path is the path as the client sent it (a REST API's
	// event.path leaves out the stage or base path): a signature covers it.
	path := ev.RequestContext.Path
	if path == "" {
		path = ev.Path
	}
	// API Gateway decodes the query parameters; encode them again.
	q := url.Values{}
	if len(ev.MultiValueQueryStringParameters) > 0 {
		for k, vs := range ev.MultiValueQueryStringParameters {
			q[k] = append(q[k], vs...)
		}
	} else {
		for k, v := range ev.QueryStringParameters {
			q.Set(k, v)
		}
	}
	r, err := newRequest(ctx, ev.HTTPMethod, (&url.URL{Path: path}).EscapedPath(), q.Encode(), h,
		ev.RequestContext.DomainName, ev.Body, ev.IsBase64Encoded)
	if err != nil {
		return nil, nil, err
	}
	r.RemoteAddr = remoteAddr(ev.RequestContext.Identity.SourceIP)
	if p := ev.RequestContext.Protocol; p != "" {
		setProto(r, p)
	}
	return r, respondV1, nil
}

func decodeALB(ctx context.Context, payload []byte) (*http.Request, func(*responseWriter) ([]byte, error), error) {
	var ev events.ALBTargetGroupRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, nil, fmt.Errorf("lambdahttp: reading an ALB event: %w", err)
	}
	multi := ev.MultiValueHeaders != nil || ev.MultiValueQueryStringParameters != nil
	h := headersOf(ev.Headers, ev.MultiValueHeaders)
	// The load balancer passes the parameters on as they came, still
	// percent-encoded: join them, do not encode them again.
	var pairs []string
	if multi {
		for k, vs := range ev.MultiValueQueryStringParameters {
			for _, v := range vs {
				pairs = append(pairs, pair(k, v))
			}
		}
	} else {
		for k, v := range ev.QueryStringParameters {
			pairs = append(pairs, pair(k, v))
		}
	}
	slices.Sort(pairs) // maps have no order; this one is stable
	r, err := newRequest(ctx, ev.HTTPMethod, ev.Path, strings.Join(pairs, "&"), h, "", ev.Body, ev.IsBase64Encoded)
	if err != nil {
		return nil, nil, err
	}
	if ff := h.Get("X-Forwarded-For"); ff != "" {
		first, _, _ := strings.Cut(ff, ",")
		r.RemoteAddr = remoteAddr(strings.TrimSpace(first))
	}
	if multi {
		return r, respondALBMulti, nil
	}
	return r, respondALB, nil
}

// remoteAddr is the client's address in a server's form, host:port; the
// events do not carry the port.
func remoteAddr(ip string) string {
	if ip == "" {
		return ""
	}
	return net.JoinHostPort(ip, "0")
}

func pair(k, v string) string {
	if v == "" && k != "" {
		return k + "="
	}
	return k + "=" + v
}

// headersOf merges an event's single- and multi-value headers; where both
// name a header, the multi-value list is the whole of it.
func headersOf(single map[string]string, multi map[string][]string) http.Header {
	h := make(http.Header, len(single)+len(multi))
	for k, vs := range multi {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for k, v := range single {
		if _, ok := h[http.CanonicalHeaderKey(k)]; !ok {
			h.Set(k, v)
		}
	}
	return h
}

// newRequest builds the server-side request: path is percent-encoded as
// sent, host is the fallback when the headers name none.
func newRequest(ctx context.Context, method, path, rawQuery string, h http.Header, host, body string, b64 bool) (*http.Request, error) {
	var data []byte
	if b64 {
		var err error
		if data, err = base64.StdEncoding.DecodeString(body); err != nil {
			return nil, fmt.Errorf("lambdahttp: the event's body is not base64: %w", err)
		}
	} else {
		data = []byte(body)
	}
	if path == "" {
		path = "/"
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return nil, fmt.Errorf("lambdahttp: bad path %q: %w", path, err)
	}
	u.RawQuery = rawQuery
	if hh := h.Get("Host"); hh != "" {
		host = hh
	}
	h.Del("Host") // a server's request carries it in Host only
	if method == "" {
		method = http.MethodGet
	}
	r := &http.Request{
		Method:        method,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Host:          host,
		RequestURI:    u.RequestURI(),
		ContentLength: int64(len(data)),
		Body:          http.NoBody,
	}
	if len(data) > 0 {
		r.Body = readCloser{bytes.NewReader(data)}
	}
	return r.WithContext(ctx), nil
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func setProto(r *http.Request, proto string) {
	if major, minor, ok := http.ParseHTTPVersion(proto); ok {
		r.Proto, r.ProtoMajor, r.ProtoMinor = proto, major, minor
	}
}
