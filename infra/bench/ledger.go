package bench

import (
	"errors"
	"strconv"
	"strings"
	"sync"
)

// ledger tracks every message the producers sent: when its send was
// acknowledged and how often it was received. Producer p owns the entries
// numbered 0, 1, 2, ... of book p; consumers look them up by the producer
// and number written in the body.
type ledger struct {
	books []book
}

type book struct {
	mu   sync.Mutex
	ack  []int64 // nanoseconds since the run's base when acknowledged; 0 not yet; ackFailed
	recv []uint32
}

const ackFailed = -1

func newLedger(producers int) *ledger { return &ledger{books: make([]book, producers)} }

// reserve adds n entries to book p and returns the number of the first.
func (l *ledger) reserve(p, n int) int64 {
	b := &l.books[p]
	b.mu.Lock()
	first := int64(len(b.ack))
	for range n {
		b.ack = append(b.ack, 0)
		b.recv = append(b.recv, 0)
	}
	b.mu.Unlock()
	return first
}

// acked records the outcome of the send of entry seq of book p: at (ns
// since base, > 0) or ackFailed.
func (l *ledger) acked(p int, seq int64, at int64) {
	b := &l.books[p]
	b.mu.Lock()
	b.ack[seq] = at
	b.mu.Unlock()
}

// received counts one receipt of entry seq of book p and returns its ack
// time (0 when the send is not acknowledged yet) and how often it has been
// received now. ok is false for an entry that does not exist.
func (l *ledger) received(p int, seq int64) (ack int64, times uint32, ok bool) {
	if p < 0 || p >= len(l.books) {
		return 0, 0, false
	}
	b := &l.books[p]
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq < 0 || seq >= int64(len(b.ack)) {
		return 0, 0, false
	}
	b.recv[seq]++
	return b.ack[seq], b.recv[seq], true
}

// tally counts, over every entry: sends acknowledged, those received at
// least once, those never received, extra receipts (duplicates), and
// receipts of messages whose send failed.
type tally struct {
	acked, received, missing, duplicates, failedButReceived int64
}

func (l *ledger) tally() tally {
	var t tally
	for i := range l.books {
		b := &l.books[i]
		b.mu.Lock()
		for j, a := range b.ack {
			r := b.recv[j]
			switch {
			case a > 0:
				t.acked++
				if r > 0 {
					t.received++
				} else {
					t.missing++
				}
			case r > 0:
				t.failedButReceived++
			}
			if r > 1 {
				t.duplicates += int64(r - 1)
			}
		}
		b.mu.Unlock()
	}
	return t
}

// orderBook checks FIFO order: within a message group, the messages of one
// producer must be received in the order it sent them. Producers send
// sequentially, so "sent before" is well defined per (group, producer); a
// repeat of the last one is a redelivery, anything lower is a violation.
type orderBook struct {
	mu         sync.Mutex
	last       map[orderKey]int64
	violations int64
	examples   []string
}

type orderKey struct{ group, producer int }

func newOrderBook() *orderBook { return &orderBook{last: map[orderKey]int64{}} }

// see records that the message numbered gseq of (group, producer) was just
// received (before it is deleted, so that the next receipt in the group
// happens after this call).
func (o *orderBook) see(group, producer int, gseq int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := orderKey{group, producer}
	last, ok := o.last[k]
	if !ok {
		last = -1
	}
	if gseq < last {
		o.violations++
		if len(o.examples) < 5 {
			o.examples = append(o.examples, "group g"+strconv.Itoa(group)+" producer "+strconv.Itoa(producer)+
				": received #"+strconv.FormatInt(gseq, 10)+" after #"+strconv.FormatInt(last, 10))
		}
		return
	}
	o.last[k] = gseq
}

// A body is "sb1|producer|seq|group|gseq|sendStartNs|" padded with 'x' to
// the configured size. sendStartNs is nanoseconds since the run's base
// (monotonic clock) when the send request was started.
type bodyHeader struct {
	producer int
	seq      int64
	group    int
	gseq     int64
	start    int64
}

const bodyMagic = "sb1|"

func (h bodyHeader) encode(size int) string {
	var sb strings.Builder
	sb.Grow(max(size, 64))
	sb.WriteString(bodyMagic)
	sb.WriteString(strconv.Itoa(h.producer))
	sb.WriteByte('|')
	sb.WriteString(strconv.FormatInt(h.seq, 10))
	sb.WriteByte('|')
	sb.WriteString(strconv.Itoa(h.group))
	sb.WriteByte('|')
	sb.WriteString(strconv.FormatInt(h.gseq, 10))
	sb.WriteByte('|')
	sb.WriteString(strconv.FormatInt(h.start, 10))
	sb.WriteByte('|')
	for sb.Len() < size {
		sb.WriteByte('x')
	}
	return sb.String()
}

var errBadBody = errors.New("not a bench message body")

func parseBody(s string) (bodyHeader, error) {
	rest, ok := strings.CutPrefix(s, bodyMagic)
	if !ok {
		return bodyHeader{}, errBadBody
	}
	var f [5]int64
	for i := range f {
		var field string
		field, rest, ok = strings.Cut(rest, "|")
		if !ok {
			return bodyHeader{}, errBadBody
		}
		v, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return bodyHeader{}, errBadBody
		}
		f[i] = v
	}
	return bodyHeader{producer: int(f[0]), seq: f[1], group: int(f[2]), gseq: f[3], start: f[4]}, nil
}

// freedBook records, for each FIFO group, its latest message whose delete
// was acknowledged, and when. A FIFO group's next message can be received
// only once the one before it is deleted (or its visibility ends), so it
// became receivable at the later of its send's acknowledgement and that
// delete's: the pickup from there is the wait that a receive's wake-up
// path decides, without the consumer's own turn around the group. It is
// kept only while each group has one producer, whose numbers within the
// group (gseq) are then the group's order. The delete's acknowledgement
// comes after the store committed it, so the figure errs low by the
// delete answer's way back to the consumer.
type freedBook struct {
	mu  sync.Mutex
	seq []int64 // gseq of each group's latest deleted message; -1 none
	at  []int64 // ns since the run's base when that delete was acknowledged
}

func newFreedBook(groups int) *freedBook {
	b := &freedBook{seq: make([]int64, groups), at: make([]int64, groups)}
	for i := range b.seq {
		b.seq[i] = -1
	}
	return b
}

// freed records that the delete of message gseq of group was acknowledged
// at at.
func (b *freedBook) freed(group int, gseq, at int64) {
	if group < 0 || group >= len(b.seq) {
		return
	}
	b.mu.Lock()
	if gseq > b.seq[group] {
		b.seq[group], b.at[group] = gseq, at
	}
	b.mu.Unlock()
}

// receivable is when message gseq of group, acknowledged at ack, became
// receivable: the acknowledgement of its predecessor's delete when that
// came later, else ack. A predecessor whose delete is not recorded yet
// (received in the same receive, or its acknowledgement still on its way)
// counts as freed before ack, which errs high.
func (b *freedBook) receivable(group int, gseq, ack int64) int64 {
	if group < 0 || group >= len(b.seq) {
		return ack
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seq[group] == gseq-1 {
		return max(ack, b.at[group])
	}
	return ack
}
