package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/functions/lambdahttp/bridge"
)

// pgSchema returns DATABASE_URL set to a fresh schema, dropped at the end;
// without DATABASE_URL the test skips, except under CI=true.
func pgSchema(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL is not set, and CI=true forbids skipping the PostgreSQL tests")
		}
		t.Skip(`DATABASE_URL is not set (start a throwaway server with: eval "$(infra/scripts/postgres.sh start)")`)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "lambda_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Logf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestEnvironmentsWakeEachOther: a long poll holds one execution
// environment; the send that ends it runs in another, over PostgreSQL, and
// its LISTEN/NOTIFY wake-up ends the wait at once (well before the poll's
// own next check, 2 s after it began).
func TestEnvironmentsWakeEachOther(t *testing.T) {
	dsn := pgSchema(t)
	rie, bootstrap := binaries(t)
	log := &logBuffer{}
	var fns []*bridge.Function
	for range 2 {
		fn, err := bridge.StartFunction(context.Background(), bridge.FunctionOptions{
			RIE: rie, Bootstrap: bootstrap, Log: log, Timeout: 30 * time.Second,
			Env: []string{"SLUICE_STORE=" + dsn, "SLUICE_LOG_LEVEL=warn", keys},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fn.Close() })
		fns = append(fns, fn)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("function output:\n%s", log.String())
		}
	})
	srv := httptest.NewTLSServer(&bridge.Bridge{FrontEnd: bridge.FunctionURL, Function: bridge.NewPool(fns...)})
	defer srv.Close()
	c := newClient(t, "https://"+bridge.FunctionURL.DefaultHost(), frontDoor(srv), "secret")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("wake")})
	if err != nil {
		t.Fatal(err)
	}
	// Cold-start the other environment too, so that the timing below is
	// the wake-up's alone.
	if _, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("wake")}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out *sqs.ReceiveMessageOutput
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 10})
		done <- result{out, err, time.Now()}
	}()
	time.Sleep(500 * time.Millisecond) // the poll is waiting in one environment
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("wake up")}); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.out.Messages) != 1 || aws.ToString(r.out.Messages[0].Body) != "wake up" {
		t.Fatalf("the long poll returned %+v", r.out.Messages)
	}
	if lag := r.at.Sub(sent); lag > 800*time.Millisecond {
		t.Errorf("the long poll returned %s after the send: not woken by it", lag)
	}
}
