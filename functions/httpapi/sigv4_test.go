package httpapi_test

// Signature checks end to end: the real SDK for Go v2 (AWS JSON 1.0) and
// Query form POSTs signed with its v4 signer, against the handler over a
// memstore with functions/sigv4 verifying every request. A refused request
// must change nothing.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/functions/sigv4"
	"github.com/sluicehq/sluice/stores/memstore"
)

var (
	keyHome    = sigv4.Key{AccessKeyID: "AKIDHOME", SecretAccessKey: "home/secret+key"}
	keyTenant  = sigv4.Key{AccessKeyID: "AKIDTENANT", SecretAccessKey: "tenant-secret", AccountID: "123456789012"}
	keyRotated = sigv4.Key{AccessKeyID: "AKIDROTATED", SecretAccessKey: "rotated-secret"}
	keyTemp    = sigv4.Key{AccessKeyID: "ASIATEMP", SecretAccessKey: "temp-secret", SessionToken: "IQoJb3JpZ2luX2VjEXAMPLE+/="}
)

// newSignedServer runs the handler with signature checks for the keys above
// in us-east-1.
func newSignedServer(t *testing.T) *httptest.Server {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	store := memstore.New()
	svc := service.New(service.Config{Store: store, Logger: logger, NoCooldowns: true})
	v, err := sigv4.New(sigv4.Config{Region: "us-east-1", Keys: []sigv4.Key{keyHome, keyTenant, keyRotated, keyTemp}})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(r *http.Request, body []byte) (httpapi.Caller, error) {
		c, err := v.Verify(r, body)
		return httpapi.Caller{AccountID: c.AccountID}, err
	}
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.Options{Logger: logger, Verify: verify}))
	t.Cleanup(func() {
		svc.Shutdown()
		srv.Close()
		_ = store.Close()
	})
	return srv
}

// clientOpts change how a test client signs.
type clientOpts struct {
	region    string
	creds     aws.CredentialsProvider
	shift     time.Duration     // the signer's clock runs this far off
	transport http.RoundTripper // between the signer and the wire
}

func signedClient(t *testing.T, srv *httptest.Server, k sigv4.Key, o clientOpts) *sqs.Client {
	t.Helper()
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CA_BUNDLE", "AWS_USE_FIPS_ENDPOINT",
		"AWS_USE_DUALSTACK_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(v, "")
	}
	if o.region == "" {
		o.region = "us-east-1"
	}
	if o.creds == nil {
		o.creds = credentials.NewStaticCredentialsProvider(k.AccessKeyID, k.SecretAccessKey, k.SessionToken)
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion(o.region),
		config.WithCredentialsProvider(o.creds),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithRetryMaxAttempts(1),
	)
	if err != nil {
		t.Fatal(err)
	}
	return sqs.NewFromConfig(cfg, func(so *sqs.Options) {
		so.BaseEndpoint = aws.String(srv.URL)
		if o.shift != 0 {
			so.HTTPSignerV4 = shiftedSigner{v4.NewSigner(), o.shift}
		}
		if o.transport != nil {
			so.HTTPClient = &http.Client{Transport: o.transport}
		}
	})
}

// shiftedSigner is the SDK's signer with a clock that is off by shift.
type shiftedSigner struct {
	s     *v4.Signer
	shift time.Duration
}

func (s shiftedSigner) SignHTTP(ctx context.Context, c aws.Credentials, r *http.Request, payloadHash, service, region string, at time.Time, fns ...func(*v4.SignerOptions)) error {
	return s.s.SignHTTP(ctx, c, r, payloadHash, service, region, at.Add(s.shift), fns...)
}

// tamper changes the body of SendMessage requests after they are signed,
// keeping its length.
type tamper struct{}

func (tamper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Header.Get("X-Amz-Target") == "AmazonSQS.SendMessage" {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		b = bytes.Replace(b, []byte("pay 10"), []byte("pay 99"), 1)
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// wantAPIError checks the SDK's error: code (from x-amzn-query-error),
// status and message.
func wantAPIError(t *testing.T, what string, err error, code string, status int, msg string) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("%s: error %v, want %s", what, err, code)
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() != status {
		t.Errorf("%s: status %d, want %d", what, re.HTTPStatusCode(), status)
	}
	if apiErr.ErrorCode() != code || !strings.HasPrefix(apiErr.ErrorMessage(), msg) {
		t.Errorf("%s: %s %q, want %s %q", what, apiErr.ErrorCode(), apiErr.ErrorMessage(), code, msg)
	}
}

func TestSigV4SDKAccepted(t *testing.T) {
	srv := newSignedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range []sigv4.Key{keyHome, keyRotated, keyTemp, keyTenant} {
		c := signedClient(t, srv, k, clientOpts{})
		for _, name := range []string{"std-" + k.AccessKeyID, "fifo-" + k.AccessKeyID + ".fifo"} {
			fifo := strings.HasSuffix(name, ".fifo")
			in := &sqs.CreateQueueInput{QueueName: aws.String(name)}
			if fifo {
				in.Attributes = map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
			}
			created, err := c.CreateQueue(ctx, in)
			if err != nil {
				t.Fatalf("%s CreateQueue %s: %v", k.AccessKeyID, name, err)
			}
			qurl := aws.ToString(created.QueueUrl)
			account := "000000000000"
			if k.AccountID != "" {
				account = k.AccountID
			}
			if !strings.HasSuffix(qurl, "/"+account+"/"+name) {
				t.Errorf("%s: QueueUrl %s, want account %s", k.AccessKeyID, qurl, account)
			}
			send := &sqs.SendMessageInput{QueueUrl: aws.String(qurl), MessageBody: aws.String("body  with   spaces & ünïcode")}
			if fifo {
				send.MessageGroupId = aws.String("g")
			}
			if _, err := c.SendMessage(ctx, send); err != nil {
				t.Fatalf("%s SendMessage: %v", name, err)
			}
			recv, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(qurl), WaitTimeSeconds: 1})
			if err != nil || len(recv.Messages) != 1 {
				t.Fatalf("%s ReceiveMessage: %v %v", name, recv, err)
			}
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(qurl), ReceiptHandle: recv.Messages[0].ReceiptHandle}); err != nil {
				t.Fatalf("%s DeleteMessage: %v", name, err)
			}
		}
		list, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
		if err != nil {
			t.Fatalf("%s ListQueues: %v", k.AccessKeyID, err)
		}
		// The tenant's account sees its own two queues only; the others share
		// the configured account.
		if k == keyTenant && len(list.QueueUrls) != 2 {
			t.Errorf("tenant lists %v", list.QueueUrls)
		}
		if k == keyTemp && len(list.QueueUrls) != 6 {
			t.Errorf("configured account lists %v", list.QueueUrls)
		}
	}
}

func TestSigV4SDKRefused(t *testing.T) {
	srv := newSignedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good := signedClient(t, srv, keyHome, clientOpts{})
	created, err := good.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("kept")})
	if err != nil {
		t.Fatal(err)
	}
	qurl := aws.ToString(created.QueueUrl)

	wrongSecret := keyHome
	wrongSecret.SecretAccessKey = "guessed"
	unknown := sigv4.Key{AccessKeyID: "AKIDNOBODY", SecretAccessKey: "x"}
	noToken := keyTemp
	noToken.SessionToken = ""
	for _, c := range []struct {
		name   string
		key    sigv4.Key
		opts   clientOpts
		code   string
		status int
		msg    string
	}{
		{"wrong secret", wrongSecret, clientOpts{}, "SignatureDoesNotMatch", 403, sigv4.MessageSignatureDoesNotMatch},
		{"unknown key", unknown, clientOpts{}, "InvalidClientTokenId", 403, sigv4.MessageInvalidClientTokenID},
		{"session token missing", noToken, clientOpts{}, "InvalidClientTokenId", 403, sigv4.MessageInvalidClientTokenID},
		{"wrong region", keyHome, clientOpts{region: "eu-west-1"}, "SignatureDoesNotMatch", 403,
			"Credential should be scoped to a valid region, not 'eu-west-1'. "},
		{"clock 20 min slow", keyHome, clientOpts{shift: -20 * time.Minute}, "SignatureDoesNotMatch", 403, "Signature expired: "},
		{"clock 20 min fast", keyHome, clientOpts{shift: 20 * time.Minute}, "SignatureDoesNotMatch", 403, "Signature not yet current: "},
		{"no signature", keyHome, clientOpts{creds: aws.AnonymousCredentials{}}, "AccessDenied", 403,
			"Access to the resource " + srv.URL + "/ is denied."},
		{"tampered body", keyHome, clientOpts{transport: tamper{}}, "SignatureDoesNotMatch", 403, sigv4.MessageSignatureDoesNotMatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := signedClient(t, srv, c.key, c.opts)
			if c.opts.transport == nil {
				_, err := bad.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("refused")})
				wantAPIError(t, "CreateQueue", err, c.code, c.status, c.msg)
				_, err = bad.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("no-such-queue")})
				wantAPIError(t, "GetQueueUrl of a missing queue", err, c.code, c.status, c.msg)
			}
			_, err := bad.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(qurl), MessageBody: aws.String("pay 10")})
			wantAPIError(t, "SendMessage", err, c.code, c.status, c.msg)
		})
	}
	// Nothing of the refused requests happened.
	list, err := good.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 1 || list.QueueUrls[0] != qurl {
		t.Errorf("queues after refused requests: %v %v", list, err)
	}
	attrs, err := good.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(qurl), AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"}})
	if err != nil || attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["ApproximateNumberOfMessagesDelayed"] != "0" {
		t.Errorf("queue after refused sends: %v %v", attrs, err)
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// querySigned posts a Query form signed with k for region at, as botocore
// before 1.32.7 does (the form body is signed), and returns the status and
// body of the answer.
func querySigned(t *testing.T, srv *httptest.Server, k sigv4.Key, region string, at time.Time, path string, params url.Values, edit func(*http.Request)) (int, string) {
	t.Helper()
	params.Set("Version", "2012-11-05")
	body := params.Encode()
	r, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, SessionToken: k.SessionToken},
		r, sha([]byte(body)), "sqs", region, at)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(r)
	}
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestSigV4Query(t *testing.T) {
	srv := newSignedServer(t)
	now := time.Now()
	status, raw := querySigned(t, srv, keyHome, "us-east-1", now, "/", url.Values{"Action": {"CreateQueue"}, "QueueName": {"q"}}, nil)
	if status != 200 || !strings.Contains(raw, "<QueueUrl>"+srv.URL+"/000000000000/q</QueueUrl>") {
		t.Fatalf("CreateQueue: %d %s", status, raw)
	}
	status, raw = querySigned(t, srv, keyTemp, "us-east-1", now, "/000000000000/q", url.Values{"Action": {"SendMessage"}, "MessageBody": {"a + b = c & d"}}, nil)
	if status != 200 || !strings.Contains(raw, "<MessageId>") {
		t.Fatalf("SendMessage with a session token: %d %s", status, raw)
	}

	wrong := keyHome
	wrong.SecretAccessKey = "guessed"
	unknown := sigv4.Key{AccessKeyID: "AKIDNOBODY", SecretAccessKey: "x"}
	for _, c := range []struct {
		name   string
		key    sigv4.Key
		region string
		at     time.Time
		edit   func(*http.Request)
		code   string
		status int
		msg    string
	}{
		{"wrong secret", wrong, "us-east-1", now, nil, "SignatureDoesNotMatch", 403, sigv4.MessageSignatureDoesNotMatch},
		{"unknown key", unknown, "us-east-1", now, nil, "InvalidClientTokenId", 403, sigv4.MessageInvalidClientTokenID},
		{"wrong region", keyHome, "us-west-2", now, nil, "SignatureDoesNotMatch", 403, "Credential should be scoped to a valid region, not 'us-west-2'. "},
		{"stale", keyHome, "us-east-1", now.Add(-16 * time.Minute), nil, "SignatureDoesNotMatch", 403, "Signature expired: "},
		{"body changed", keyHome, "us-east-1", now, func(r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			b = bytes.Replace(b, []byte("QueueName=q2"), []byte("QueueName=q3"), 1)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}, "SignatureDoesNotMatch", 403, sigv4.MessageSignatureDoesNotMatch},
		{"no signature", keyHome, "us-east-1", now, func(r *http.Request) { r.Header.Del("Authorization") },
			"AccessDenied", 403, "Access to the resource " + srv.URL + "/ is denied."},
		{"malformed", keyHome, "us-east-1", now, func(r *http.Request) { r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDHOME") },
			"IncompleteSignature", 400, "Authorization header requires 'Signature' parameter."},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, raw := querySigned(t, srv, c.key, c.region, c.at, "/", url.Values{"Action": {"CreateQueue"}, "QueueName": {"q2"}}, c.edit)
			var e struct {
				XMLName xml.Name `xml:"http://queue.amazonaws.com/doc/2012-11-05/ ErrorResponse"`
				Type    string   `xml:"Error>Type"`
				Code    string   `xml:"Error>Code"`
				Message string   `xml:"Error>Message"`
				ID      string   `xml:"RequestId"`
			}
			if err := xml.Unmarshal([]byte(raw), &e); err != nil {
				t.Fatalf("%d %s: %v", status, raw, err)
			}
			if status != c.status || e.Type != "Sender" || e.Code != c.code || !strings.HasPrefix(e.Message, c.msg) || e.ID == "" {
				t.Errorf("%d %s, want %d %s %q", status, raw, c.status, c.code, c.msg)
			}
		})
	}
	// None of them created q2.
	status, raw = querySigned(t, srv, keyHome, "us-east-1", now, "/", url.Values{"Action": {"ListQueues"}}, nil)
	if status != 200 || strings.Contains(raw, "/q2<") || !strings.Contains(raw, "/q<") {
		t.Errorf("ListQueues after refused CreateQueues: %d %s", status, raw)
	}
}

// TestSigV4QueryPresigned sends a presigned Query GET.
func TestSigV4QueryPresigned(t *testing.T) {
	srv := newSignedServer(t)
	r, err := http.NewRequest("GET", srv.URL+"/?Action=ListQueues&Version=2012-11-05&X-Amz-Expires=60", nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: keyHome.AccessKeyID, SecretAccessKey: keyHome.SecretAccessKey},
		r, sha(nil), "sqs", "us-east-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "<ListQueuesResponse") {
		t.Errorf("presigned ListQueues: %d %s", resp.StatusCode, b)
	}
	resp, err = srv.Client().Get(strings.Replace(u, "Action=ListQueues", "Action=CreateQueue&QueueName=x", 1))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "<Code>SignatureDoesNotMatch</Code>") {
		t.Errorf("altered presigned URL: %d %s", resp.StatusCode, b)
	}
}

// The JSON protocol takes its action from X-Amz-Target, which the
// signature must cover: a presigned URL for one action on a queue, replayed
// with an X-Amz-Target header it does not sign, is refused, and the queue
// is untouched (it would otherwise have run DeleteQueue on the queue its
// path names).
func TestSigV4UnsignedTargetRefused(t *testing.T) {
	srv := newSignedServer(t)
	now := time.Now()
	if status, raw := querySigned(t, srv, keyHome, "us-east-1", now, "/", url.Values{"Action": {"CreateQueue"}, "QueueName": {"kept"}}, nil); status != 200 {
		t.Fatalf("CreateQueue: %d %s", status, raw)
	}
	r, err := http.NewRequest("GET", srv.URL+"/000000000000/kept?Action=GetQueueAttributes&AttributeName.1=All&Version=2012-11-05&X-Amz-Expires=60", nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: keyHome.AccessKeyID, SecretAccessKey: keyHome.SecretAccessKey},
		r, sha(nil), "sqs", "us-east-1", now)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "AmazonSQS.DeleteQueue")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "IncompleteSignature") ||
		!strings.Contains(string(b), "'X-Amz-Target' must be a 'SignedHeader' in the AWS Authorization.") {
		t.Errorf("presigned URL with an unsigned X-Amz-Target: %d %s, want 400 IncompleteSignature", resp.StatusCode, b)
	}
	if status, raw := querySigned(t, srv, keyHome, "us-east-1", time.Now(), "/", url.Values{"Action": {"ListQueues"}}, nil); status != 200 || !strings.Contains(raw, "/kept<") {
		t.Errorf("the queue is gone after a presigned URL with an unsigned X-Amz-Target: ListQueues %d %s", status, raw)
	}
}

// TestSigV4JSONErrorShape checks the JSON protocol's form of an auth error.
func TestSigV4JSONErrorShape(t *testing.T) {
	srv := newSignedServer(t)
	r, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader("{}"))
	r.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("x-amzn-query-error") != "AccessDenied;Sender" ||
		string(b) != `{"__type":"com.amazonaws.sqs#AccessDenied","message":"Access to the resource `+srv.URL+`/ is denied."}` {
		t.Errorf("unsigned JSON request: %d %v %s", resp.StatusCode, resp.Header, b)
	}
}

// TestSigV4QueryAcceptJSON: a refused Query request that accepts JSON is
// answered in JSON, as its success would be.
func TestSigV4QueryAcceptJSON(t *testing.T) {
	srv := newSignedServer(t)
	r, _ := http.NewRequest("POST", srv.URL+"/", strings.NewReader("Action=ListQueues&Version=2012-11-05"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Accept", "application/json")
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc struct {
		Error struct{ Type, Code, Message string }
	}
	if err := json.Unmarshal(b, &doc); err != nil || resp.StatusCode != 403 || doc.Error.Code != "AccessDenied" || doc.Error.Type != "Sender" {
		t.Errorf("unsigned Query accepting JSON: %d %s (%v)", resp.StatusCode, b, err)
	}
}
