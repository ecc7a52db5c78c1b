package conformance

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
)

// Every event that makes messages receivable wakes a long poll waiting on
// that queue, on the same instance and on another one (design: a request
// can land on any instance). The suite's repair interval is longer than any
// wait, so a missing wake-up fails here (awaitWoken) instead of being
// covered by the poll's own periodic check.
func testWakeUps(t *testing.T, s suite) {
	type wakeCase struct {
		name string
		// setup prepares the queues and returns the URL to poll and the
		// message it put in flight, if any.
		setup func(e *env) (string, contract.Message)
		// act makes a message receivable there, through actor.
		act func(e *env, actor *service.Service, url string, m contract.Message)
	}
	cases := []wakeCase{
		{"Send", func(e *env) (string, contract.Message) { return e.create("q", nil), contract.Message{} },
			func(e *env, a *service.Service, url string, m contract.Message) {
				_, err := a.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("m")})
				wantOK(e.t, err, "SendMessage")
			}},
		{"BatchSend", func(e *env) (string, contract.Message) { return e.create("q", nil), contract.Message{} },
			func(e *env, a *service.Service, url string, m contract.Message) {
				_, err := a.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: sendEntries(3)})
				wantOK(e.t, err, "SendMessageBatch")
			}},
		{"FIFOSend", func(e *env) (string, contract.Message) {
			return e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"}), contract.Message{}
		},
			func(e *env, a *service.Service, url string, m contract.Message) {
				_, err := a.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("m"), MessageGroupId: str("g")})
				wantOK(e.t, err, "SendMessage")
			}},
		{"DelayedSend", func(e *env) (string, contract.Message) { return e.create("q", nil), contract.Message{} },
			func(e *env, a *service.Service, url string, m contract.Message) {
				// The woken poll finds it delayed, and learns when it is
				// due (its NextChange); the clock gets there meanwhile.
				_, err := a.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("m"), DelaySeconds: i64(2)})
				wantOK(e.t, err, "SendMessage with a delay")
				e.clock.Advance(secs(2))
			}},
		{"VisibilityToZero", func(e *env) (string, contract.Message) {
			url := e.create("q", nil)
			e.send(url, "m")
			return url, e.takeInFlight(url) // the poll starts on an empty queue
		}, func(e *env, a *service.Service, url string, m contract.Message) {
			_, err := a.ChangeMessageVisibility(e.op(), &contract.ChangeMessageVisibilityInput{QueueUrl: url,
				ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: i64(0)})
			wantOK(e.t, err, "ChangeMessageVisibility 0")
		}},
		{"VisibilityShortened", func(e *env) (string, contract.Message) {
			url := e.create("q", nil)
			e.send(url, "m")
			return url, e.takeInFlight(url)
		}, func(e *env, a *service.Service, url string, m contract.Message) {
			_, err := a.ChangeMessageVisibility(e.op(), &contract.ChangeMessageVisibilityInput{QueueUrl: url,
				ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: i64(2)})
			wantOK(e.t, err, "ChangeMessageVisibility 2")
			e.clock.Advance(secs(2))
		}},
		{"VisibilityBatchToZero", func(e *env) (string, contract.Message) {
			url := e.create("q", nil)
			e.send(url, "m")
			return url, e.takeInFlight(url)
		}, func(e *env, a *service.Service, url string, m contract.Message) {
			out, err := a.ChangeMessageVisibilityBatch(e.op(), &contract.ChangeMessageVisibilityBatchInput{QueueUrl: url,
				Entries: []contract.ChangeMessageVisibilityBatchRequestEntry{{Id: "a", ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: i64(0)}}})
			wantOK(e.t, err, "ChangeMessageVisibilityBatch")
			if len(out.Failed) != 0 {
				e.t.Errorf("ChangeMessageVisibilityBatch failed: %+v", out.Failed)
			}
		}},
		{"FIFOGroupReleasedByDelete", func(e *env) (string, contract.Message) {
			url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "60"})
			e.sendFIFO(url, "m1", "g", "")
			e.sendFIFO(url, "m2", "g", "")
			return url, e.takeInFlight(url) // m1; m2 waits behind it
		}, func(e *env, a *service.Service, url string, m contract.Message) {
			_, err := a.DeleteMessage(e.op(), &contract.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
			wantOK(e.t, err, "DeleteMessage")
		}},
		{"FIFOGroupReleasedByBatchDelete", func(e *env) (string, contract.Message) {
			url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "60"})
			e.sendFIFO(url, "m1", "g", "")
			e.sendFIFO(url, "m2", "g", "")
			return url, e.takeInFlight(url)
		}, func(e *env, a *service.Service, url string, m contract.Message) {
			out, err := a.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url,
				Entries: []contract.DeleteMessageBatchRequestEntry{{Id: "a", ReceiptHandle: m.ReceiptHandle}}})
			wantOK(e.t, err, "DeleteMessageBatch")
			if len(out.Failed) != 0 {
				e.t.Errorf("DeleteMessageBatch failed: %+v", out.Failed)
			}
		}},
		{"RedriveIntoDeadLetterQueue", func(e *env) (string, contract.Message) {
			dlq := e.create("dlq", nil)
			src := e.create("src", redrive("dlq", 1))
			e.send(src, "poison")
			e.recv(src, 1) // received once: the next receive moves it
			e.clock.Advance(secs(31))
			return dlq, contract.Message{}
		}, func(e *env, a *service.Service, url string, m contract.Message) {
			out, err := a.ReceiveMessage(e.op(), &contract.ReceiveMessageInput{QueueUrl: queueURL("src"), WaitTimeSeconds: i64(0)})
			wantOK(e.t, err, "ReceiveMessage on the source")
			if len(out.Messages) != 0 {
				e.t.Errorf("the source returned %q; the message should have moved", bodies(out.Messages))
			}
		}},
		{"MoveTaskIntoDestination", func(e *env) (string, contract.Message) {
			e.create("dlq", nil)
			src := e.create("src", redrive("dlq", 1))
			e.send(src, "back")
			e.recv(src, 1)
			e.clock.Advance(secs(31))
			e.wantEmpty(src) // moves it to the dead-letter queue
			return src, contract.Message{}
		}, func(e *env, a *service.Service, url string, m contract.Message) {
			_, err := a.StartMessageMoveTask(e.op(), &contract.StartMessageMoveTaskInput{SourceArn: queueARN("dlq")})
			wantOK(e.t, err, "StartMessageMoveTask")
			e.clock.Advance(secs(1))
			wantOK(e.t, a.RunMoveTasks(e.op()), "RunMoveTasks")
		}},
	}
	for _, c := range cases {
		for _, across := range []bool{false, true} {
			name := c.name
			if across {
				name += "/FromOtherInstance"
			}
			s.test(t, name, func(e *env) {
				url, m := c.setup(e)
				actor := e.svc
				if across {
					actor = e.newService()
				}
				ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20), MaxNumberOfMessages: i64(10)})
				time.Sleep(settle)
				e.stillWaiting(ch)
				c.act(e, actor, url, m)
				e.awaitWoken(ch, c.name)
			})
		}
	}
}

// takeInFlight receives the queue's one visible message with a visibility
// timeout of a minute, through a third party (not the waiting poll).
func (e *env) takeInFlight(url string) contract.Message {
	e.t.Helper()
	got := e.recvVT(url, 1, 60)
	if len(got) != 1 {
		e.t.Fatalf("takeInFlight: %d messages, want 1", len(got))
	}
	return got[0]
}
