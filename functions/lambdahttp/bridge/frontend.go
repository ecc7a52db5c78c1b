// Package bridge stands in for the AWS front ends of a Lambda function, to
// test sluice's Lambda binary for real: it takes an ordinary HTTP request
// (from a real SQS client), wraps it into the event a function URL, an API
// Gateway HTTP or REST API or an Application Load Balancer would send,
// invokes the function under the Lambda Runtime Interface Emulator (RIE,
// see runtime.go) and unwraps the function's answer into the HTTP response
// that front end would send back.
//
// The events are built as those front ends build them: 2.0 events with
// lowercased headers, repeated ones joined with commas, cookies apart,
// rawPath and rawQueryString; REST events (of the default endpoint, whose
// path starts with the stage, RESTStage) with the decoded path without
// the stage, decoded parameters in single- and multi-value maps and the
// client's path, stage included, in requestContext.path; ALB events with the parameters left
// percent-encoded, in multi-value maps when that mode is on. Each carries
// the public host (Host header and requestContext.domainName) and
// X-Forwarded-Proto, so that the function sees the request as AWS would
// hand it over.
//
// Bodies: a REST API passes the body as text unless binary media types are
// configured (RESTBinary: "*/*", every body base64); the other front ends
// base64-encode every body whose Content-Type is not text (text/*, JSON,
// XML, JavaScript, form-encoded), so the SDKs' application/x-amz-json-1.0
// bodies arrive base64 and Query forms as text.
//
// It is test tooling, not a front end to deploy: it checks no signatures
// and holds the emulator's one execution environment for one request at a
// time, as Lambda does per environment.
package bridge

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// FrontEnd is the AWS service the bridge stands in for.
type FrontEnd string

const (
	FunctionURL FrontEnd = "function-url" // payload 2.0
	HTTPAPI     FrontEnd = "http-api"     // payload 2.0, $default stage
	REST        FrontEnd = "rest"         // payload 1.0, stage "prod", no binary media types
	RESTBinary  FrontEnd = "rest-binary"  // payload 1.0, binary media types "*/*"
	ALB         FrontEnd = "alb"          // multi-value headers off
	ALBMulti    FrontEnd = "alb-multi"    // multi-value headers on
)

// FrontEnds are all of them.
var FrontEnds = []FrontEnd{FunctionURL, HTTPAPI, REST, RESTBinary, ALB, ALBMulti}

// DefaultHost is the public host of each front end's endpoint, in the form
// AWS gives it.
func (f FrontEnd) DefaultHost() string {
	switch f {
	case FunctionURL:
		return "abcdefghijklmnopqrstuvwxyz234567.lambda-url.us-east-1.on.aws"
	case HTTPAPI:
		return "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
	case REST, RESTBinary:
		return "r1s2t3u4v5.execute-api.us-east-1.amazonaws.com"
	}
	return "sluice-123456789.us-east-1.elb.amazonaws.com"
}

// Public is the endpoint the client addressed.
type Public struct {
	Host  string // host[:port]
	Proto string // http or https
}

// Request is an HTTP request as the front end received it.
type Request struct {
	Method   string
	Path     string // percent-encoded, as sent
	RawQuery string
	Header   http.Header
	Body     []byte
	SourceIP string
}

// FromHTTP takes what the bridge needs of r, whose body it reads whole.
func FromHTTP(r *http.Request, body []byte) Request {
	ip := r.RemoteAddr
	if h, _, ok := strings.Cut(ip, ":"); ok && !strings.Contains(ip, "[") {
		ip = h
	}
	return Request{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, SourceIP: ip}
}

// textual says whether a front end that encodes binary bodies passes this
// content type as text.
func textual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return contentType == ""
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || mt == "application/xml" ||
		mt == "application/javascript" || mt == "application/x-www-form-urlencoded" ||
		strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

// Event wraps req into f's event; the second result says whether its body
// went base64.
func (f FrontEnd) Event(req Request, pub Public, requestID string, now time.Time) ([]byte, bool, error) {
	h := req.Header.Clone()
	h.Del("Host")
	h.Set("X-Forwarded-Proto", pub.Proto)
	h.Set("X-Forwarded-Port", port(pub))
	h.Set("X-Forwarded-For", req.SourceIP)
	b64 := false
	switch f {
	case RESTBinary:
		b64 = len(req.Body) > 0
	case REST:
	default:
		b64 = len(req.Body) > 0 && !textual(h.Get("Content-Type"))
	}
	body := string(req.Body)
	if b64 {
		body = base64.StdEncoding.EncodeToString(req.Body)
	}
	path, err := url.PathUnescape(req.Path)
	if err != nil {
		return nil, false, fmt.Errorf("bridge: bad path %q: %w", req.Path, err)
	}
	query, err := url.ParseQuery(req.RawQuery)
	if err != nil && f != ALB && f != ALBMulti {
		return nil, false, fmt.Errorf("bridge: bad query %q: %w", req.RawQuery, err)
	}
	var ev any
	switch f {
	case FunctionURL, HTTPAPI:
		ev = f.v2(req, pub, h, path, query, body, b64, requestID, now)
	case REST, RESTBinary:
		ev = f.v1(req, pub, h, path, query, body, b64, requestID, now)
	case ALB, ALBMulti:
		ev = f.alb(req, pub, h, body, b64)
	default:
		return nil, false, fmt.Errorf("bridge: unknown front end %q", f)
	}
	out, err := json.Marshal(ev)
	return out, b64, err
}

func port(pub Public) string {
	if _, p, ok := strings.Cut(pub.Host, ":"); ok {
		return p
	}
	if pub.Proto == "http" {
		return "80"
	}
	return "443"
}

func (f FrontEnd) v2(req Request, pub Public, h http.Header, path string, query url.Values, body string, b64 bool, id string, now time.Time) events.APIGatewayV2HTTPRequest {
	var cookies []string
	for _, c := range h.Values("Cookie") {
		for part := range strings.SplitSeq(c, ";") {
			if part = strings.TrimSpace(part); part != "" {
				cookies = append(cookies, part)
			}
		}
	}
	h.Del("Cookie")
	headers := map[string]string{"host": pub.Host}
	for k, vs := range h {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	var qs map[string]string
	if len(query) > 0 {
		qs = map[string]string{}
		for k, vs := range query {
			qs[k] = strings.Join(vs, ",")
		}
	}
	hostID, _, _ := strings.Cut(pub.Host, ".")
	rc := events.APIGatewayV2HTTPRequestContext{
		RouteKey: "$default", AccountID: "anonymous", Stage: "$default", RequestID: id,
		APIID: hostID, DomainName: pub.Host, DomainPrefix: hostID,
		Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
		HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
			Method: req.Method, Path: path, Protocol: "HTTP/1.1", SourceIP: req.SourceIP, UserAgent: h.Get("User-Agent"),
		},
	}
	if f == HTTPAPI {
		rc.AccountID = "123456789012"
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: req.Path, RawQueryString: req.RawQuery,
		Cookies: cookies, Headers: headers, QueryStringParameters: qs, RequestContext: rc,
		Body: body, IsBase64Encoded: b64,
	}
}

// RESTStage is the REST API's stage: its endpoint is
// https://<DefaultHost>/prod.
const RESTStage = "prod"

// Endpoint is the URL clients are given for f's public host.
func (f FrontEnd) Endpoint(pub Public) string {
	u := pub.Proto + "://" + pub.Host
	if f == REST || f == RESTBinary {
		u += "/" + RESTStage
	}
	return u
}

func (f FrontEnd) v1(req Request, pub Public, h http.Header, path string, query url.Values, body string, b64 bool, id string, now time.Time) events.APIGatewayProxyRequest {
	single := map[string]string{"Host": pub.Host}
	multi := map[string][]string{"Host": {pub.Host}}
	for k, vs := range h {
		single[k] = vs[len(vs)-1]
		multi[k] = slices.Clone(vs)
	}
	var qs map[string]string
	var mqs map[string][]string
	if len(query) > 0 {
		qs, mqs = map[string]string{}, map[string][]string{}
		for k, vs := range query {
			qs[k] = vs[len(vs)-1]
			mqs[k] = vs
		}
	}
	hostID, _, _ := strings.Cut(pub.Host, ".")
	// The default endpoint's path starts with the stage, which event.path
	// leaves out and requestContext.path keeps.
	resource := path
	if rest, ok := strings.CutPrefix(path, "/"+RESTStage); ok && (rest == "" || rest[0] == '/') {
		resource = cmp.Or(rest, "/")
	}
	return events.APIGatewayProxyRequest{
		Resource: "/{proxy+}", Path: resource, HTTPMethod: req.Method,
		Headers: single, MultiValueHeaders: multi,
		QueryStringParameters: qs, MultiValueQueryStringParameters: mqs,
		PathParameters: map[string]string{"proxy": strings.TrimPrefix(resource, "/")},
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID: "123456789012", ResourceID: "abc123", Stage: RESTStage, RequestID: id,
			Identity:     events.APIGatewayRequestIdentity{SourceIP: req.SourceIP, UserAgent: h.Get("User-Agent")},
			ResourcePath: "/{proxy+}", Path: path, HTTPMethod: req.Method,
			APIID: hostID, DomainName: pub.Host, DomainPrefix: hostID, Protocol: "HTTP/1.1",
			RequestTime: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), RequestTimeEpoch: now.UnixMilli(),
		},
		Body: body, IsBase64Encoded: b64,
	}
}

func (f FrontEnd) alb(req Request, pub Public, h http.Header, body string, b64 bool) events.ALBTargetGroupRequest {
	// The load balancer leaves the parameters percent-encoded.
	mqs := map[string][]string{}
	for part := range strings.SplitSeq(req.RawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		mqs[k] = append(mqs[k], v)
	}
	ev := events.ALBTargetGroupRequest{
		HTTPMethod: req.Method, Path: req.Path,
		RequestContext: events.ALBTargetGroupRequestContext{ELB: events.ELBContext{
			TargetGroupArn: "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/sluice/0123456789abcdef"}},
		Body: body, IsBase64Encoded: b64,
	}
	if f == ALBMulti {
		ev.MultiValueQueryStringParameters = mqs
		ev.MultiValueHeaders = map[string][]string{"host": {pub.Host}}
		for k, vs := range h {
			ev.MultiValueHeaders[strings.ToLower(k)] = slices.Clone(vs)
		}
		return ev
	}
	ev.QueryStringParameters = map[string]string{}
	for k, vs := range mqs {
		ev.QueryStringParameters[k] = vs[len(vs)-1]
	}
	ev.Headers = map[string]string{"host": pub.Host}
	for k, vs := range h {
		ev.Headers[strings.ToLower(k)] = vs[len(vs)-1]
	}
	return ev
}

// Response is the HTTP response the front end sends back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Base64 says the function's answer carried its body base64.
	Base64 bool
}

// ErrFunction is a function error (or an answer that is no response
// event): the front end answers 502.
var ErrFunction = errors.New("bridge: the function failed")

// Response unwraps the function's output as f does.
func (f FrontEnd) Response(out []byte) (*Response, error) {
	var probe struct {
		StatusCode *int   `json:"statusCode"`
		ErrorType  string `json:"errorType"`
		ErrorMsg   string `json:"errorMessage"`
	}
	if err := json.Unmarshal(out, &probe); err != nil || probe.StatusCode == nil {
		return nil, fmt.Errorf("%w: %s %s: %.300s", ErrFunction, probe.ErrorType, probe.ErrorMsg, out)
	}
	resp := &Response{Header: http.Header{}}
	var body string
	switch f {
	case FunctionURL, HTTPAPI:
		var r events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, err
		}
		resp.Status, body, resp.Base64 = r.StatusCode, r.Body, r.IsBase64Encoded
		for k, v := range r.Headers {
			resp.Header.Set(k, v)
		}
		for k, vs := range r.MultiValueHeaders {
			resp.Header[http.CanonicalHeaderKey(k)] = vs
		}
		for _, c := range r.Cookies {
			resp.Header.Add("Set-Cookie", c)
		}
	case REST, RESTBinary:
		var r events.APIGatewayProxyResponse
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, err
		}
		resp.Status, body, resp.Base64 = r.StatusCode, r.Body, r.IsBase64Encoded
		for k, v := range r.Headers {
			resp.Header.Set(k, v)
		}
		for k, vs := range r.MultiValueHeaders {
			resp.Header[http.CanonicalHeaderKey(k)] = vs
		}
	case ALB, ALBMulti:
		var r events.ALBTargetGroupResponse
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, err
		}
		resp.Status, body, resp.Base64 = r.StatusCode, r.Body, r.IsBase64Encoded
		if f == ALBMulti {
			for k, vs := range r.MultiValueHeaders {
				resp.Header[http.CanonicalHeaderKey(k)] = vs
			}
		} else {
			for k, v := range r.Headers {
				resp.Header.Set(k, v)
			}
		}
	}
	resp.Body = []byte(body)
	// A REST API without binary media types hands a base64 body on as it
	// is, undecoded.
	if resp.Base64 && f != REST {
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, fmt.Errorf("%w: its base64 body does not decode: %v", ErrFunction, err)
		}
		resp.Body = b
	}
	resp.Header.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	return resp, nil
}
