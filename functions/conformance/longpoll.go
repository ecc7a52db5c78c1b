package conformance

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
)

// Long polls run in real time. No test asserts a duration: a waiting poll
// is started, the suite checks it is still waiting, does something, and
// checks the poll returned the message. A broken wake-up then fails by
// returning empty after its WaitTimeSeconds.

// settle gives a started receive time to reach its wait.
const settle = 150 * time.Millisecond

// hang guards against a receive that never returns.
const hang = 40 * time.Second

func testLongPoll(t *testing.T, s suite) {
	s.test(t, "WakesOnSend", func(e *env) {
		url := e.create("q", nil)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		e.send(url, "hello")
		wantBodies(e.t, e.awaitWoken(ch, "a send"), "hello")
	})

	s.test(t, "WakesOnSendFromOtherInstance", func(e *env) {
		// design: a request can land on any instance.
		url := e.create("q", nil)
		other := e.newService()
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		_, err := other.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("across")})
		wantOK(e.t, err, "SendMessage on the other instance")
		wantBodies(e.t, e.awaitWoken(ch, "a send on another instance"), "across")
	})

	// A poll of ten gets messages of a batch sent while it waits; on a
	// store that hands off (stores.Traits.HandOffs), all of them, claimed
	// with the send.
	s.test(t, "WakesOnBatchSend", func(e *env) {
		url := e.create("q", nil)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20), MaxNumberOfMessages: i64(10)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: sendEntries(3)})
		wantOK(e.t, err, "SendMessageBatch")
		got := e.awaitWoken(ch, "a batch send")
		if e.store.Traits().HandOffs {
			wantBodySet(e.t, got, "messageBody-0", "messageBody-1", "messageBody-2")
		}
	})

	s.test(t, "EmptyAfterWait", func(e *env) {
		// snapshot test_receive_empty_queue.
		url := e.create("q", nil)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(1)})
		if got := e.await(ch, hang); len(got) != 0 {
			e.t.Errorf("empty queue long poll returned %q", bodies(got))
		}
	})

	s.test(t, "ReturnsAtOnceWhenAvailable", func(e *env) {
		// validated test_receive_message_wait_time_seconds_and_max_number_of_messages_does_not_block.
		url := e.create("q", nil)
		e.send(url, "foobar1")
		e.send(url, "foobar2")
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20), MaxNumberOfMessages: i64(3)})
		if got := e.await(ch, hang); len(got) == 0 {
			e.t.Error("long poll with messages waiting returned none")
		}
	})

	s.test(t, "WakesOnChangeVisibilityToZero", func(e *env) {
		url := e.create("q", nil)
		e.send(url, "m")
		m := e.recvOne(url)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		wantOK(e.t, e.cmv(url, m.ReceiptHandle, 0), "ChangeMessageVisibility 0")
		wantBodies(e.t, e.awaitWoken(ch, "a visibility reset"), "m")
	})

	s.test(t, "WakesOnFIFOGroupRelease", func(e *env) {
		// validated test_fifo_message_group_visibility: deleting the
		// in-flight head makes the group's next message reach a waiting poll.
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "60"})
		e.sendFIFO(url, "message-1", "1", "")
		m := e.recvOne(url)
		e.sendFIFO(url, "message-2", "1", "")
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		e.del(url, m.ReceiptHandle)
		wantBodies(e.t, e.awaitWoken(ch, "the group's release"), "message-2")
	})

	// A delete frees a FIFO group only when the group has a next message:
	// the delete of a group's last message wakes no waiting poll (its
	// claim would find nothing); the group's next send does.
	s.test(t, "FIFODeleteThatEmptiesItsGroupWakesNoPoll", func(e *env) {
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "60"})
		e.sendFIFO(url, "message-1", "1", "")
		m := e.recvOne(url)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		before := e.hub.Stats().Woken
		e.del(url, m.ReceiptHandle) // publishes its wake-ups before it answers
		if woken := e.hub.Stats().Woken - before; woken != 0 {
			e.t.Errorf("deleting the last message of its group woke %d waiting polls, want 0", woken)
		}
		e.stillWaiting(ch)
		e.sendFIFO(url, "message-2", "1", "")
		wantBodies(e.t, e.awaitWoken(ch, "a send into the emptied group"), "message-2")
	})

	// A batch that deletes the heads of two groups with next messages
	// frees both: two waiting polls get the two next messages.
	s.test(t, "WakesOnFIFOGroupReleasesInBatch", func(e *env) {
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "60"})
		for _, b := range []string{"a-1", "b-1", "a-2", "b-2"} {
			e.sendFIFO(url, b, b[:1], "")
		}
		heads := []contract.Message{e.recvOne(url), e.recvOne(url)}
		if hb := bodies(heads); !slices.Contains(hb, "a-1") || !slices.Contains(hb, "b-1") {
			e.t.Fatalf("two receives of one message got %q, want the heads a-1 and b-1", hb)
		}
		var chans []<-chan pollResult
		for range 2 {
			chans = append(chans, e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)}))
		}
		time.Sleep(settle)
		for _, ch := range chans {
			e.stillWaiting(ch)
		}
		out, err := e.svc.DeleteMessageBatch(e.op(), &contract.DeleteMessageBatchInput{QueueUrl: url, Entries: []contract.DeleteMessageBatchRequestEntry{
			{Id: "a", ReceiptHandle: heads[0].ReceiptHandle}, {Id: "b", ReceiptHandle: heads[1].ReceiptHandle}}})
		wantOK(e.t, err, "DeleteMessageBatch")
		if len(out.Failed) != 0 {
			e.t.Fatalf("DeleteMessageBatch failed %+v", out.Failed)
		}
		var got []string
		for i, ch := range chans {
			got = append(got, bodies(e.awaitWoken(ch, "the release of two groups (poll "+strconv.Itoa(i)+")"))...)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"a-2", "b-2"}) {
			e.t.Errorf("two waiting polls received %q after the release of two groups, want a-2 and b-2", got)
		}
	})

	// A send through the instance where a long poll waits claims for that
	// poll in the send's own store call on the stores that run hand-offs
	// (stores.Traits.HandOffs): the poll answers with the send's commit and
	// no wake-up is needed. The other stores wake it. Either way the
	// message reaches the poll once, in flight under the poll's own
	// VisibilityTimeout, and its receipt works.
	s.test(t, "SendHandsOffToWaitingPoll", func(e *env) {
		url := e.create("q", nil)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20),
			VisibilityTimeout: i64(5), AttributeNames: []string{"ApproximateReceiveCount"}})
		time.Sleep(settle)
		e.stillWaiting(ch)
		before := e.hub.Stats().Woken
		e.send(url, "hello")
		woken := e.hub.Stats().Woken - before // a send publishes before it answers
		got := e.awaitWoken(ch, "a send")
		wantBodies(e.t, got, "hello")
		wantWoken(e, woken, 1, 1)
		if len(got) == 1 && got[0].Attributes["ApproximateReceiveCount"] != "1" {
			e.t.Errorf("ApproximateReceiveCount = %q, want 1", got[0].Attributes["ApproximateReceiveCount"])
		}
		e.wantCounts(url, 0, 1, 0)
		e.clock.Advance(6 * time.Second) // past the poll's visibility timeout
		again := e.recvOne(url)
		wantBodies(e.t, []contract.Message{again}, "hello")
		e.del(url, again.ReceiptHandle)
		e.wantCounts(url, 0, 0, 0)
	})

	s.test(t, "HandOffReceiptDeletes", func(e *env) {
		url := e.create("q", nil)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		e.send(url, "m")
		got := e.awaitWoken(ch, "a send")
		if len(got) != 1 {
			e.t.Fatalf("the long poll got %d messages, want 1", len(got))
		}
		e.del(url, got[0].ReceiptHandle)
		e.wantCounts(url, 0, 0, 0)
	})

	// Two polls of one message each and a batch of two: one message goes
	// with the send, a wake-up brings the other poll the other one.
	s.test(t, "HandOffWakesAnotherPollForTheRest", func(e *env) {
		url := e.create("q", nil)
		chans := []<-chan pollResult{
			e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)}),
			e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)}),
		}
		time.Sleep(settle)
		before := e.hub.Stats().Woken
		_, err := e.svc.SendMessageBatch(e.op(), &contract.SendMessageBatchInput{QueueUrl: url, Entries: sendEntries(2)})
		wantOK(e.t, err, "SendMessageBatch")
		woken := e.hub.Stats().Woken - before
		var got []contract.Message
		for i, ch := range chans {
			got = append(got, e.awaitWoken(ch, "a batch of two (poll "+strconv.Itoa(i)+")")...)
		}
		wantBodySet(e.t, got, "messageBody-0", "messageBody-1")
		wantWoken(e, woken, 2, 2)
	})

	// A send into a FIFO group whose head is in flight has nothing
	// receivable to hand off: the poll waits on, and the head's delete
	// brings it the message.
	s.test(t, "HandOffWaitsForTheFIFOGroup", func(e *env) {
		url := e.createFIFO("f.fifo", map[string]string{"ContentBasedDeduplication": "true", "VisibilityTimeout": "60"})
		e.sendFIFO(url, "message-1", "1", "")
		head := e.recvOne(url)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		e.sendFIFO(url, "message-2", "1", "")
		time.Sleep(settle)
		e.stillWaiting(ch)
		e.del(url, head.ReceiptHandle)
		wantBodies(e.t, e.awaitWoken(ch, "the group's release"), "message-2")
	})

	// A delayed message is not receivable yet: no poll takes it with the
	// send.
	s.test(t, "HandOffLeavesDelayedMessages", func(e *env) {
		url := e.create("q", nil)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(1)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("later"), DelaySeconds: i64(5)})
		if got := e.await(ch, hang); len(got) != 0 {
			e.t.Errorf("a long poll received %q while it was delayed", bodies(got))
		}
		e.clock.Advance(6 * time.Second)
		m := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, AttributeNames: []string{"ApproximateReceiveCount"}})
		wantBodies(e.t, m, "later")
		if len(m) == 1 && m[0].Attributes["ApproximateReceiveCount"] != "1" {
			e.t.Errorf("ApproximateReceiveCount = %q, want 1", m[0].Attributes["ApproximateReceiveCount"])
		}
	})

	s.test(t, "QueueDefaultWait", func(e *env) {
		// validated test_wait_time_seconds_queue_attribute_waits_correctly:
		// without WaitTimeSeconds the queue's ReceiveMessageWaitTimeSeconds applies.
		url := e.create("q", map[string]string{"ReceiveMessageWaitTimeSeconds": "20"})
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url})
		time.Sleep(settle)
		e.stillWaiting(ch) // a short poll would have returned by now
		e.send(url, "foobared")
		wantBodies(e.t, e.awaitWoken(ch, "a send"), "foobared")
		// An explicit WaitTimeSeconds 0 overrides it (snapshot
		// test_send_receive_wait_time_seconds: explicit short poll).
		ch = e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(0)})
		if got := e.await(ch, hang); len(got) != 0 {
			e.t.Errorf("short poll returned %q", bodies(got))
		}
	})

	s.test(t, "ShutdownEndsWait", func(e *env) {
		url := e.create("q", nil)
		ch := e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)})
		time.Sleep(settle)
		e.stillWaiting(ch)
		e.svc.Shutdown()
		select {
		case r := <-ch:
			if r.err != nil {
				e.t.Errorf("long poll ended by Shutdown returned error %v, want an empty result", r.err)
			} else if len(r.out.Messages) != 0 {
				e.t.Errorf("long poll ended by Shutdown returned %q", bodies(r.out.Messages))
			}
		case <-time.After(10 * time.Second):
			e.t.Fatal("a waiting long poll did not return within 10 s of Shutdown")
		}
		// The message sent now was not taken by the ended poll.
		e.send(url, "after")
		e.wantCounts(url, 1, 0, 0)
	})

	s.test(t, "OneMessageOneWaiter", func(e *env) {
		url := e.create("q", nil)
		var chans []<-chan pollResult
		for range 4 {
			chans = append(chans, e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(2)}))
		}
		time.Sleep(settle)
		e.send(url, "only")
		got := 0
		for _, ch := range chans {
			got += len(e.await(ch, hang))
		}
		if got != 1 {
			e.t.Errorf("4 waiting polls received %d copies of one message, want 1", got)
		}
	})

	// Each of n waiting polls (of one message each) receives one of n
	// messages sent while they wait, long before their wait ends: a
	// wake-up is not lost to a poll that stopped without acting on it,
	// nor to one whose claim lost its candidates to the others.
	s.test(t, "ManyWaitersManyMessages", func(e *env) {
		url := e.create("q", nil)
		const n = 8
		var chans []<-chan pollResult
		for range n {
			chans = append(chans, e.startReceive(e.svc, &contract.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: i64(20)}))
		}
		time.Sleep(settle)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.svc.SendMessage(e.op(), &contract.SendMessageInput{QueueUrl: url, MessageBody: str("m" + strconv.Itoa(i))}); err != nil {
					e.t.Errorf("send m%d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		seen := map[string]bool{}
		for i, ch := range chans {
			for _, m := range e.awaitWoken(ch, "sends while "+strconv.Itoa(n)+" polls wait (poll "+strconv.Itoa(i)+")") {
				if seen[m.Body] {
					e.t.Errorf("%s delivered to two waiting polls", m.Body)
				}
				seen[m.Body] = true
			}
		}
		if len(seen) != n {
			e.t.Errorf("%d waiting polls received %d distinct messages of %d (counts now %+v)", n, len(seen), n, e.counts(url))
		}
	})
}

// wantWoken checks how many of polls waiting polls a send of n receivable
// messages woke: on a store that hands off (stores.Traits.HandOffs) one
// poll gets a message with the send and the others are woken for the
// rest, one each; elsewhere each message wakes a poll, and a woken poll
// whose claim lost to another's may pass its wake-up on.
func wantWoken(e *env, woken uint64, n, polls int) {
	e.t.Helper()
	if e.store.Traits().HandOffs {
		if want := uint64(min(n-1, polls-1)); woken != want {
			e.t.Errorf("a send of %d messages to %d waiting polls woke %d, want %d: one got its message with the send", n, polls, woken, want)
		}
		return
	}
	if want := uint64(min(n, polls)); woken < want {
		e.t.Errorf("a send of %d messages to %d waiting polls woke %d, want at least %d", n, polls, woken, want)
	}
}
