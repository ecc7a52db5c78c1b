package spanner

// Commits whose answer is lost: the emulator commits, and the caller sees
// what a deadline during the Commit RPC looks like. A real AWS SDK client
// retries over real HTTP, as it would, and the queue must end as if the
// call had been answered once.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sppb "cloud.google.com/go/spanner/apiv1/spannerpb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/docstore"
)

// loseCommit lets Commit RPCs through to the emulator and, when armed,
// drops the answer of the first one whose mutations match: the commit is
// durable, the caller gets DeadlineExceeded, as when its deadline passes
// while Spanner commits. It counts the Commit RPCs that match, and those
// of them that committed.
type loseCommit struct {
	mu                    sync.Mutex
	match                 func(*sppb.CommitRequest) bool
	armed                 bool
	sent, committed, lost int
}

// arm makes the next matching commit lose its answer, and counts matching
// commits from zero.
func (l *loseCommit) arm(match func(*sppb.CommitRequest) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.match, l.armed, l.sent, l.committed, l.lost = match, true, 0, 0, 0
}

// counts says how many matching commits were sent, how many of them
// committed and how many answers were dropped since arm.
func (l *loseCommit) counts() (sent, committed, lost int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent, l.committed, l.lost
}

// want checks counts.
func (l *loseCommit) want(t *testing.T, what string, sent, committed int) {
	t.Helper()
	if s, c, lost := l.counts(); s != sent || c != committed || lost != 1 {
		t.Errorf("%s: %d commits sent, %d committed, %d answers lost; want %d, %d and 1", what, s, c, lost, sent, committed)
	}
}

func (l *loseCommit) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method != commitRPC {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	l.mu.Lock()
	matched := l.match != nil && l.match(req.(*sppb.CommitRequest))
	if matched {
		l.sent++
	}
	drop := matched && l.armed
	if drop {
		l.armed = false
	}
	l.mu.Unlock()
	err := invoker(ctx, method, req, reply, cc, opts...)
	l.mu.Lock()
	if matched && err == nil {
		l.committed++
	}
	if drop && err == nil {
		l.lost++
	}
	l.mu.Unlock()
	if !drop || err != nil {
		return err
	}
	// What gRPC returns when the call's deadline passes before the answer.
	return status.Error(codes.DeadlineExceeded, "context deadline exceeded")
}

// writes is a match for commits that write (insert, replace, update)
// to table, or with del, delete from it.
func writes(table string, del bool) func(*sppb.CommitRequest) bool {
	return func(r *sppb.CommitRequest) bool {
		for _, m := range r.GetMutations() {
			var w *sppb.Mutation_Write
			switch op := m.GetOperation().(type) {
			case *sppb.Mutation_Delete_:
				if del && strings.EqualFold(op.Delete.GetTable(), table) {
					return true
				}
				continue
			case *sppb.Mutation_Insert:
				w = op.Insert
			case *sppb.Mutation_Replace:
				w = op.Replace
			case *sppb.Mutation_InsertOrUpdate:
				w = op.InsertOrUpdate
			case *sppb.Mutation_Update:
				w = op.Update
			}
			if !del && strings.EqualFold(w.GetTable(), table) {
				return true
			}
		}
		return false
	}
}

// attempts counts the HTTP requests the SDK made, by action.
type attempts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *attempts) of(action string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[action]
}

func TestCommitOutcomeUnknown(t *testing.T) {
	lose := &loseCommit{}
	cfg := newConfig(t)
	cfg.ClientOptions = []option.ClientOption{option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(lose.intercept))}
	st, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })

	// The store's own answer: an error that does not say nothing committed.
	t.Run("store error", func(t *testing.T) {
		lose.arm(writes("Schemaless", false))
		err := st.docs.RunTx(t.Context(), func(ctx context.Context, tx docstore.Tx) error {
			return tx.Set(docstore.Key{Collection: "outcome", ID: "a"}, docstore.Fields{"v": int64(1)})
		})
		lose.want(t, "RunTx", 1, 1)
		if err == nil || errors.Is(err, docstore.ErrUnavailable) || errors.Is(err, docstore.ErrContention) || !errors.Is(err, docstore.ErrOutcomeUnknown) {
			t.Fatalf("RunTx = %v, want docstore.ErrOutcomeUnknown (not ErrUnavailable: something may have committed)", err)
		}
		docs, err := st.docs.Get(t.Context(), docstore.Key{Collection: "outcome", ID: "a"})
		if err != nil || docs[0] == nil || docs[0].Fields["v"] != int64(1) {
			t.Fatalf("after the lost answer, Get = %v, %v; want the committed document", docs, err)
		}
	})

	logger := slog.New(slog.DiscardHandler)
	svc := service.New(service.Config{Store: st, Logger: logger})
	count := &attempts{n: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		action := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
		count.mu.Lock()
		count.n[action]++
		count.mu.Unlock()
		httpapi.NewHandler(svc, httpapi.Options{Logger: logger}).ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		svc.Shutdown()
		srv.Close()
	})
	client := func(maxAttempts int) *sqs.Client {
		for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CA_BUNDLE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"} {
			t.Setenv(v, "")
		}
		c, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")),
			config.WithSharedConfigFiles([]string{}), config.WithSharedCredentialsFiles([]string{}))
		if err != nil {
			t.Fatal(err)
		}
		return sqs.NewFromConfig(c, func(o *sqs.Options) {
			o.BaseEndpoint = aws.String(srv.URL)
			// The SDK's standard retryer (it retries a 500), quickly.
			o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.MaxBackoff = 50 * time.Millisecond
			})
		})
	}
	sdk := client(3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	fifo, err := sdk.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("lost.fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	var handles []string
	var msgIDs []string
	t.Run("FIFO send", func(t *testing.T) {
		before := count.of("SendMessage")
		lose.arm(writes("Messages", false))
		out, err := sdk.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: fifo.QueueUrl, MessageBody: aws.String("once"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d1")})
		if err != nil {
			t.Fatalf("SendMessage (retried by the SDK): %v", err)
		}
		if n := count.of("SendMessage") - before; n != 2 {
			t.Errorf("the SDK sent %d SendMessage requests, want 2 (the lost one and its retry)", n)
		}
		// The retry's commit inserts the deduplication marker without
		// reading it first, and Spanner refuses it (AlreadyExists); the
		// send then reads the marker and echoes the first one.
		lose.want(t, "commits of the message", 2, 1)
		if n := approx(t, sdk, fifo.QueueUrl); n != "1" {
			t.Fatalf("the queue holds %s messages, want 1", n)
		}
		msgIDs = append(msgIDs, aws.ToString(out.MessageId))
	})
	t.Run("FIFO receive with an attempt id", func(t *testing.T) {
		for _, d := range []string{"d2", "d3"} {
			if _, err := sdk.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: fifo.QueueUrl, MessageBody: aws.String(d),
				MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(d)}); err != nil {
				t.Fatal(err)
			}
		}
		before := count.of("ReceiveMessage")
		lose.arm(writes("Attempts", false))
		in := &sqs.ReceiveMessageInput{QueueUrl: fifo.QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			ReceiveRequestAttemptId: aws.String("attempt-1")}
		got, err := sdk.ReceiveMessage(ctx, in)
		if err != nil {
			t.Fatalf("ReceiveMessage (retried by the SDK): %v", err)
		}
		if n := count.of("ReceiveMessage") - before; n != 2 {
			t.Errorf("the SDK sent %d ReceiveMessage requests, want 2", n)
		}
		// The retry reads the attempt's marker and replays it: it claims
		// nothing new, and commits only where the replay left the
		// messages' visibility (the attempt's record).
		lose.want(t, "commits of the attempt", 2, 2)
		if len(got.Messages) != 3 {
			t.Fatalf("received %v, want the 3 messages", ids(got.Messages))
		}
		// The same attempt id again answers the same delivery.
		again, err := sdk.ReceiveMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Messages) != 3 {
			t.Fatalf("the attempt again gave %v, want the same 3", ids(again.Messages))
		}
		for i, m := range got.Messages {
			if aws.ToString(again.Messages[i].MessageId) != aws.ToString(m.MessageId) ||
				aws.ToString(again.Messages[i].ReceiptHandle) != aws.ToString(m.ReceiptHandle) {
				t.Errorf("message %d: %s / %s, then %s / %s; want the same id and receipt handle", i,
					aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle),
					aws.ToString(again.Messages[i].MessageId), aws.ToString(again.Messages[i].ReceiptHandle))
			}
			handles = append(handles, aws.ToString(m.ReceiptHandle))
		}
		if msgIDs != nil && aws.ToString(got.Messages[0].MessageId) != msgIDs[0] {
			t.Errorf("first message %s, want %s", aws.ToString(got.Messages[0].MessageId), msgIDs[0])
		}
	})
	t.Run("FIFO delete", func(t *testing.T) {
		if len(handles) != 3 {
			t.Skip("no receipt handles: the receive failed")
		}
		for i, h := range handles {
			before := count.of("DeleteMessage")
			lose.arm(writes("Groups", false))
			if _, err := sdk.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: fifo.QueueUrl, ReceiptHandle: aws.String(h)}); err != nil {
				t.Fatalf("DeleteMessage %d (retried by the SDK): %v", i, err)
			}
			if n := count.of("DeleteMessage") - before; n != 2 {
				t.Errorf("DeleteMessage %d: the SDK sent %d requests, want 2", i, n)
			}
			// The retry finds the receipt's message gone: nothing to commit.
			lose.want(t, fmt.Sprintf("DeleteMessage %d", i), 1, 1)
		}
		if n := approx(t, sdk, fifo.QueueUrl); n != "0" {
			t.Errorf("the queue holds %s messages after the deletes, want 0", n)
		}
	})
	// A Standard send has nothing to find on a retry: the store must not
	// send its commit again (that would store the message twice and
	// answer success); the caller gets the unknown outcome as an error.
	t.Run("Standard send", func(t *testing.T) {
		std, err := sdk.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("lost")})
		if err != nil {
			t.Fatal(err)
		}
		once := client(1)
		lose.arm(writes("Messages", false))
		_, err = once.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: std.QueueUrl, MessageBody: aws.String("once")})
		var internal interface{ ErrorCode() string }
		if !errors.As(err, &internal) || internal.ErrorCode() != "InternalError" {
			t.Errorf("SendMessage whose commit answer was lost = %v, want InternalError (the outcome is unknown)", err)
		}
		lose.want(t, "commits of the message", 1, 1)
		if n := approx(t, sdk, std.QueueUrl); n != "1" {
			t.Errorf("the queue holds %s messages, want the one the lost commit stored", n)
		}
	})
}

func ids(ms []types.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, aws.ToString(m.MessageId))
	}
	return out
}

// approx is the queue's ApproximateNumberOfMessages plus
// ApproximateNumberOfMessagesNotVisible, as "N".
func approx(t *testing.T, c *sqs.Client, url *string) string {
	t.Helper()
	attrs, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"} {
		v, err := strconv.Atoi(attrs.Attributes[a])
		if err != nil {
			t.Fatalf("%s = %q", a, attrs.Attributes[a])
		}
		n += v
	}
	return strconv.Itoa(n)
}

// A Commit that reaches Spanner and commits, whose answer comes back as an
// Internal stream reset: the client would run the transaction's function
// again on the state its first run committed. The commit watch stops it
// there: the function runs once, its write is applied once, and RunTx
// reports the outcome unknown.
func TestCommitLostAsStreamResetIsNotRunAgain(t *testing.T) {
	var mu sync.Mutex
	armed := false
	reset := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if method != commitRPC || err != nil {
			return err
		}
		mu.Lock()
		drop := armed
		armed = false
		mu.Unlock()
		if drop {
			return status.Error(codes.Internal, "stream terminated by RST_STREAM with error code: INTERNAL_ERROR")
		}
		return nil
	}
	cfg := newConfig(t)
	cfg.ClientOptions = []option.ClientOption{option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(reset))}
	d := openTest(t, cfg)
	k := docstore.Key{Collection: "resets", ID: "counter"}
	if err := d.RunTx(t.Context(), func(ctx context.Context, tx docstore.Tx) error {
		return tx.Set(k, docstore.Fields{"n": int64(0)})
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	armed = true
	mu.Unlock()
	runs := 0
	err := d.RunTx(t.Context(), func(ctx context.Context, tx docstore.Tx) error {
		runs++
		docs, err := tx.Get(ctx, k)
		if err != nil {
			return err
		}
		return tx.Set(k, docstore.Fields{"n": docs[0].Fields["n"].(int64) + 1})
	})
	if runs != 1 || !errors.Is(err, docstore.ErrOutcomeUnknown) {
		t.Errorf("after a commit whose answer was a stream reset: the function ran %d times and RunTx returned %v; want 1 run and ErrOutcomeUnknown", runs, err)
	}
	docs, err := d.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	if n := docs[0].Fields["n"]; n != int64(1) {
		t.Errorf("n = %v after one RunTx that added 1, want 1", n)
	}
}
