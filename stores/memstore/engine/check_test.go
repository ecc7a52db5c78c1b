package engine

import (
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/stores/rules"
)

// recorder is a Committer that applies change lists to a map of records,
// the way a durable store would.
type recorder struct {
	mu   sync.Mutex
	recs map[string]Record
	n    int // change lists received
}

func newRecorder() *recorder { return &recorder{recs: map[string]Record{}} }

func recKey(k Kind, key []byte) string { return string(rune(k)) + string(key) }

func (r *recorder) Submit(changes []Change) func() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	for _, c := range changes {
		if c.Record == nil {
			delete(r.recs, recKey(c.Kind, c.Key))
		} else {
			if !reflect.DeepEqual(c.Key, c.Record.Key()) || c.Kind != c.Record.Kind() {
				panic("change key does not match record")
			}
			r.recs[recKey(c.Kind, c.Key)] = c.Record
		}
	}
	return nil
}

func (r *recorder) records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.recs))
	for k := range r.recs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Record, len(keys))
	for i, k := range keys {
		out[i] = r.recs[k]
	}
	return out
}

// view is merged, as a list in key order: what the records say each
// message is now.
func (r *recorder) view(t testing.TB) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.merged(t)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Record, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// dump lists the engine's state as records.
func dump(e *Engine) map[string]Record {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]Record{}
	add := func(r Record) { out[recKey(r.Kind(), r.Key())] = r }
	for _, q := range e.queues {
		add(q.rec)
		if q.next != rules.FirstSequence {
			add(&CounterRecord{Queue: q.name, Next: q.next})
		}
		for _, m := range q.msgs {
			r := m.rec
			add(&r)
		}
		for _, d := range q.dedup {
			add(d.rec)
		}
		for _, a := range q.attempts {
			add(a.rec)
		}
	}
	for _, t := range e.tasks {
		add(t)
	}
	for _, t := range e.tombs {
		add(t)
	}
	return out
}

// merged is the recorded records as the engine holds them: each message's
// DeliveryRecord folded into its MessageRecord.
func (r *recorder) merged(t testing.TB) map[string]Record {
	t.Helper()
	out := map[string]Record{}
	for k, v := range r.recs {
		if v.Kind() != KindDelivery {
			out[k] = v
		}
	}
	for _, v := range r.recs {
		d, ok := v.(*DeliveryRecord)
		if !ok {
			continue
		}
		k := recKey(KindMessage, d.Key())
		m, ok := out[k].(*MessageRecord)
		if !ok {
			t.Fatalf("recorded delivery state %+v of no message", d)
		}
		c := *m
		c.setDelivery(d)
		out[k] = &c
	}
	return out
}

// sameState fails unless the recorded records are exactly the engine's state.
func sameState(t testing.TB, e *Engine, r *recorder) {
	t.Helper()
	got := dump(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := r.merged(t)
	for k, v := range got {
		w, ok := recs[k]
		if !ok {
			t.Fatalf("engine has %T %s, not recorded", v, k)
		}
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("engine has %+v, recorded %+v", v, w)
		}
	}
	for k, v := range recs {
		if _, ok := got[k]; !ok {
			t.Fatalf("recorded %T %+v, not in engine", v, v)
		}
	}
}

// checkInvariants verifies every index against the messages.
func checkInvariants(t testing.TB, e *Engine) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.IsSorted(e.names) || len(e.names) != len(e.queues) {
		t.Fatalf("names index broken: %v", e.names)
	}
	for _, n := range e.names {
		if e.queues[n] == nil {
			t.Fatalf("name %q without queue", n)
		}
	}
	for name, q := range e.queues {
		fail := func(f string, a ...any) { t.Helper(); t.Fatalf("queue %s: "+f, append([]any{name}, a...)...) }
		var nv, nr, nn int64
		if q.ret.Len() != len(q.msgs) {
			fail("ret heap has %d of %d", q.ret.Len(), len(q.msgs))
		}
		for id, m := range q.msgs {
			if m.rec.Message.ID != id || m.rec.Queue != name {
				fail("message %s misfiled", id)
			}
			if !m.placed {
				fail("message %s not placed", id)
			}
			if m.rec.Seq >= q.next {
				fail("message %s seq %d >= next %d", id, m.rec.Seq, q.next)
			}
			vis := !m.rec.VisibleAt.After(q.now)
			if vis != m.inV {
				fail("message %s inV=%v but visible=%v", id, m.inV, vis)
			}
			if m.inV {
				nv++
				if !q.vSeq.Contains(m) || !q.vLate.Contains(m) || q.pend.Contains(m) {
					fail("message %s heaps wrong (V)", id)
				}
			} else {
				if q.vSeq.Contains(m) || q.vLate.Contains(m) || !q.pend.Contains(m) {
					fail("message %s heaps wrong (P)", id)
				}
				if m.rec.Message.ReceiveCount > 0 {
					nr++
				} else {
					nn++
				}
			}
			if !q.ret.Contains(m) {
				fail("message %s not in ret", id)
			}
			if q.fifo != (m.g != nil) {
				fail("message %s group link wrong", id)
			}
		}
		if int64(q.vSeq.Len()) != nv || int64(q.vLate.Len()) != nv || q.pendRecv != nr || q.pendNew != nn || int64(q.pend.Len()) != nr+nn {
			fail("counts: vSeq %d vLate %d pend %d recv %d new %d; want v %d recv %d new %d",
				q.vSeq.Len(), q.vLate.Len(), q.pend.Len(), q.pendRecv, q.pendNew, nv, nr, nn)
		}
		seen := 0
		for gid, g := range q.groups {
			if g.busy {
				fail("group %s left busy", gid)
			}
			var prev *msg
			for m := g.head; m != nil; m = m.next {
				seen++
				if m.g != g || m.prev != prev || m.rec.Message.GroupID != gid {
					fail("group %s links broken", gid)
				}
				if prev != nil && prev.rec.Seq >= m.rec.Seq {
					fail("group %s out of order", gid)
				}
				prev = m
			}
			if g.tail != prev || g.head == nil {
				fail("group %s tail/empty", gid)
			}
			if g.ready() != q.ready.Contains(g) {
				fail("group %s ready=%v in heap=%v", gid, g.ready(), q.ready.Contains(g))
			}
		}
		if q.fifo && seen != len(q.msgs) {
			fail("groups hold %d of %d messages", seen, len(q.msgs))
		}
		if q.dedupExp.Len() != len(q.dedup) || q.attExp.Len() != len(q.attempts) {
			fail("expiry heaps out of step")
		}
	}
}
