package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

func i64(v int64) *int64       { return &v }
func str(v string) *string     { return &v }
func secs(n int) time.Duration { return time.Duration(n) * time.Second }

func strAttr(v string) contract.MessageAttributeValue {
	return contract.MessageAttributeValue{DataType: "String", StringValue: &v}
}

// ---- errors

// asError returns err as a *contract.Error; otherwise it marks the test
// failed and returns nil (the test goes on, so one run reports every
// difference).
func asError(t *testing.T, err error) *contract.Error {
	t.Helper()
	if err == nil {
		t.Error("expected an error, got success")
		return nil
	}
	var ce *contract.Error
	if !errors.As(err, &ce) {
		t.Errorf("expected a *contract.Error, got %T: %v", err, err)
		return nil
	}
	return ce
}

// wantErr checks that err is exactly want: code, JSON shape, status, sender
// fault, message (and the Query protocol's wording when want has one).
func wantErr(t *testing.T, err error, want *contract.Error) {
	t.Helper()
	got := asError(t, err)
	if got == nil {
		t.Errorf("  (wanted %s: %q)", want.Code, want.Message)
		return
	}
	if got.Code != want.Code || got.Type != want.Type || got.Status != want.Status || got.Sender != want.Sender {
		t.Errorf("error = {Code:%q Type:%q Status:%d Sender:%v}, want {Code:%q Type:%q Status:%d Sender:%v} (message %q)",
			got.Code, got.Type, got.Status, got.Sender, want.Code, want.Type, want.Status, want.Sender, got.Message)
	}
	if got.Message != want.Message {
		t.Errorf("error message = %q, want %q", got.Message, want.Message)
	}
	if want.QueryMessage != "" && got.MessageFor(true) != want.QueryMessage {
		t.Errorf("error Query message = %q, want %q", got.MessageFor(true), want.QueryMessage)
	}
}

// wantErrCode checks only code and status, where AWS's wording is not
// pinned down.
func wantErrCode(t *testing.T, err error, code string, status int) *contract.Error {
	t.Helper()
	got := asError(t, err)
	if got == nil {
		t.Errorf("  (wanted %s)", code)
		return &contract.Error{}
	}
	if got.Code != code || got.Status != status {
		t.Errorf("error = %s (status %d): %q; want code %s, status %d", got.Code, got.Status, got.Message, code, status)
	}
	return got
}

// wantErrCodeIn accepts any of codes (all with status 400), where the
// references do not settle which one AWS uses.
func wantErrCodeIn(t *testing.T, err error, codes ...string) *contract.Error {
	t.Helper()
	got := asError(t, err)
	if got == nil {
		t.Errorf("  (wanted one of %v)", codes)
		return &contract.Error{}
	}
	if !slices.Contains(codes, got.Code) || got.Status != 400 {
		t.Errorf("error = %s (status %d): %q; want one of %v with status 400", got.Code, got.Status, got.Message, codes)
	}
	return got
}

// wantErrPrefix checks code, status and the start of the message.
func wantErrPrefix(t *testing.T, err error, code string, status int, prefix string) {
	t.Helper()
	got := wantErrCode(t, err, code, status)
	if got.Code != "" && !strings.HasPrefix(got.Message, prefix) {
		t.Errorf("error message = %q, want it to start with %q", got.Message, prefix)
	}
}

// wantErrOneOf checks code and status exactly and accepts any of messages.
func wantErrOneOf(t *testing.T, err error, code string, status int, messages ...string) {
	t.Helper()
	got := wantErrCode(t, err, code, status)
	if got.Code != "" && !slices.Contains(messages, got.Message) {
		t.Errorf("error message = %q, want one of %q", got.Message, messages)
	}
}

func wantOK(t *testing.T, err error, what string) {
	t.Helper()
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: the store did not answer within Harness.OpTimeout: %v", what, err)
	}
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// ---- queues

func (e *env) create(name string, attrs map[string]string) string {
	e.t.Helper()
	out, err := e.svc.CreateQueue(e.op(), &contract.CreateQueueInput{QueueName: name, Attributes: attrs})
	wantOK(e.t, err, "CreateQueue "+name)
	if out.QueueUrl != queueURL(name) {
		e.t.Fatalf("CreateQueue %s: QueueUrl = %q, want %q", name, out.QueueUrl, queueURL(name))
	}
	return out.QueueUrl
}

// createFIFO creates a FIFO queue (name must end in .fifo) with attrs plus
// FifoQueue=true.
func (e *env) createFIFO(name string, attrs map[string]string) string {
	e.t.Helper()
	a := map[string]string{"FifoQueue": "true"}
	for k, v := range attrs {
		a[k] = v
	}
	return e.create(name, a)
}

func (e *env) attrs(url string, names ...string) map[string]string {
	e.t.Helper()
	out, err := e.svc.GetQueueAttributes(e.op(), &contract.GetQueueAttributesInput{QueueUrl: url, AttributeNames: names})
	wantOK(e.t, err, "GetQueueAttributes")
	return out.Attributes
}

func (e *env) setAttrs(url string, attrs map[string]string) {
	e.t.Helper()
	_, err := e.svc.SetQueueAttributes(e.op(), &contract.SetQueueAttributesInput{QueueUrl: url, Attributes: attrs})
	wantOK(e.t, err, fmt.Sprintf("SetQueueAttributes %v", attrs))
}

type counts struct{ Visible, NotVisible, Delayed string }

func (e *env) counts(url string) counts {
	e.t.Helper()
	a := e.attrs(url, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")
	return counts{a["ApproximateNumberOfMessages"], a["ApproximateNumberOfMessagesNotVisible"], a["ApproximateNumberOfMessagesDelayed"]}
}

// wantCounts checks ApproximateNumberOfMessages, …NotVisible and …Delayed.
// sluice's counts are exact (design: "never a made-up zero").
func (e *env) wantCounts(url string, visible, notVisible, delayed int) {
	e.t.Helper()
	got := e.counts(url)
	want := counts{strconv.Itoa(visible), strconv.Itoa(notVisible), strconv.Itoa(delayed)}
	if got != want {
		e.t.Errorf("counts (visible, not visible, delayed) = %v, want %v", got, want)
	}
}

func (e *env) arnOf(url string) string {
	e.t.Helper()
	return e.attrs(url, "QueueArn")["QueueArn"]
}

// ---- messages

func (e *env) sendIn(in *contract.SendMessageInput) *contract.SendMessageOutput {
	e.t.Helper()
	out, err := e.svc.SendMessage(e.op(), in)
	wantOK(e.t, err, "SendMessage")
	return out
}

func (e *env) send(url, body string) *contract.SendMessageOutput {
	e.t.Helper()
	return e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: &body})
}

// sendFIFO sends to a FIFO queue; an empty dedup leaves
// MessageDeduplicationId out.
func (e *env) sendFIFO(url, body, group, dedup string) *contract.SendMessageOutput {
	e.t.Helper()
	in := &contract.SendMessageInput{QueueUrl: url, MessageBody: &body, MessageGroupId: &group}
	if dedup != "" {
		in.MessageDeduplicationId = &dedup
	}
	return e.sendIn(in)
}

func (e *env) receive(in *contract.ReceiveMessageInput) []contract.Message {
	e.t.Helper()
	out, err := e.svc.ReceiveMessage(e.op(), in)
	wantOK(e.t, err, "ReceiveMessage")
	return out.Messages
}

// recv is a short poll (WaitTimeSeconds 0, whatever the queue's default)
// for up to max messages.
func (e *env) recv(url string, max int64) []contract.Message {
	e.t.Helper()
	return e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(max), WaitTimeSeconds: i64(0)})
}

// recvVT is recv with a VisibilityTimeout.
func (e *env) recvVT(url string, max, vt int64) []contract.Message {
	e.t.Helper()
	return e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(max), WaitTimeSeconds: i64(0), VisibilityTimeout: i64(vt)})
}

// recvAll is recv asking for every system and user attribute.
func (e *env) recvAll(url string, max int64) []contract.Message {
	e.t.Helper()
	return e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(max), WaitTimeSeconds: i64(0),
		MessageSystemAttributeNames: []string{"All"}, MessageAttributeNames: []string{"All"}})
}

// recvOne receives and requires exactly one message.
func (e *env) recvOne(url string) contract.Message {
	e.t.Helper()
	ms := e.recv(url, 1)
	if len(ms) != 1 {
		e.t.Fatalf("receive: got %d messages, want 1", len(ms))
	}
	return ms[0]
}

func (e *env) wantEmpty(url string) {
	e.t.Helper()
	if ms := e.recv(url, 10); len(ms) != 0 {
		e.t.Errorf("receive: got %d messages %q, want none", len(ms), bodies(ms))
	}
}

func (e *env) del(url, handle string) {
	e.t.Helper()
	_, err := e.svc.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle})
	wantOK(e.t, err, "DeleteMessage")
}

func (e *env) cmv(url, handle string, vt int64) error {
	_, err := e.svc.ChangeMessageVisibility(e.op(), &contract.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: i64(vt)})
	return err
}

func bodies(ms []contract.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body
	}
	return out
}

func sortedBodies(ms []contract.Message) []string {
	b := bodies(ms)
	sort.Strings(b)
	return b
}

func wantBodies(t *testing.T, ms []contract.Message, want ...string) {
	t.Helper()
	if got := bodies(ms); !slices.Equal(got, want) {
		t.Errorf("bodies = %q, want %q", got, want)
	}
}

func wantBodySet(t *testing.T, ms []contract.Message, want ...string) {
	t.Helper()
	w := slices.Clone(want)
	sort.Strings(w)
	if got := sortedBodies(ms); !slices.Equal(got, w) {
		t.Errorf("bodies (any order) = %q, want %q", got, w)
	}
}

func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

var seqRE = regexp.MustCompile(`^[0-9]{20}$`)

// seqLess compares two 20-digit sequence numbers numerically.
func seqLess(a, b string) bool {
	x, _ := new(big.Int).SetString(a, 10)
	y, _ := new(big.Int).SetString(b, 10)
	if x == nil || y == nil {
		return false
	}
	return x.Cmp(y) < 0
}

// seqCheck checks FIFO SequenceNumbers as AWS documents them: 20 digits,
// unique in the queue, increasing within a message group in send order.
// Across groups nothing is promised, so nothing is checked.
type seqCheck struct {
	t    *testing.T
	seen map[string]bool
	last map[string]string // by group
}

func newSeqCheck(t *testing.T) *seqCheck {
	return &seqCheck{t: t, seen: map[string]bool{}, last: map[string]string{}}
}

func (c *seqCheck) add(group, seq string) {
	c.t.Helper()
	if !seqRE.MatchString(seq) {
		c.t.Errorf("SequenceNumber %q is not 20 digits", seq)
		return
	}
	if c.seen[seq] {
		c.t.Errorf("SequenceNumber %s given twice", seq)
	}
	c.seen[seq] = true
	if prev := c.last[group]; prev != "" && !seqLess(prev, seq) {
		c.t.Errorf("group %s: SequenceNumber %s does not follow %s", group, seq, prev)
	}
	c.last[group] = seq
}

func repeat(c string, n int) string { return strings.Repeat(c, n) }

// ---- long polls and move tasks

type pollResult struct {
	out *contract.ReceiveMessageOutput
	err error
}

// startReceive runs a ReceiveMessage on svc in a goroutine.
func (e *env) startReceive(svc *service.Service, in *contract.ReceiveMessageInput) <-chan pollResult {
	ch := make(chan pollResult, 1)
	go func() {
		out, err := svc.ReceiveMessage(e.op(), in)
		ch <- pollResult{out, err}
	}()
	return ch
}

// await waits for a receive started with startReceive. limit only guards
// against a hang; no test asserts how long a receive took.
func (e *env) await(ch <-chan pollResult, limit time.Duration) []contract.Message {
	e.t.Helper()
	select {
	case r := <-ch:
		wantOK(e.t, r.err, "ReceiveMessage (long poll)")
		return r.out.Messages
	case <-time.After(limit):
		e.t.Fatalf("ReceiveMessage did not return within %v", limit)
		return nil
	}
}

// wakeBound is how soon a woken long poll must return: long before its
// WaitTimeSeconds and the suite's repair interval, so a poll that only
// found the message at its end (no wake-up came) fails. It bounds a
// wake-up's correctness, not its speed: a wake-up takes milliseconds.
const wakeBound = 10 * time.Second

// awaitWoken waits for a receive that an action should have woken, and
// fails the test unless it returned within wakeBound with messages.
func (e *env) awaitWoken(ch <-chan pollResult, what string) []contract.Message {
	e.t.Helper()
	start := time.Now()
	select {
	case r := <-ch:
		wantOK(e.t, r.err, "ReceiveMessage (long poll)")
		if len(r.out.Messages) == 0 {
			e.t.Errorf("the long poll returned empty after %s, %v later: it was not woken", what, time.Since(start).Round(time.Millisecond))
		}
		return r.out.Messages
	case <-time.After(wakeBound):
		e.t.Fatalf("the long poll was not woken by %s within %v (only its repair check would have found the message)", what, wakeBound)
		return nil
	}
}

// stillWaiting fails the test if the receive already returned.
func (e *env) stillWaiting(ch <-chan pollResult) {
	e.t.Helper()
	select {
	case r := <-ch:
		n := 0
		if r.out != nil {
			n = len(r.out.Messages)
		}
		e.t.Fatalf("long poll returned (%d messages, err %v) before anything arrived", n, r.err)
	default:
	}
}

type moveTaskRunner interface {
	RunMoveTasks(ctx context.Context) error
}

// runMoveTasks makes one pass over running message move tasks.
func (e *env) runMoveTasks() {
	e.t.Helper()
	r, ok := any(e.svc).(moveTaskRunner)
	if !ok {
		e.t.Fatal("service.Service has no RunMoveTasks(ctx) error method")
	}
	wantOK(e.t, r.RunMoveTasks(e.op()), "RunMoveTasks")
}

// concurrentMoveSteps runs per move task passes on each of svcs at once
// (released together, to overlap as much as they can) and fails the test if
// any pass fails.
func (e *env) concurrentMoveSteps(svcs []*service.Service, per int) {
	e.t.Helper()
	var wg sync.WaitGroup
	gate := make(chan struct{})
	errs := make(chan error, per*len(svcs))
	for _, svc := range svcs {
		r, ok := any(svc).(moveTaskRunner)
		if !ok {
			e.t.Fatal("service.Service has no RunMoveTasks(ctx) error method")
		}
		for range per {
			wg.Go(func() {
				<-gate
				errs <- r.RunMoveTasks(e.op())
			})
		}
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		wantOK(e.t, err, "RunMoveTasks")
	}
}

func (e *env) listMoveTasks(sourceArn string, max int64) []contract.ListMessageMoveTasksResultEntry {
	e.t.Helper()
	in := &contract.ListMessageMoveTasksInput{SourceArn: sourceArn}
	if max > 0 {
		in.MaxResults = i64(max)
	}
	out, err := e.svc.ListMessageMoveTasks(e.op(), in)
	wantOK(e.t, err, "ListMessageMoveTasks")
	return out.Results
}

// finishMoveTask advances the clock a second at a time and runs move task
// passes until the newest task of sourceArn is no longer RUNNING or
// CANCELLING, and returns it.
func (e *env) finishMoveTask(sourceArn string) contract.ListMessageMoveTasksResultEntry {
	e.t.Helper()
	for range 600 {
		e.clock.Advance(time.Second)
		e.runMoveTasks()
		rs := e.listMoveTasks(sourceArn, 0)
		if len(rs) == 0 {
			e.t.Fatal("ListMessageMoveTasks: no task")
		}
		if rs[0].Status != "RUNNING" && rs[0].Status != "CANCELLING" {
			return rs[0]
		}
	}
	e.t.Fatal("message move task still running after 600 passes")
	return contract.ListMessageMoveTasksResultEntry{}
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }

// fmtAttrs prints message attributes readably (values, not pointers).
func fmtAttrs(m map[string]contract.MessageAttributeValue) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("{")
	for i, n := range names {
		if i > 0 {
			b.WriteString(" ")
		}
		a := m[n]
		if a.StringValue != nil {
			fmt.Fprintf(&b, "%s:%s=%q", n, a.DataType, *a.StringValue)
		} else {
			fmt.Fprintf(&b, "%s:%s=%x", n, a.DataType, a.BinaryValue)
		}
	}
	b.WriteString("}")
	return b.String()
}
