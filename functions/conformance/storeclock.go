package conformance

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
)

// The store-clock area runs a few cases as production does: the service
// passes no clock, so the store reads its own (PostgreSQL's now(), say),
// which the rest of the suite never exercises. They need no time travel;
// the waits are a second or two of real time, and every duration below is
// a hang guard or a lower bound that holds however slow the machine is.
func testStoreClock(t *testing.T, s suite) {
	test := func(name string, f func(e *env)) {
		t.Run(name, func(t *testing.T) {
			s.parallel(t)
			f(newEnvClock(t, s.h, true))
		})
	}

	// skew bounds how far a store's clock may be from this process's (a
	// database server on another host): a correctness bound against
	// timestamps in the wrong unit or zone, not a speed expectation.
	const skew = 30 * time.Second
	near := func(e *env, what, ms string, from, to time.Time) {
		e.t.Helper()
		v, err := strconv.ParseInt(ms, 10, 64)
		at := time.UnixMilli(v)
		if err != nil || at.Before(from.Add(-skew)) || at.After(to.Add(skew)) {
			e.t.Errorf("%s = %q (%v), want the wall clock between %v and %v (±%v)", what, ms, at, from, to, skew)
		}
	}

	test("SendReceiveDelete", func(e *env) {
		before := time.Now()
		url := e.create("q", nil)
		created := e.attrs(url, "CreatedTimestamp")["CreatedTimestamp"]
		out := e.send(url, "hello")
		ms := e.recvAll(url, 10)
		after := time.Now()
		if len(ms) != 1 || ms[0].Body != "hello" || ms[0].MessageId != out.MessageId {
			e.t.Fatalf("received %q, want the one message sent", bodies(ms))
		}
		near(e, "CreatedTimestamp (s)", created+"000", before.Truncate(time.Second), after)
		near(e, "SentTimestamp", ms[0].Attributes["SentTimestamp"], before, after)
		near(e, "ApproximateFirstReceiveTimestamp", ms[0].Attributes["ApproximateFirstReceiveTimestamp"], before, after)
		if ms[0].Attributes["SentTimestamp"] > ms[0].Attributes["ApproximateFirstReceiveTimestamp"] {
			e.t.Errorf("first received at %s before it was sent at %s", ms[0].Attributes["ApproximateFirstReceiveTimestamp"], ms[0].Attributes["SentTimestamp"])
		}
		e.wantCounts(url, 0, 1, 0)
		e.del(url, ms[0].ReceiptHandle)
		e.wantCounts(url, 0, 0, 0)
		e.wantEmpty(url)
	})

	test("VisibilityTimeoutEnds", func(e *env) {
		url := e.create("q", nil)
		e.send(url, "m")
		start := wallNow()
		first := e.recvVT(url, 1, 2)
		if len(first) != 1 {
			e.t.Fatalf("received %d messages, want 1", len(first))
		}
		if again := e.recv(url, 1); wallSince(start) < time.Second && len(again) != 0 {
			e.t.Errorf("received %q again within a second of a 2 s visibility timeout", bodies(again))
		}
		m := e.pollFor(url, 20*time.Second)
		if elapsed := wallSince(start); elapsed < 2*time.Second {
			e.t.Errorf("received again after %v, before its 2 s visibility timeout ended", elapsed)
		}
		if m.Attributes["ApproximateReceiveCount"] != "2" || m.MessageId != first[0].MessageId {
			e.t.Errorf("second delivery: %s with ApproximateReceiveCount %q, want %s with 2", m.MessageId, m.Attributes["ApproximateReceiveCount"], first[0].MessageId)
		}
		e.del(url, m.ReceiptHandle)
		e.wantCounts(url, 0, 0, 0)
	})

	test("DelayEnds", func(e *env) {
		url := e.create("q", nil)
		start := wallNow()
		e.sendIn(&contract.SendMessageInput{QueueUrl: url, MessageBody: str("later"), DelaySeconds: i64(1)})
		c := e.counts(url)
		if wallSince(start) < 900*time.Millisecond && c != (counts{"0", "0", "1"}) {
			e.t.Errorf("counts just after a send with a 1 s delay = %v, want it delayed", c)
		}
		m := e.pollFor(url, 20*time.Second)
		if elapsed := wallSince(start); elapsed < time.Second {
			e.t.Errorf("received after %v, before its 1 s delay ended", elapsed)
		}
		sent, _ := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
		first, _ := strconv.ParseInt(m.Attributes["ApproximateFirstReceiveTimestamp"], 10, 64)
		if first-sent < 1000 {
			e.t.Errorf("first received %d ms after it was sent, before its 1 s delay ended (by the store's clock)", first-sent)
		}
	})

	test("FIFOOrderAndDedup", func(e *env) {
		url := e.createFIFO("f.fifo", nil)
		var ids []string
		for i := range 5 {
			for _, g := range []string{"a", "b"} {
				ids = append(ids, e.sendFIFO(url, g+strconv.Itoa(i), g, g+strconv.Itoa(i)).MessageId)
			}
		}
		// Within the window a repeat is not stored and echoes the original.
		if dup := e.sendFIFO(url, "other body", "a", "a0"); dup.MessageId != ids[0] {
			e.t.Errorf("duplicate send got MessageId %s, want the original %s", dup.MessageId, ids[0])
		}
		e.wantCounts(url, 10, 0, 0)
		next := map[string]int{}
		prev := map[string]string{}
		for range 10 {
			ms := e.recvAll(url, 10)
			if len(ms) == 0 {
				break
			}
			for _, m := range ms {
				g := m.Attributes["MessageGroupId"]
				if want := g + strconv.Itoa(next[g]); m.Body != want {
					e.t.Errorf("group %s: got %s, want %s", g, m.Body, want)
				}
				next[g]++
				if seq := m.Attributes["SequenceNumber"]; prev[g] != "" && !seqLess(prev[g], seq) {
					e.t.Errorf("group %s: SequenceNumber %s after %s", g, seq, prev[g])
				}
				prev[g] = m.Attributes["SequenceNumber"]
				e.del(url, m.ReceiptHandle)
			}
		}
		if next["a"] != 5 || next["b"] != 5 {
			e.t.Errorf("received %v per group, want 5 each", next)
		}
	})
}

// wallNow and wallSince measure on the wall clock, which the stores'
// timers run on (a stored instant must mean the same after a restart), not
// on this process's monotonic clock: when the host's clock is stepped
// forward (a virtual machine catching up after a pause), a timeout ends
// that much sooner by the monotonic clock, and as late as it should by the
// wall clock.
func wallNow() time.Time { return time.Now().Round(0) }

func wallSince(t time.Time) time.Duration { return wallNow().Sub(t) }

// pollFor long-polls url until a message arrives (limit is a hang guard)
// and returns it with every system attribute.
func (e *env) pollFor(url string, limit time.Duration) contract.Message {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ms := e.receive(&contract.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: i64(1), WaitTimeSeconds: i64(1),
			MessageSystemAttributeNames: []string{"All"}})
		if len(ms) == 1 {
			return ms[0]
		}
	}
	e.t.Fatalf("no message within %v", limit)
	return contract.Message{}
}
