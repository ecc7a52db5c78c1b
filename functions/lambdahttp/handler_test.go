package lambdahttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// seen is what echo saw of a request.
type seen struct {
	Method, Host, Path, RawQuery, Proto, Remote string
	Header                                      http.Header
	Body                                        string
	Query                                       map[string][]string
}

// echo answers with what it saw, as JSON, and sets two cookies.
func echo(t *testing.T) (http.Handler, *seen) {
	var s seen
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		s = seen{Method: r.Method, Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
			Proto: r.Header.Get("X-Forwarded-Proto"), Remote: r.RemoteAddr, Header: r.Header,
			Body: string(b), Query: r.URL.Query()}
		http.SetCookie(w, &http.Cookie{Name: "a", Value: "1"})
		http.SetCookie(w, &http.Cookie{Name: "b", Value: "2"})
		w.Header().Add("X-Multi", "x")
		w.Header().Add("X-Multi", "y")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTeapot)
		w.Header().Set("X-Late", "not sent") // after WriteHeader: not part of the answer
		_, _ = w.Write([]byte("ok"))
	}), &s
}

func invoke(t *testing.T, h http.Handler, ev any) []byte {
	t.Helper()
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := New(h, Options{}).Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestV2(t *testing.T) {
	h, s := echo(t)
	out := invoke(t, h, events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: "/000000000000/a%2Fb", RawQueryString: "x=1&x=2&y=a%26b",
		Cookies: []string{"c1=v1", "c2=v2"},
		Headers: map[string]string{"host": "id.lambda-url.us-east-1.on.aws", "x-list": "a, b", "content-type": "application/x-amz-json-1.0"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "ignored.example",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", SourceIP: "192.0.2.1", Protocol: "HTTP/1.1"}},
		Body: base64.StdEncoding.EncodeToString([]byte("{\"QueueName\":\"q\"}")), IsBase64Encoded: true,
	})
	if s.Method != "POST" || s.Host != "id.lambda-url.us-east-1.on.aws" || s.Path != "/000000000000/a/b" ||
		s.RawQuery != "x=1&x=2&y=a%26b" || s.Proto != "https" || s.Remote != "192.0.2.1:0" {
		t.Errorf("request %+v", s)
	}
	if s.Body != `{"QueueName":"q"}` {
		t.Errorf("body %q", s.Body)
	}
	if got := s.Header.Values("X-List"); len(got) != 1 || got[0] != "a, b" {
		t.Errorf("X-List %q: a 2.0 header is one value", got)
	}
	if got := s.Header.Get("Cookie"); got != "c1=v1; c2=v2" {
		t.Errorf("Cookie %q", got)
	}
	if s.Header.Get("Host") != "" {
		t.Errorf("Host left in the headers")
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 418 || resp.Body != "ok" || resp.IsBase64Encoded || resp.Headers["X-Multi"] != "x, y" ||
		resp.Headers["X-Late"] != "" || strings.Join(resp.Cookies, " ") != "a=1 b=2" || resp.Headers["Set-Cookie"] != "" {
		t.Errorf("response %+v", resp)
	}
}

func TestV2NoHostHeader(t *testing.T) {
	h, s := echo(t)
	invoke(t, h, events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/",
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "api.example.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}})
	if s.Host != "api.example.com" {
		t.Errorf("host %q, want the domainName", s.Host)
	}
}

// TestStagePaths: the path is the one the client sent, stage and all, as
// its signature covers it.
func TestStagePaths(t *testing.T) {
	h, s := echo(t)
	invoke(t, h, events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/prod/000000000000/q",
		RequestContext: events.APIGatewayV2HTTPRequestContext{Stage: "prod",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}}})
	if s.Path != "/prod/000000000000/q" {
		t.Errorf("2.0 on stage prod: path %q", s.Path)
	}
	invoke(t, h, events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/000000000000/q",
		RequestContext: events.APIGatewayProxyRequestContext{Stage: "prod", Path: "/prod/000000000000/q"}})
	if s.Path != "/prod/000000000000/q" {
		t.Errorf("REST on stage prod: path %q, want requestContext.path", s.Path)
	}
	invoke(t, h, events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/000000000000/q"})
	if s.Path != "/000000000000/q" {
		t.Errorf("1.0 without requestContext.path: path %q", s.Path)
	}
}

func TestV1(t *testing.T) {
	h, s := echo(t)
	out := invoke(t, h, events.APIGatewayProxyRequest{
		HTTPMethod: "GET", Path: "/000000000000/q",
		Headers:               map[string]string{"Host": "r.execute-api.us-east-1.amazonaws.com", "X-Forwarded-Proto": "https", "X-Dup": "2"},
		MultiValueHeaders:     map[string][]string{"X-Dup": {"1", "2"}},
		QueryStringParameters: map[string]string{"Action": "SendMessage", "MessageBody": "a b&c"},
		MultiValueQueryStringParameters: map[string][]string{"Action": {"SendMessage"}, "MessageBody": {"a b&c"},
			"Attr": {"x", "y"}},
		RequestContext: events.APIGatewayProxyRequestContext{DomainName: "r.execute-api.us-east-1.amazonaws.com",
			Identity: events.APIGatewayRequestIdentity{SourceIP: "192.0.2.2"}},
		Body: "plain",
	})
	if s.Host != "r.execute-api.us-east-1.amazonaws.com" || s.Path != "/000000000000/q" || s.Body != "plain" || s.Remote != "192.0.2.2:0" {
		t.Errorf("request %+v", s)
	}
	if got := s.Query["MessageBody"]; len(got) != 1 || got[0] != "a b&c" {
		t.Errorf("MessageBody %q", got)
	}
	if got := s.Query["Attr"]; len(got) != 2 || got[0] != "x" || got[1] != "y" {
		t.Errorf("Attr %q: multi-value parameters", got)
	}
	if got := s.Header.Values("X-Dup"); len(got) != 2 {
		t.Errorf("X-Dup %q: multi-value headers", got)
	}
	var resp events.APIGatewayProxyResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 418 || resp.Body != "ok" || len(resp.MultiValueHeaders["Set-Cookie"]) != 2 || len(resp.MultiValueHeaders["X-Multi"]) != 2 {
		t.Errorf("response %+v", resp)
	}
}

func TestALB(t *testing.T) {
	for _, multi := range []bool{false, true} {
		h, s := echo(t)
		ev := events.ALBTargetGroupRequest{HTTPMethod: "GET", Path: "/",
			RequestContext: events.ALBTargetGroupRequestContext{ELB: events.ELBContext{TargetGroupArn: "arn:tg"}}}
		// The load balancer leaves parameters encoded.
		if multi {
			ev.MultiValueHeaders = map[string][]string{"host": {"lb.example.com"}, "x-forwarded-for": {"192.0.2.3, 10.0.0.1"}}
			ev.MultiValueQueryStringParameters = map[string][]string{"QueueUrl": {"http%3A%2F%2Fh%2F000000000000%2Fq"}, "a": {"1", "2"}}
		} else {
			ev.Headers = map[string]string{"host": "lb.example.com", "x-forwarded-for": "192.0.2.3, 10.0.0.1"}
			ev.QueryStringParameters = map[string]string{"QueueUrl": "http%3A%2F%2Fh%2F000000000000%2Fq"}
		}
		out := invoke(t, h, ev)
		if s.Host != "lb.example.com" || s.Remote != "192.0.2.3:0" || s.Proto != "" {
			t.Errorf("multi %v: request %+v", multi, s)
		}
		if got := s.Query["QueueUrl"]; len(got) != 1 || got[0] != "http://h/000000000000/q" {
			t.Errorf("multi %v: QueueUrl %q, want it decoded once", multi, got)
		}
		if multi && len(s.Query["a"]) != 2 {
			t.Errorf("a %q", s.Query["a"])
		}
		var resp events.ALBTargetGroupResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 418 || resp.StatusDescription != "418 I'm a teapot" || resp.Body != "ok" {
			t.Errorf("multi %v: response %+v", multi, resp)
		}
		if multi && (resp.Headers != nil || len(resp.MultiValueHeaders["Set-Cookie"]) != 2) {
			t.Errorf("multi: headers %v / %v", resp.Headers, resp.MultiValueHeaders)
		}
		if !multi && (resp.MultiValueHeaders != nil || resp.Headers["Set-Cookie"] != "b=2" || resp.Headers["X-Multi"] != "x, y") {
			t.Errorf("single: headers %v / %v", resp.Headers, resp.MultiValueHeaders)
		}
	}
}

func TestBinaryAnswerAndSilentHandler(t *testing.T) {
	bin := []byte{0x01, 0x80, 0xc3, 0x28}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bin" {
			_, _ = w.Write(bin)
		}
	})
	ev := func(path string) events.APIGatewayV2HTTPRequest {
		return events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}}}
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(invoke(t, h, ev("/bin")), &resp); err != nil {
		t.Fatal(err)
	}
	if got, _ := base64.StdEncoding.DecodeString(resp.Body); !resp.IsBase64Encoded || string(got) != string(bin) || resp.StatusCode != 200 {
		t.Errorf("binary answer %+v", resp)
	}
	if resp.Headers["Content-Type"] != "application/octet-stream" {
		t.Errorf("Content-Type %q: sniffed as a server does", resp.Headers["Content-Type"])
	}
	resp = events.APIGatewayV2HTTPResponse{}
	if err := json.Unmarshal(invoke(t, h, ev("/silent")), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Body != "" {
		t.Errorf("a handler that writes nothing: %+v, want 200", resp)
	}
}

func TestScheduledAndUnknown(t *testing.T) {
	ran := 0
	h := New(http.NotFoundHandler(), Options{Scheduled: func(context.Context) error { ran++; return nil }})
	sched := []byte(`{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`)
	if _, err := h.Invoke(context.Background(), sched); err != nil || ran != 1 {
		t.Errorf("scheduled: %v, ran %d", err, ran)
	}
	failing := New(http.NotFoundHandler(), Options{Scheduled: func(context.Context) error { return errors.New("boom") }})
	if _, err := failing.Invoke(context.Background(), sched); err == nil {
		t.Error("a failed scheduled run is no invocation error")
	}
	for _, p := range []string{`{"Records":[]}`, `[]`, `{"version":"2.0"}`} {
		if _, err := h.Invoke(context.Background(), []byte(p)); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
	if _, err := h.Invoke(context.Background(), []byte(`{"version":"2.0","rawPath":"/","requestContext":{"http":{"method":"POST"}},"body":"!!","isBase64Encoded":true}`)); err == nil {
		t.Error("a body that is not base64: no error")
	}
}

func TestKindOf(t *testing.T) {
	for payload, want := range map[string]Kind{
		`{"version":"2.0","requestContext":{"http":{"method":"GET"}}}`:         V2,
		`{"version":"1.0","httpMethod":"GET","requestContext":{}}`:             V1,
		`{"httpMethod":"GET","resource":"/{proxy+}","requestContext":{}}`:      V1,
		`{"httpMethod":"GET","requestContext":{"elb":{"targetGroupArn":"x"}}}`: ALB,
		`{"source":"aws.events","detail-type":"Scheduled Event"}`:              Scheduled,
	} {
		if got, err := KindOf([]byte(payload)); got != want || err != nil {
			t.Errorf("%s: %v, %v; want %v", payload, got, err, want)
		}
	}
}
