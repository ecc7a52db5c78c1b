package systemtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// recorder is a reporter that keeps what it is told.
type recorder struct {
	errs, logs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Failed() bool { return len(r.errs) > 0 }

func fifoMsgOf(g, k int) types.Message {
	return types.Message{Body: aws.String(fifoBody(g, k)), MessageId: aws.String(fmt.Sprintf("id-%d-%d", g, k)),
		Attributes: map[string]string{"SequenceNumber": fmt.Sprintf("1%019d", g*1000+k), "MessageGroupId": groupID(g)}}
}

// newAckedLedger is a ledger of one group of n FIFO messages, all
// acknowledged, and no Standard ones.
func newAckedLedger(n int, strict bool) *ledger {
	l := newLedger(1, n, strict, 2*time.Second)
	for k := range n {
		m := fifoMsgOf(0, k)
		l.fifoAck(0, k, aws.ToString(m.MessageId), m.Attributes["SequenceNumber"])
	}
	l.setProducersDone()
	return l
}

// TestLedgerCatchesBrokenPromises checks the checker: what a correct
// server may do passes, and each kind of broken promise is reported. It
// needs no database.
func TestLedgerCatchesBrokenPromises(t *testing.T) {
	// Each receive starts 3 s after the one before (more than the 2 s
	// visibility timeout) and takes 10 ms.
	clock := time.Now()
	recv := func(l *ledger, ks ...int) {
		var ms []types.Message
		for _, k := range ks {
			ms = append(ms, fifoMsgOf(0, k))
		}
		clock = clock.Add(3 * time.Second)
		l.fifoReceived(ms, clock, clock.Add(10*time.Millisecond), "test")
	}
	cases := []struct {
		name   string
		strict bool
		run    func(l *ledger)
		want   string // "" for a pass, else a substring of an error
	}{
		{"in order in batches", true, func(l *ledger) { recv(l, 0, 1); recv(l, 2); recv(l, 3) }, ""},
		{"redelivery after expiry", false, func(l *ledger) { recv(l, 0, 1); recv(l, 0, 1, 2, 3) }, ""},
		{"gap over a deleted message", false, func(l *ledger) { recv(l, 0, 1); recv(l, 0, 2, 3) }, ""},
		{"skips ahead", true, func(l *ledger) { recv(l, 0); recv(l, 2, 3); recv(l, 1) }, "never deleted"},
		{"gap over an undelivered message", true, func(l *ledger) { recv(l, 0, 2); recv(l, 1, 3) }, "skipping message 1"},
		{"out of order in a batch", true, func(l *ledger) { recv(l, 1, 0, 2, 3) }, "not in send order"},
		{"lost", true, func(l *ledger) { recv(l, 0, 1, 2) }, "NOT RECEIVED"},
		{"duplicate in strict mode", true, func(l *ledger) { recv(l, 0, 1); recv(l, 1, 2, 3) }, "delivered 2 times"},
		{"delivered twice within the visibility timeout", false, func(l *ledger) {
			recv(l, 0, 1, 2, 3)
			l.fifoReceived([]types.Message{fifoMsgOf(0, 0)}, clock.Add(time.Second), clock.Add(time.Second), "test")
		}, "within its visibility timeout"},
		{"deleted message comes back", false, func(l *ledger) {
			recv(l, 0, 1, 2, 3)
			l.fifoDeleted(0, 0, clock, clock.Add(100*time.Millisecond))
			l.fifoReceived([]types.Message{fifoMsgOf(0, 0)}, clock.Add(3*time.Second), clock.Add(3*time.Second), "test")
		}, "after its delete was acknowledged"},
		{"dedup repeat delivered", true, func(l *ledger) {
			recv(l, 0, 1, 2, 3)
			l.fifoReceived([]types.Message{{Body: aws.String(dupBody(0, 1)), MessageId: aws.String("x")}}, clock, clock, "test")
		}, "not deduplicated"},
		{"wrong sequence number", true, func(l *ledger) {
			m := fifoMsgOf(0, 0)
			m.Attributes["SequenceNumber"] = "1"
			recv(l)
			l.fifoReceived([]types.Message{m}, clock, clock, "test")
			recv(l, 1, 2, 3)
		}, "another SequenceNumber"},
	}
	for _, tc := range cases {
		l := newAckedLedger(4, tc.strict)
		tc.run(l)
		var r recorder
		l.verify(&r)
		got := strings.Join(r.errs, "\n")
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: want no error, got:\n%s", tc.name, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: want an error with %q, got:\n%s", tc.name, tc.want, got)
		}
	}
}
