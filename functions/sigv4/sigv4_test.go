package sigv4

// Requests signed by aws-sdk-go-v2's own v4 signer (SignHTTP, PresignHTTP),
// written to the wire and read back as a server reads them, must verify,
// and the canonical request built here must be the signer's, byte for byte.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/logging"

	"github.com/sluicehq/sluice/contract"
)

var (
	t0       = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	testKey  = Key{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", AccountID: "123456789012"}
	otherKey = Key{AccessKeyID: "AKIDROTATED", SecretAccessKey: "other/secret+value"}
	tempKey  = Key{AccessKeyID: "ASIATEMP", SecretAccessKey: "tempsecret", SessionToken: "FwoGZXIvYXdzEXAMPLETOKEN+/="}
)

func newVerifier(t *testing.T, now time.Time) *Verifier {
	t.Helper()
	v, err := New(Config{Region: "us-east-1", Keys: []Key{testKey, otherKey, tempKey}, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// signer returns the SDK's signer and the canonical strings it logs.
func signer() (*v4.Signer, *[]string) {
	var canon []string
	s := v4.NewSigner(func(o *v4.SignerOptions) {
		o.LogSigning = true
		o.Logger = logging.LoggerFunc(func(_ logging.Classification, format string, v ...interface{}) {
			if len(v) > 0 {
				canon = append(canon, fmt.Sprint(v[0]))
			}
		})
	})
	return s, &canon
}

func creds(k Key) aws.Credentials {
	return aws.Credentials{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, SessionToken: k.SessionToken}
}

// onWire writes r as a client would and reads it back as a server does.
func onWire(t *testing.T, r *http.Request) (*http.Request, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	sr, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		t.Fatalf("reading the request back: %v\n%s", err, buf.String())
	}
	body, err := io.ReadAll(sr.Body)
	if err != nil {
		t.Fatal(err)
	}
	return sr, body
}

type signCase struct {
	name    string
	method  string
	url     string
	body    string
	headers map[string][]string
}

var signCases = []signCase{
	{name: "root, empty body", method: "GET", url: "http://localhost:9324/"},
	{name: "no path", method: "GET", url: "http://localhost:9324?Action=ListQueues"},
	{name: "queue path", method: "POST", url: "http://sqs.us-east-1.amazonaws.com/123456789012/jobs.fifo",
		body: `{"QueueUrl":"x"}`, headers: map[string][]string{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amz-Target": {"AmazonSQS.SendMessage"}}},
	{name: "path with spaces and escapes", method: "GET", url: "http://localhost:9324/a%20b/c%2Fd/%E2%82%AC~x_y-z.w"},
	{name: "path with reserved bytes", method: "GET", url: "http://localhost:9324/a:b@c!d$e&f'g(h)*i+j,k;l=m"},
	{name: "dot segments kept", method: "GET", url: "http://localhost:9324/a/./b/../c//d"},
	{name: "repeated query keys", method: "GET", url: "http://localhost:9324/?b=2&a=3&a=1&a=2&c="},
	{name: "query encodings", method: "GET", url: "http://localhost:9324/?x=a+b&y=a%20b&z=%2B%26%3D&w=~-._&u=%E2%82%AC&flag"},
	{name: "query names sort by encoded bytes", method: "GET", url: "http://localhost:9324/?a_b=1&a-b=2&A=3&a=4&a%20=5"},
	{name: "header values with spaces", method: "POST", url: "http://localhost:9324/", body: "x",
		headers: map[string][]string{"X-Custom": {"  a   b  c  "}, "X-Multi": {"one", " two  three "}, "Content-Type": {"text/plain"}}},
	{name: "form body", method: "POST", url: "http://localhost:9324/",
		body:    "Action=SendMessage&QueueUrl=http%3A%2F%2Flocalhost%3A9324%2F000000000000%2Fq&MessageBody=hello+%26+world&Version=2012-11-05",
		headers: map[string][]string{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}},
	{name: "host with default port", method: "GET", url: "http://localhost:80/"},
	{name: "host with port", method: "GET", url: "http://127.0.0.1:9324/000000000000/q"},
}

func buildRequest(t *testing.T, c signCase) *http.Request {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	r, err := http.NewRequest(c.method, c.url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range c.headers {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return r
}

// reverseQuery reverses the order of a raw query's parameters.
func reverseQuery(raw string) string {
	parts := strings.Split(raw, "&")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "&")
}

// checkCanonical compares the canonical request built from the server's
// view of a signed request with the one the signer logged.
func checkCanonical(t *testing.T, v *Verifier, sr *http.Request, body []byte, want string) {
	t.Helper()
	a, err := v.parse(sr)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	payload, err := v.payloadHash(sr, body)
	if err != nil {
		t.Fatalf("payload: %v", err)
	}
	if got := canonicalRequest(sr, sr.URL.EscapedPath(), a, payload); got != want {
		t.Errorf("canonical request\n got: %q\nwant: %q", got, want)
	}
}

func TestHeaderSignedBySDK(t *testing.T) {
	v := newVerifier(t, t0.Add(time.Minute))
	for _, c := range signCases {
		for _, k := range []Key{testKey, otherKey, tempKey} {
			t.Run(c.name+"/"+k.AccessKeyID, func(t *testing.T) {
				r := buildRequest(t, c)
				s, canon := signer()
				if err := s.SignHTTP(context.Background(), creds(k), r, hashOf([]byte(c.body)), "sqs", "us-east-1", t0); err != nil {
					t.Fatal(err)
				}
				// The signer leaves the query sorted; clients need not send it so.
				r.URL.RawQuery = reverseQuery(r.URL.RawQuery)
				sr, body := onWire(t, r)
				checkCanonical(t, v, sr, body, (*canon)[0])
				caller, err := v.Verify(sr, body)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if caller.AccessKeyID != k.AccessKeyID || caller.AccountID != k.AccountID {
					t.Errorf("caller %+v, want key %s account %q", caller, k.AccessKeyID, k.AccountID)
				}
			})
		}
	}
}

func TestPresignedBySDK(t *testing.T) {
	v := newVerifier(t, t0.Add(time.Minute))
	for _, c := range signCases {
		if c.method != "GET" {
			continue
		}
		for _, k := range []Key{testKey, tempKey} {
			t.Run(c.name+"/"+k.AccessKeyID, func(t *testing.T) {
				r := buildRequest(t, c)
				q := r.URL.Query()
				q.Set("X-Amz-Expires", "300")
				r.URL.RawQuery = q.Encode()
				s, canon := signer()
				signed, hdr, err := s.PresignHTTP(context.Background(), creds(k), r, hashOf(nil), "sqs", "us-east-1", t0)
				if err != nil {
					t.Fatal(err)
				}
				pr, err := http.NewRequest("GET", signed, nil)
				if err == nil {
					pr.URL.RawQuery = reverseQuery(pr.URL.RawQuery)
				}
				if err != nil {
					t.Fatal(err)
				}
				for h, vs := range hdr {
					if !strings.EqualFold(h, "Host") {
						pr.Header[h] = vs
					}
				}
				sr, body := onWire(t, pr)
				checkCanonical(t, v, sr, body, (*canon)[0])
				if _, err := v.Verify(sr, body); err != nil {
					t.Fatalf("Verify %s: %v", signed, err)
				}
			})
		}
	}
}

// wantErr checks that err is the AWS error code with status, and that its
// message starts with prefix.
func wantErr(t *testing.T, err error, code string, status int, prefix string) {
	t.Helper()
	var ce *contract.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T), want *contract.Error %s", err, err, code)
	}
	if ce.Code != code || ce.Status != status || !ce.Sender || !strings.HasPrefix(ce.Message, prefix) {
		t.Errorf("error %s %d %q, want %s %d %q...", ce.Code, ce.Status, ce.Message, code, status, prefix)
	}
}

// signed returns the server's view of a JSON SendMessage signed with k
// for region and service at time at.
func signed(t *testing.T, k Key, region, service string, at time.Time, edit func(*http.Request)) (*http.Request, []byte) {
	t.Helper()
	body := `{"QueueUrl":"q","MessageBody":"hi"}`
	r := buildRequest(t, signCase{method: "POST", url: "http://localhost:9324/", body: body,
		headers: map[string][]string{"X-Amz-Target": {"AmazonSQS.SendMessage"}}})
	s, _ := signer()
	if err := s.SignHTTP(context.Background(), creds(k), r, hashOf([]byte(body)), service, region, at); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(r)
	}
	return onWire(t, r)
}

func TestRefused(t *testing.T) {
	v := newVerifier(t, t0)
	wrong := testKey
	wrong.SecretAccessKey = "not the secret"
	unknown := Key{AccessKeyID: "AKIDUNKNOWN", SecretAccessKey: "x"}
	noToken := tempKey
	noToken.SessionToken = ""
	badToken := tempKey
	badToken.SessionToken = "another token"
	withToken := testKey
	withToken.SessionToken = "a token"
	const mismatch = MessageSignatureDoesNotMatch
	for _, c := range []struct {
		name           string
		key            Key
		region, svc    string
		at             time.Time
		edit           func(*http.Request)
		editBody       func([]byte) []byte
		code           string
		status         int
		prefix         string
		serverReceives string
	}{
		{name: "wrong secret", key: wrong, code: "SignatureDoesNotMatch", status: 403, prefix: mismatch},
		{name: "unknown key", key: unknown, code: "InvalidClientTokenId", status: 403, prefix: "The security token included in the request is invalid."},
		{name: "wrong region", key: testKey, region: "eu-west-1", code: "SignatureDoesNotMatch", status: 403,
			prefix: "Credential should be scoped to a valid region, not 'eu-west-1'. "},
		{name: "wrong service", key: testKey, svc: "sns", code: "SignatureDoesNotMatch", status: 403,
			prefix: "Credential should be scoped to correct service: 'sqs'. "},
		{name: "15 min 1 s old", key: testKey, at: t0.Add(-15*time.Minute - time.Second), code: "SignatureDoesNotMatch", status: 403,
			prefix: "Signature expired: 20260314T145425Z is now earlier than 20260314T145426Z (20260314T150926Z - 15 min.)"},
		{name: "15 min 1 s ahead", key: testKey, at: t0.Add(15*time.Minute + time.Second), code: "SignatureDoesNotMatch", status: 403,
			prefix: "Signature not yet current: 20260314T152427Z is still later than 20260314T152426Z (20260314T150926Z + 15 min.)"},
		{name: "body changed", key: testKey, editBody: func(b []byte) []byte { return bytes.Replace(b, []byte("hi"), []byte("ho"), 1) },
			code: "SignatureDoesNotMatch", status: 403, prefix: mismatch},
		{name: "query added", key: testKey, edit: func(r *http.Request) { r.URL.RawQuery = "x=1" }, code: "SignatureDoesNotMatch", status: 403, prefix: mismatch},
		{name: "path changed", key: testKey, edit: func(r *http.Request) { r.URL.Path = "/000000000000/q" }, code: "SignatureDoesNotMatch", status: 403, prefix: mismatch},
		{name: "signed header changed", key: testKey, edit: func(r *http.Request) { r.Header.Set("X-Amz-Target", "AmazonSQS.DeleteQueue") },
			code: "SignatureDoesNotMatch", status: 403, prefix: mismatch},
		{name: "date changed", key: testKey, edit: func(r *http.Request) { r.Header.Set("X-Amz-Date", "20260314T150927Z") },
			code: "SignatureDoesNotMatch", status: 403, prefix: mismatch},
		{name: "scope day differs from date", key: testKey, edit: func(r *http.Request) { r.Header.Set("X-Amz-Date", "20260315T000000Z") },
			code: "SignatureDoesNotMatch", status: 403, prefix: "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '20260314' != '20260315'"},
		{name: "unsigned content sha256 header added", key: testKey, edit: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", hashOf(nil)) },
			code: "SignatureDoesNotMatch", status: 403, prefix: mismatch},
		{name: "unsigned payload not allowed", key: testKey, edit: func(r *http.Request) { r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD") },
			code: "SignatureDoesNotMatch", status: 403, prefix: mismatch},
		{name: "token missing", key: noToken, code: "InvalidClientTokenId", status: 403, prefix: "The security token included in the request is invalid."},
		{name: "token wrong", key: badToken, code: "InvalidClientTokenId", status: 403, prefix: "The security token included in the request is invalid."},
		{name: "token on a key without one", key: withToken, code: "InvalidClientTokenId", status: 403, prefix: "The security token included in the request is invalid."},
		{name: "no signature", key: testKey, edit: func(r *http.Request) { r.Header.Del("Authorization") },
			code: "AccessDenied", status: 403, prefix: "Access to the resource http://localhost:9324/ is denied."},
		{name: "other algorithm", key: testKey, edit: func(r *http.Request) { r.Header.Set("Authorization", "AWS AKIDEXAMPLE:abc") },
			code: "IncompleteSignature", status: 400, prefix: "Unsupported AWS 'algorithm': 'AWS'."},
		{name: "no date", key: testKey, edit: func(r *http.Request) { r.Header.Del("X-Amz-Date") },
			code: "IncompleteSignature", status: 400, prefix: "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"},
		{name: "no signature field", key: testKey, edit: func(r *http.Request) {
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260314/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date")
		}, code: "IncompleteSignature", status: 400, prefix: "Authorization header requires 'Signature' parameter."},
		{name: "missing equal sign", key: testKey, edit: func(r *http.Request) {
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260314/us-east-1/sqs/aws4_request, SignedHeaders, Signature=00")
		}, code: "IncompleteSignature", status: 400, prefix: "Invalid key=value pair (missing equal-sign) in Authorization header"},
		{name: "short credential", key: testKey, edit: func(r *http.Request) {
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260314/us-east-1/sqs, SignedHeaders=host;x-amz-date, Signature=00")
		}, code: "IncompleteSignature", status: 400, prefix: "Credential must have exactly 5 slash-delimited elements"},
		{name: "bad terminator", key: testKey, edit: func(r *http.Request) {
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260314/us-east-1/sqs/aws5_request, SignedHeaders=host;x-amz-date, Signature=00")
		}, code: "SignatureDoesNotMatch", status: 403, prefix: "Credential should be scoped with a valid terminator: 'aws4_request', not 'aws5_request'. "},
		{name: "host not signed", key: testKey, edit: func(r *http.Request) {
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", strings.Replace(a, "SignedHeaders=content-length;host;", "SignedHeaders=content-length;", 1))
		}, code: "IncompleteSignature", status: 400, prefix: "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."},
		{name: "both forms", key: testKey, edit: func(r *http.Request) { r.URL.RawQuery = "X-Amz-Algorithm=AWS4-HMAC-SHA256" },
			code: "IncompleteSignature", status: 400, prefix: "Only one auth mechanism allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			region, svc, at := c.region, c.svc, c.at
			if region == "" {
				region = "us-east-1"
			}
			if svc == "" {
				svc = "sqs"
			}
			if at.IsZero() {
				at = t0
			}
			sr, body := signed(t, c.key, region, svc, at, c.edit)
			if c.editBody != nil {
				body = c.editBody(body)
			}
			_, err := v.Verify(sr, body)
			wantErr(t, err, c.code, c.status, c.prefix)
		})
	}
}

func TestSkewEdgesAccepted(t *testing.T) {
	v := newVerifier(t, t0)
	for _, d := range []time.Duration{-15 * time.Minute, 15 * time.Minute} {
		sr, body := signed(t, testKey, "us-east-1", "sqs", t0.Add(d), nil)
		if _, err := v.Verify(sr, body); err != nil {
			t.Errorf("signed %s from now: %v", d, err)
		}
	}
}

func TestUnsignedPayloadWhenAllowed(t *testing.T) {
	v, err := New(Config{Region: "us-east-1", Keys: []Key{testKey}, Now: func() time.Time { return t0 }, AllowUnsignedPayload: true})
	if err != nil {
		t.Fatal(err)
	}
	r := buildRequest(t, signCase{method: "POST", url: "http://localhost:9324/", body: "{}"})
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	s, _ := signer()
	if err := s.SignHTTP(context.Background(), creds(testKey), r, "UNSIGNED-PAYLOAD", "sqs", "us-east-1", t0); err != nil {
		t.Fatal(err)
	}
	sr, body := onWire(t, r)
	if _, err := v.Verify(sr, body); err != nil {
		t.Fatalf("UNSIGNED-PAYLOAD allowed: %v", err)
	}
	// The same request to a verifier that does not allow it.
	if _, err := newVerifier(t, t0).Verify(sr, body); err == nil {
		t.Fatal("UNSIGNED-PAYLOAD accepted by a verifier that does not allow it")
	}
}

func presigned(t *testing.T, k Key, at time.Time, expires string) (*http.Request, []byte) {
	t.Helper()
	u := "http://localhost:9324/?Action=ListQueues&Version=2012-11-05"
	if expires != "" {
		u += "&X-Amz-Expires=" + expires
	}
	r := buildRequest(t, signCase{method: "GET", url: u})
	s, _ := signer()
	su, _, err := s.PresignHTTP(context.Background(), creds(k), r, hashOf(nil), "sqs", "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := http.NewRequest("GET", su, nil)
	if err != nil {
		t.Fatal(err)
	}
	return onWire(t, pr)
}

func TestPresignedTimes(t *testing.T) {
	for _, c := range []struct {
		name    string
		age     time.Duration
		expires string
		prefix  string // "" accepted
		code    string
	}{
		{name: "no expires, fresh", age: time.Minute},
		{name: "no expires, 16 min", age: 16 * time.Minute, code: "SignatureDoesNotMatch", prefix: "Signature expired: "},
		{name: "expires 60, at 59 s", age: 59 * time.Second, expires: "60"},
		{name: "expires 60, at 61 s", age: 61 * time.Second, expires: "60", code: "SignatureDoesNotMatch",
			prefix: "Signature expired: 20260314T150926Z is now earlier than 20260314T150927Z (20260314T151027Z - 60 sec.)"},
		{name: "expires a day, 16 min: SQS keeps 15 min", age: 16 * time.Minute, expires: "86400", code: "SignatureDoesNotMatch", prefix: "Signature expired: "},
		{name: "expires 604801", age: time.Minute, expires: "604801", code: "IncompleteSignature", prefix: "X-Amz-Expires must be"},
		{name: "expires 0", age: time.Minute, expires: "0", code: "IncompleteSignature", prefix: "X-Amz-Expires must be"},
		{name: "expires not a number", age: time.Minute, expires: "soon", code: "IncompleteSignature", prefix: "X-Amz-Expires must be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sr, body := presigned(t, testKey, t0, c.expires)
			_, err := newVerifier(t, t0.Add(c.age)).Verify(sr, body)
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			status := 403
			if c.code == "IncompleteSignature" {
				status = 400
			}
			wantErr(t, err, c.code, status, c.prefix)
		})
	}
}

func TestPresignedTampered(t *testing.T) {
	v := newVerifier(t, t0)
	sr, body := presigned(t, testKey, t0, "300")
	sr.URL.RawQuery = strings.Replace(sr.URL.RawQuery, "Action=ListQueues", "Action=DeleteQueue", 1)
	_, err := v.Verify(sr, body)
	wantErr(t, err, "SignatureDoesNotMatch", 403, MessageSignatureDoesNotMatch)

	sr, body = presigned(t, testKey, t0, "")
	sr.URL.RawQuery = strings.Replace(sr.URL.RawQuery, "X-Amz-SignedHeaders=host", "X-Amz-SignedHeaders=x-amz-date", 1)
	_, err = v.Verify(sr, body)
	wantErr(t, err, "IncompleteSignature", 400, "'Host' or ':authority' must be a 'SignedHeader'")

	sr, body = presigned(t, testKey, t0, "")
	q := sr.URL.Query()
	q.Del("X-Amz-Credential")
	sr.URL.RawQuery = q.Encode()
	_, err = v.Verify(sr, body)
	wantErr(t, err, "IncompleteSignature", 400, "AWS query-string parameters must include 'X-Amz-Credential'.")
}

func TestSecretsNotShown(t *testing.T) {
	k := Key{AccessKeyID: "AKID", SecretAccessKey: "topsecret", SessionToken: "tokentoken"}
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), fmt.Sprint([]Key{k})} {
		if strings.Contains(s, "topsecret") || strings.Contains(s, "tokentoken") {
			t.Errorf("a key prints as %s", s)
		}
	}
	_, err := New(Config{Region: "us-east-1", Keys: []Key{k, k}})
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("duplicate key: %v", err)
	}
}

// TestContentSHA256MustBeTheBody: a signed X-Amz-Content-Sha256 covers the
// body only if the body is checked against it.
func TestContentSHA256MustBeTheBody(t *testing.T) {
	v := newVerifier(t, t0)
	body := `{"QueueUrl":"q","MessageBody":"pay 10"}`
	r := buildRequest(t, signCase{method: "POST", url: "http://localhost:9324/", body: body})
	r.Header.Set("X-Amz-Content-Sha256", hashOf([]byte(body)))
	s, _ := signer()
	if err := s.SignHTTP(context.Background(), creds(testKey), r, hashOf([]byte(body)), "sqs", "us-east-1", t0); err != nil {
		t.Fatal(err)
	}
	sr, got := onWire(t, r)
	if _, err := v.Verify(sr, got); err != nil {
		t.Fatalf("untouched: %v", err)
	}
	_, err := v.Verify(sr, bytes.Replace(got, []byte("pay 10"), []byte("pay 99"), 1))
	wantErr(t, err, "SignatureDoesNotMatch", 403, MessageSignatureDoesNotMatch)
}

// botocore and the JavaScript SDK sign the path without its empty and dot
// segments, and send it as it is: an endpoint with "//" in it verifies.
// Any other path stays refused.
func TestPathSignedWithoutDotSegments(t *testing.T) {
	v := newVerifier(t, t0.Add(time.Minute))
	// signedAt signs a request to the path signed, and sends it to sent.
	signedAt := func(signed, sent string) (*http.Request, []byte) {
		body := `{"QueueUrl":"q","MessageBody":"hi"}`
		r := buildRequest(t, signCase{method: "POST", url: "http://localhost:9324" + signed, body: body,
			headers: map[string][]string{"X-Amz-Target": {"AmazonSQS.SendMessage"}}})
		s, _ := signer()
		if err := s.SignHTTP(context.Background(), creds(testKey), r, hashOf([]byte(body)), "sqs", "us-east-1", t0); err != nil {
			t.Fatal(err)
		}
		r.URL.Path, r.URL.RawPath = sent, ""
		return onWire(t, r)
	}
	for _, c := range []struct{ signed, sent string }{
		{"/", "//"},
		{"/prod/", "/prod//"},
		{"/prod/123456789012/q", "/prod//123456789012/q"},
		{"/a/c/", "/a/./b/../c//"},
		{"/a//b", "/a//b"}, // the Go SDK signs the path as sent
	} {
		r, body := signedAt(c.signed, c.sent)
		if _, err := v.Verify(r, body); err != nil {
			t.Errorf("signed %q, sent %q: %v", c.signed, c.sent, err)
		}
	}
	for _, c := range []struct{ signed, sent string }{
		{"/prod/", "/prod2//"},
		{"/a/b", "/a//c"},
		{"/a//b", "/a/b"},
	} {
		r, body := signedAt(c.signed, c.sent)
		_, err := v.Verify(r, body)
		wantErr(t, err, "SignatureDoesNotMatch", 403, "The request signature we calculated does not match")
	}
}

func TestWithoutDotSegments(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "/": "/", "//": "/", "/a": "/a", "/a/": "/a/", "/a//b/": "/a/b/",
		"/a/./b/../c": "/a/c", "/..": "/", "/a/..": "/", "/a/../": "/", "a//b": "a/b",
	} {
		if got := withoutDotSegments(in); got != want {
			t.Errorf("withoutDotSegments(%q) = %q, want %q", in, got, want)
		}
	}
}
