package ownbody

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/memstore"
)

// stallConn plays the scheduling of a loaded core, deterministically: once
// armed, each write returns only a while after the response has begun to
// arrive (the transport's write loop is late), and the response trickles in
// (the reader is slow).
type stallConn struct {
	net.Conn
	armed    *atomic.Bool
	once     sync.Once
	response chan struct{}
}

func (c *stallConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.armed.Load() {
		select {
		case <-c.response:
			time.Sleep(50 * time.Millisecond)
		case <-time.After(time.Second): // a write the server answers only after more
		}
	}
	return n, err
}

func (c *stallConn) Read(p []byte) (int, error) {
	if !c.armed.Load() {
		return c.Conn.Read(p)
	}
	if len(p) > 1024 {
		p = p[:1024]
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.once.Do(func() { close(c.response) })
		time.Sleep(2 * time.Millisecond)
	}
	return n, err
}

// lateReceive sends ten 10 KiB messages to a sluice server (the real
// HTTP API on the in-memory store) and receives them through a transport
// whose write loop is late, wrapped by wrap; it returns the receive's error
// and how many messages it returned. The client does not retry, so a lost
// answer shows as an error.
func lateReceive(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) (int, error) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	store := memstore.New()
	svc := service.New(service.Config{Store: store, Logger: logger})
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.Options{Logger: logger}))
	defer func() {
		svc.Shutdown()
		srv.Close()
		_ = store.Close()
	}()
	var armed atomic.Bool
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stallConn{Conn: c, armed: &armed, response: make(chan struct{})}, nil
	}}
	defer tr.CloseIdleConnections()
	c := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   &http.Client{Transport: wrap(tr)},
		Retryer:      aws.NopRetryer{},
	})
	ctx := context.Background()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("late")})
	if err != nil {
		t.Fatal(err)
	}
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String("m" + strconv.Itoa(i)),
			MessageBody: aws.String(strings.Repeat("x", 10<<10))})
	}
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
	armed.Store(false)
	if err != nil {
		return 0, err
	}
	return len(out.Messages), nil
}

// TestReceiveSurvivesALateWriteLoop: a ReceiveMessage whose response
// arrives while the transport's write loop is still on the request comes
// back whole through Transport. The same receive through the bare
// transport must fail, or the stall no longer reproduces the race and the
// test shows nothing.
func TestReceiveSurvivesALateWriteLoop(t *testing.T) {
	n, err := lateReceive(t, func(rt http.RoundTripper) http.RoundTripper { return Transport{Next: rt} })
	if err != nil {
		t.Errorf("ReceiveMessage through Transport: %v", err)
	} else if n != 10 {
		t.Errorf("received %d messages through Transport, want 10", n)
	}

	n, err = lateReceive(t, func(rt http.RoundTripper) http.RoundTripper { return rt })
	if err == nil {
		t.Errorf("ReceiveMessage through the bare transport returned %d messages: the late write loop no longer loses the answer, so this test no longer shows that Transport is needed", n)
	} else {
		t.Logf("through the bare transport, as expected: %v", err)
	}
}

// TestCloseIdleConnections: http.Client.CloseIdleConnections reaches the
// pool under Transport (the system tests close their pools at the end).
func TestCloseIdleConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	tr := &http.Transport{}
	hc := &http.Client{Transport: Transport{Next: tr}}
	res, err := hc.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	hc.CloseIdleConnections()
	for deadline := time.Now().Add(5 * time.Second); conns.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the idle connection is still open after CloseIdleConnections")
		}
	}
}
