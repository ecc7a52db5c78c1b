package bench

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
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

// TestReceiveSurvivesALateWriteLoop: a ReceiveMessage whose response
// arrives while the transport's write loop is still on the request must
// come back whole. Before ownBodies it failed with "use of closed network
// connection" after a 200, as two benchmark runs in thirty did.
func TestReceiveSurvivesALateWriteLoop(t *testing.T) {
	srv := newServer(t)
	var armed atomic.Bool
	d := &net.Dialer{Timeout: 5 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stallConn{Conn: c, armed: &armed, response: make(chan struct{})}, nil
	}
	c := NewClient(srv.URL, &http.Client{Transport: newTransport(dial)})
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
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(out.Messages) != 10 {
		t.Errorf("received %d messages, want 10", len(out.Messages))
	}
}
