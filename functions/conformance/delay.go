package conformance

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/stores"
)

func testDelay(t *testing.T, s suite) {
	s.test(t, "PerMessage", func(e *env) {
		url := e.create("q", nil)
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("later"), DelaySeconds: i64(5)})
		e.send(url, "now")
		e.wantCounts(url, 1, 0, 1)
		wantBodies(e.t, e.recv(url, 10), "now")
		e.clock.Advance(secs(4))
		e.wantEmpty(url)
		e.wantCounts(url, 0, 1, 1)
		e.clock.Advance(secs(2))
		e.wantCounts(url, 1, 1, 0)
		wantBodies(e.t, e.recv(url, 10), "later")
	})

	s.test(t, "QueueDelay", func(e *env) {
		url := e.create("q", map[string]string{"DelaySeconds": "10"})
		e.send(url, "queue delay")
		// docs: a message timer overrides the queue's delay on Standard queues.
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("own 0"), DelaySeconds: i64(0)})
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("own 20"), DelaySeconds: i64(20)})
		e.wantCounts(url, 1, 0, 2)
		wantBodies(e.t, e.recv(url, 10), "own 0")
		e.clock.Advance(secs(9))
		e.wantEmpty(url)
		e.clock.Advance(secs(2))
		wantBodies(e.t, e.recv(url, 10), "queue delay")
		e.clock.Advance(secs(10))
		wantBodies(e.t, e.recv(url, 10), "own 20")
	})

	s.test(t, "Range", func(e *env) {
		// docs: 0 to 900 (wording not recorded).
		url := e.create("q", nil)
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("max"), DelaySeconds: i64(900)})
		for _, d := range []int64{-1, 901} {
			_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("bad"), DelaySeconds: i64(d)})
			wantErrCode(e.t, err, "InvalidParameterValue", 400)
		}
		e.wantCounts(url, 0, 0, 1)
		e.clock.Advance(15 * time.Minute)
		wantBodies(e.t, e.recv(url, 10), "max")
	})

	s.test(t, "FIFOPerMessageRejected", func(e *env) {
		// snapshot test_fifo_queue_send_message_with_delay_seconds_fails.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true"})
		_, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("message-1"), MessageGroupId: str("1"), DelaySeconds: i64(2)})
		wantErr(e.t, err, contract.ErrInvalidParameterValue("Value 2 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type."))
		e.wantCounts(url, 0, 0, 0)
		// validated test_send_message_with_delay_0_works_for_fifo.
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("zero"), MessageGroupId: str("1"), DelaySeconds: i64(0)})
		wantBodies(e.t, e.recv(url, 1), "zero")
	})

	s.test(t, "FIFOQueueDelay", func(e *env) {
		// snapshot test_fifo_queue_send_message_with_zero_delay_defaults_to_queue_delay
		// and validated test_fifo_queue_send_message_with_delay_on_queue_works.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "DelaySeconds": "2"})
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("message-1"), MessageGroupId: str("1"), DelaySeconds: i64(0)})
		e.sendFIFO(url, "message-2", "1", "")
		e.sendFIFO(url, "message-3", "1", "")
		e.wantCounts(url, 0, 0, 3)
		e.wantEmpty(url)
		e.clock.Advance(secs(3))
		wantBodies(e.t, e.recv(url, 3), "message-1", "message-2", "message-3")
	})

	s.test(t, "Batch", func(e *env) {
		url := e.create("q", nil)
		out, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: []contract.SendMessageBatchRequestEntry{
			{Id: "now", MessageBody: str("now")},
			{Id: "later", MessageBody: str("later"), DelaySeconds: i64(30)},
		}})
		wantOK(e.t, err, "SendMessageBatch")
		if len(out.Successful) != 2 {
			e.t.Fatalf("batch: %d successful, want 2 (failed %v)", len(out.Successful), out.Failed)
		}
		e.wantCounts(url, 1, 0, 1)
		now := e.recv(url, 10)
		wantBodies(e.t, now, "now")
		for _, m := range now {
			e.del(url, m.ReceiptHandle)
		}
		e.clock.Advance(secs(31))
		wantBodies(e.t, e.recv(url, 10), "later")
	})
}

func testRetention(t *testing.T, s suite) {
	s.test(t, "Expires", func(e *env) {
		// validated test_message_retention.
		url := e.create("q", map[string]string{"MessageRetentionPeriod": "60"})
		e.send(url, "foobar1")
		e.send(url, "foobar2")
		e.clock.Advance(secs(59))
		e.wantCounts(url, 2, 0, 0)
		e.clock.Advance(secs(2))
		e.wantEmpty(url)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "ExpiresFIFO", func(e *env) {
		// validated test_message_retention_fifo.
		url := e.createFIFO("f.fifo", map[string]string{"MessageRetentionPeriod": "60", "ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "foobar1", "1", "")
		e.sendFIFO(url, "foobar2", "2", "")
		e.clock.Advance(secs(61))
		e.wantEmpty(url)
		e.wantCounts(url, 0, 0, 0)
		// The groups are usable again.
		e.sendFIFO(url, "fresh", "1", "")
		wantBodies(e.t, e.recv(url, 10), "fresh")
	})

	s.test(t, "ExpiresInFlight", func(e *env) {
		// validated test_message_retention_with_inflight: an in-flight
		// message expires too, and deleting it afterwards is not an error.
		url := e.create("q", map[string]string{"MessageRetentionPeriod": "60", "VisibilityTimeout": "60"})
		e.send(url, "foobar1")
		e.send(url, "foobar2")
		e.clock.Advance(secs(5))
		m := e.recvVT(url, 1, 60)
		if len(m) != 1 {
			e.t.Fatal("no message")
		}
		e.clock.Advance(secs(61))
		e.wantEmpty(url)
		e.wantCounts(url, 0, 0, 0)
		e.clock.Advance(secs(10))
		e.wantEmpty(url)
		e.del(url, m[0].ReceiptHandle)
	})

	s.test(t, "FIFOExpiredInFlightFreesGroup", func(e *env) {
		// An in-flight message expires at its retention (ExpiresInFlight),
		// so it holds its FIFO group no longer: the next message of the
		// group, still within its own retention, is receivable then, not
		// when the expired one's visibility timeout ends.
		url := e.createFIFO("f.fifo", map[string]string{"MessageRetentionPeriod": "60", "VisibilityTimeout": "600", "ContentBasedDeduplication": "true"})
		e.sendFIFO(url, "A", "g", "")
		e.clock.Advance(secs(30))
		e.sendFIFO(url, "B", "g", "")
		e.clock.Advance(secs(20))
		wantBodies(e.t, e.recvVT(url, 1, 600), "A")
		e.clock.Advance(secs(15)) // A past its retention, B not
		wantBodies(e.t, e.recv(url, 10), "B")
	})

	s.test(t, "Default", func(e *env) {
		url := e.create("q", nil)
		e.send(url, "m")
		e.clock.Advance(4*24*time.Hour - time.Second)
		e.wantCounts(url, 1, 0, 0)
		e.clock.Advance(2 * time.Second)
		e.wantEmpty(url)
	})

	s.test(t, "CountsFromSend", func(e *env) {
		// Retention counts from the send, delays included.
		url := e.create("q", map[string]string{"MessageRetentionPeriod": "120"})
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("delayed"), DelaySeconds: i64(100)})
		e.clock.Advance(secs(101))
		e.wantCounts(url, 1, 0, 0)
		e.clock.Advance(secs(20))
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "Maintain", func(e *env) {
		// Store.Maintain drops what requests would; nothing else.
		url := e.create("q", map[string]string{"MessageRetentionPeriod": "60"})
		e.send(url, "old")
		e.clock.Advance(secs(30))
		e.send(url, "young")
		e.clock.Advance(secs(31))
		wantOK(e.t, e.store.Maintain(e.op(), &stores.MaintainParams{Now: e.clock.Now()}), "Store.Maintain")
		e.wantCounts(url, 1, 0, 0)
		wantBodies(e.t, e.recv(url, 10), "young")
	})
}
