package systemtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// embeddedLedger records what the server acknowledged: sends (body →
// MessageId) and deletes (MessageId); the deletes asked for, which may
// have been done though the answer never came (the kill); and the messages
// received and kept (not deleted), with when the last receive that
// returned them began: they must come back, and not before their
// visibility timeout from then.
type embeddedLedger struct {
	mu       sync.Mutex
	sent     map[string]string
	deleted  map[string]bool
	deleting map[string]bool
	kept     map[string]time.Time
}

func (l *embeddedLedger) keep(id string, at time.Time) {
	l.mu.Lock()
	l.kept[id] = at
	l.mu.Unlock()
}

func (l *embeddedLedger) send(body, id string) {
	l.mu.Lock()
	l.sent[body] = id
	l.mu.Unlock()
}

func (l *embeddedLedger) asked(id string) {
	l.mu.Lock()
	l.deleting[id] = true
	l.mu.Unlock()
}

func (l *embeddedLedger) del(id string) {
	l.mu.Lock()
	l.deleted[id] = true
	l.mu.Unlock()
}

// TestEmbeddedKillUnderLoad runs `sluice serve` on the embedded store under
// an unthrottled load (senders, single and batched, and receivers that
// delete what they get, on a Standard and a FIFO queue, as fast as they
// can, but keep every fourth batch without deleting it), kills it with
// SIGKILL, restarts it on the same directory and requires every
// acknowledged send that was not deleted, each under the MessageId its
// send was acknowledged with; none whose delete was acknowledged; and the
// kept messages back only after their visibility timeout (2 s) from the
// receive that returned them.
func TestEmbeddedKillUnderLoad(t *testing.T) {
	if sluiceBin == "" {
		t.Fatal("the sluice binary was not built (TestMain)")
	}
	dir := filepath.Join(t.TempDir(), "data")
	in := startInstance(t, "sluice-embedded", dir)
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	cl := newClient(in.url, hc)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	urls := map[string]string{}
	for _, q := range []string{"events", "orders.fifo"} {
		attrs := map[string]string{"VisibilityTimeout": "2"}
		if strings.HasSuffix(q, ".fifo") {
			attrs["FifoQueue"], attrs["ContentBasedDeduplication"] = "true", "true"
		}
		out, err := cl.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		urls[q] = aws.ToString(out.QueueUrl)
	}

	const visibility = 2 * time.Second // the queues' VisibilityTimeout
	l := &embeddedLedger{sent: map[string]string{}, deleted: map[string]bool{}, deleting: map[string]bool{}, kept: map[string]time.Time{}}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var sends, receives atomic.Int64
	for w := range 6 {
		wg.Go(func() {
			q := "events"
			if w >= 4 {
				q = "orders.fifo"
			}
			for i := 0; loadCtx.Err() == nil; i++ {
				body := fmt.Sprintf("w%d-%d", w, i)
				if w%2 == 1 { // batches of 10
					var es []types.SendMessageBatchRequestEntry
					for j := range 10 {
						e := types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(fmt.Sprintf("%s-%d", body, j))}
						if q == "orders.fifo" {
							e.MessageGroupId = aws.String(fmt.Sprint("g", j%4))
						}
						es = append(es, e)
					}
					out, err := cl.SendMessageBatch(loadCtx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(urls[q]), Entries: es})
					if err != nil {
						continue
					}
					for _, ok := range out.Successful {
						var j int
						fmt.Sscan(aws.ToString(ok.Id), &j)
						l.send(aws.ToString(es[j].MessageBody), aws.ToString(ok.MessageId))
						sends.Add(1)
					}
					continue
				}
				in := &sqs.SendMessageInput{QueueUrl: aws.String(urls[q]), MessageBody: aws.String(body)}
				if q == "orders.fifo" {
					in.MessageGroupId = aws.String(fmt.Sprint("g", i%4))
				}
				if out, err := cl.SendMessage(loadCtx, in); err == nil {
					l.send(body, aws.ToString(out.MessageId))
					sends.Add(1)
				}
			}
		})
	}
	for w := range 4 {
		wg.Go(func() {
			q := []string{"events", "orders.fifo"}[w%2]
			for n := 0; loadCtx.Err() == nil; {
				// The server claims the messages after this: they cannot
				// be visible again before began+visibility. Both instants
				// are read on the wall clock, the store's (a host whose
				// clock is stepped forward ends timeouts sooner by the
				// monotonic one).
				began := time.Now().Round(0)
				out, err := cl.ReceiveMessage(loadCtx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(urls[q]), MaxNumberOfMessages: 10})
				if err != nil || len(out.Messages) == 0 {
					continue
				}
				receives.Add(int64(len(out.Messages)))
				if n++; n%4 == 0 {
					for _, m := range out.Messages {
						l.keep(aws.ToString(m.MessageId), began)
					}
					continue
				}
				var es []types.DeleteMessageBatchRequestEntry
				for i, m := range out.Messages {
					es = append(es, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
					l.asked(aws.ToString(m.MessageId))
				}
				d, err := cl.DeleteMessageBatch(loadCtx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(urls[q]), Entries: es})
				if err != nil {
					continue
				}
				for _, ok := range d.Successful {
					var i int
					fmt.Sscan(aws.ToString(ok.Id), &i)
					l.del(aws.ToString(out.Messages[i].MessageId))
				}
			}
		})
	}
	// Kill it in the middle of the load.
	deadline := time.Now().Add(8 * time.Second)
	for sends.Load() < 4000 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	in.kill(t)
	stopLoad()
	wg.Wait()
	if ws, ok := in.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("want death by SIGKILL, got %v", in.cmd.ProcessState)
	}
	l.mu.Lock()
	// body → id: acknowledged and never asked to be deleted. (A delete
	// asked for but not acknowledged may have been done.)
	want := map[string]string{}
	kept := map[string]time.Time{} // id → earliest it may come back
	for body, id := range l.sent {
		if !l.deleting[id] {
			want[body] = id
			if at, ok := l.kept[id]; ok {
				kept[id] = at.Add(visibility)
			}
		}
	}
	deleted := len(l.deleted)
	l.mu.Unlock()
	t.Logf("killed after %d acknowledged sends, %d received, %d acknowledged deletes; %d must survive, %d of them received and kept", sends.Load(), receives.Load(), deleted, len(want), len(kept))
	if sends.Load() < 500 || deleted < 100 || len(kept) == 0 {
		t.Fatalf("too little load before the kill to tell anything")
	}

	// Restart on the same directory and drain everything (deleting, so
	// that FIFO groups move on).
	in2 := startInstance(t, "sluice-embedded-restarted", dir)
	cl2 := newClient(in2.url, hc)
	// body → the MessageIds received with it (a send whose answer was
	// cut by the kill may have stored a copy that nobody acknowledged) and
	// id → when it was first received.
	got := map[string]map[string]bool{}
	gotAt := map[string]time.Time{}
	until := time.Now().Add(20 * time.Second)
	for missing := len(want); missing > 0 && time.Now().Before(until); {
		empty := true
		for _, q := range []string{"events", "orders.fifo"} {
			out, err := cl2.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(urls[q]), MaxNumberOfMessages: 10})
			if err != nil {
				t.Fatalf("receive after the restart: %v", err)
			}
			var es []types.DeleteMessageBatchRequestEntry
			at := time.Now().Round(0)
			for i, m := range out.Messages {
				body, id := aws.ToString(m.Body), aws.ToString(m.MessageId)
				if got[body] == nil {
					got[body] = map[string]bool{}
				}
				got[body][id] = true
				if _, ok := gotAt[id]; !ok {
					gotAt[id] = at
				}
				es = append(es, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
				empty = false
			}
			if len(es) > 0 {
				if _, err := cl2.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(urls[q]), Entries: es}); err != nil {
					t.Fatalf("delete after the restart: %v", err)
				}
			}
		}
		missing = 0
		for body := range want {
			if _, ok := got[body]; !ok {
				missing++
			}
		}
		if empty {
			time.Sleep(100 * time.Millisecond) // what was in flight at the kill comes back after 2s
		}
	}
	lost, extra := 0, 0
	for body, id := range want {
		ids := got[body]
		switch {
		case len(ids) == 0:
			if lost++; lost <= 5 {
				t.Errorf("acknowledged send %s (%s) lost", body, id)
			}
		case !ids[id]:
			t.Errorf("message %s: ids %v after the restart, acknowledged %s", body, slices.Collect(maps.Keys(ids)), id)
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged messages lost", lost, len(want))
	}
	early := 0
	for id, notBefore := range kept {
		if at := gotAt[id]; at.Before(notBefore) {
			if early++; early <= 5 {
				t.Errorf("kept message %s back %s before its visibility timeout ended", id, notBefore.Sub(at).Round(time.Millisecond))
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for body, ids := range got {
		for id := range ids {
			if l.deleted[id] {
				t.Errorf("message %s (%s) is back after its delete was acknowledged", body, id)
			}
			if l.sent[body] != id {
				extra++
			}
		}
	}
	t.Logf("after the restart: all %d acknowledged messages there, %d of the %d kept ones back before their visibility timeout ended (%d received in all, %d copies nobody acknowledged)",
		len(want), early, len(kept), len(gotAt), extra)
}

// tmpfs mounts a tmpfs of size bytes on a new directory and unmounts it at
// the end of the test. It needs root: without, it skips, unless CI=true.
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		why := fmt.Sprintf("mounting a %d-byte tmpfs (mount -t tmpfs -o size=%d tmpfs DIR) failed: %v; the disk-full test needs root", size, size, err)
		if ci := strings.ToLower(os.Getenv("CI")); ci == "true" || ci == "1" {
			t.Fatal(why + " (CI=true: not skipping)")
		}
		t.Skip(why)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestEmbeddedDiskFull runs `sluice serve` on the embedded store on a small
// disk and fills it: sends then fail with ServiceUnavailable (HTTP 503)
// after the SDK's retries and store nothing, everything else serves
// (ListQueues, receives, deletes, and the redelivery of messages whose
// receive answer was lost), /readyz answers 503; within 3 s of the disk
// having room again the same process takes sends by itself, and is ready.
func TestEmbeddedDiskFull(t *testing.T) {
	if sluiceBin == "" {
		t.Fatal("the sluice binary was not built (TestMain)")
	}
	disk := tmpfs(t, 32<<20)
	in := startInstance(t, "sluice-embedded", filepath.Join(disk, "data"))
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	lose := &loseReceive{rt: hc.Transport}
	hc.Transport = lose
	cl := newClient(in.url, hc)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	out, err := cl.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	if err != nil {
		t.Fatal(err)
	}
	q := out.QueueUrl
	body := strings.Repeat("x", 4000)
	acked := map[string]bool{} // MessageIds of the acknowledged sends
	for range 50 {
		out, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String(body)})
		if err != nil {
			t.Fatal(err)
		}
		acked[aws.ToString(out.MessageId)] = true
	}

	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := 1 << 20; chunk > 0; chunk /= 4 {
		for _, err := f.Write(make([]byte, chunk)); err == nil; _, err = f.Write(make([]byte, chunk)) {
		}
	}
	f.Close()

	var sendErr error
	for range 1000 {
		var out *sqs.SendMessageOutput
		if out, sendErr = cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String(body)}); sendErr != nil {
			break
		}
		acked[aws.ToString(out.MessageId)] = true
	}
	sent := len(acked)
	var re *awshttp.ResponseError
	switch {
	case sendErr == nil:
		t.Fatalf("%d sends on a full disk all succeeded", sent)
	case apiCode(sendErr) != "ServiceUnavailable" || !errors.As(sendErr, &re) || re.HTTPStatusCode() != 503:
		t.Errorf("send on a full disk: %v; want ServiceUnavailable, HTTP 503", sendErr) // and go on: what else breaks?
	}
	if n := lose.unavailable.Load(); n < 3 {
		t.Errorf("%d answers with HTTP 503: the SDK did not retry the refused send (3 attempts)", n)
	}
	t.Logf("send on the full disk, after %d: %v (%d answers with HTTP 503)", sent, sendErr, lose.unavailable.Load())

	if code, body := readyz(t, in.url); code != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz on a full disk: %d %q, want 503", code, body)
	}
	if _, err := cl.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("ListQueues on a full disk: %v", err)
	}
	// Drain what was acknowledged, as a consumer of SQS must: a receive
	// whose answer was lost (the SDK then retries it) leaves its messages in
	// flight until their visibility timeout, so the loop receives until it
	// has seen every acknowledged MessageId, not until one pass has returned
	// as many messages as were sent. The first answer is lost on purpose.
	lose.armed.Store(true)
	got := map[string]bool{}
	missing := func() int {
		n := 0
		for id := range acked {
			if !got[id] {
				n++
			}
		}
		return n
	}
	until := time.Now().Add(20 * time.Second)
	for missing() > 0 {
		if time.Now().After(until) {
			t.Fatalf("received %d of %d acknowledged messages on a full disk within 20s", len(acked)-missing(), len(acked))
		}
		r, err := cl.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 10, VisibilityTimeout: 3, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive on a full disk, after %d of %d: %v", len(acked)-missing(), len(acked), err)
		}
		if len(r.Messages) == 0 {
			continue
		}
		var es []types.DeleteMessageBatchRequestEntry
		for i, m := range r.Messages {
			got[aws.ToString(m.MessageId)] = true
			es = append(es, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		d, err := cl.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: es})
		if err != nil || len(d.Failed) > 0 {
			t.Fatalf("delete on a full disk: %v %+v", err, d)
		}
	}
	if !lose.lost.Load() {
		t.Fatal("no receive answer was lost: the test did not check redelivery")
	}
	// A refused send stored nothing: every message there was acknowledged.
	// (The clients' ownbody transport keeps the SDK from losing a send's
	// answer and storing the retry as a second copy.)
	extra := 0
	for id := range got {
		if !acked[id] {
			extra++
		}
	}
	if extra > 0 {
		t.Errorf("%d messages received that no send was acknowledged for", extra)
	}
	t.Logf("received all %d acknowledged messages on a full disk, one answer lost and redelivered, nothing else", len(acked))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The store looks for room every second (and the SDK's retries of a
	// 503 bridge part of that): sends resume within a second or two.
	roomAt := time.Now()
	for {
		_, err := cl.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("after")})
		if err == nil {
			break
		}
		if time.Since(roomAt) > 3*time.Second {
			t.Fatalf("sends still fail 3s after the disk got room: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the same process takes sends again %s after the disk got room", time.Since(roomAt).Round(10*time.Millisecond))
	if code, body := readyz(t, in.url); code != http.StatusOK {
		t.Errorf("GET /readyz once the disk has room: %d %q, want 200", code, body)
	}
}

// readyz is GET /readyz: its status code and body.
func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	res, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.TrimSpace(string(b))
}

// loseReceive counts the answers with HTTP 503 and, once armed, loses the
// answer of one ReceiveMessage that returned messages: the body breaks as
// when net/http closes the connection under the SDK (aws/aws-sdk-go-v2#2737),
// and the SDK retries. The server has claimed the messages of the lost
// answer.
type loseReceive struct {
	rt          http.RoundTripper
	armed       atomic.Bool
	lost        atomic.Bool
	unavailable atomic.Int64 // answers with HTTP 503
}

func (l *loseReceive) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := l.rt.RoundTrip(r)
	if err == nil && res.StatusCode == http.StatusServiceUnavailable {
		l.unavailable.Add(1)
	}
	if err != nil || res.StatusCode != http.StatusOK || r.Header.Get("X-Amz-Target") != "AmazonSQS.ReceiveMessage" ||
		res.ContentLength < 100 || !l.armed.CompareAndSwap(true, false) {
		return res, err
	}
	res.Body.Close()
	res.Body = io.NopCloser(iotest.ErrReader(&net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}))
	l.lost.Store(true)
	return res, nil
}

func (l *loseReceive) CloseIdleConnections() {
	if c, ok := l.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// TestEmbeddedSecondProcessRefused starts `sluice serve` on an embedded
// data directory and a second `sluice serve` on the same directory: the
// second must exit with an error saying the directory is in use, within a
// few seconds, and the first must go on serving.
func TestEmbeddedSecondProcessRefused(t *testing.T) {
	if sluiceBin == "" {
		t.Fatal("the sluice binary was not built (TestMain)")
	}
	dir := filepath.Join(t.TempDir(), "data")
	in := startInstance(t, "sluice-embedded", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	second := exec.CommandContext(ctx, sluiceBin, "serve", "--addr", "127.0.0.1:0", "--store", dir)
	out, err := second.CombinedOutput()
	took := time.Since(start)
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("the second process on %s still ran after 20s; output:\n%s", dir, out)
	case !errors.As(err, &ee):
		t.Fatalf("the second process on %s: %v, want an exit with an error; output:\n%s", dir, err, out)
	case !strings.Contains(string(out), "in use by another process"):
		t.Errorf("the second process exited (%v) without saying the directory is in use; output:\n%s", err, out)
	case took > 5*time.Second:
		t.Errorf("the second process took %s to give up", took.Round(time.Millisecond))
	}
	t.Logf("the second process exited after %s: %v", took.Round(time.Millisecond), err)
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	if _, err := newClient(in.url, hc).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("the first process after the second gave up: %v", err)
	}
}
