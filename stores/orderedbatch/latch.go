package orderedbatch

import (
	"hash/fnv"
	"slices"
	"sync"
)

// latches serialize, within one process, the transactions that update the
// same FIFO group. Two transactions that both read a group record and then
// write it deadlock under pessimistic locks (each holds the record shared
// and waits for the other to let go) until the backend aborts one (Firestore
// by wound-wait, its emulator only by a 2 s lock timeout), and they
// conflict at commit under optimistic ones; either way one attempt is
// wasted and its reads are billed. Waiting here first costs neither.
// Claims only try the latch of a candidate group and pass over one another
// holds, so concurrent receivers spread over the groups. Across processes
// the backend's concurrency control still decides, as it must.
type latches struct {
	stripes [latchStripes]sync.Mutex
}

const latchStripes = 256

func latchOf(groupKeyID string) int {
	h := fnv.New32a()
	h.Write([]byte(groupKeyID))
	return int(h.Sum32() % latchStripes)
}

// held is a set of stripes one call holds, released together.
type held struct {
	l      *latches
	idxs   []int
	waited bool // try got none at once and waited for one
}

// lock takes the stripes of the group keys, in stripe order (so that two
// calls never wait for each other in a cycle).
func (l *latches) lock(groupKeyIDs []string) *held {
	h := &held{l: l}
	for _, k := range groupKeyIDs {
		h.idxs = append(h.idxs, latchOf(k))
	}
	slices.Sort(h.idxs)
	h.idxs = slices.Compact(h.idxs)
	for _, i := range h.idxs {
		l.stripes[i].Lock()
	}
	return h
}

// try takes the stripes it can of the group keys without waiting and
// returns the keys whose stripe it holds; when it gets none it waits for
// the first key's stripe, so that a claim always makes progress.
func (l *latches) try(groupKeyIDs []string) (*held, []string) {
	h := &held{l: l}
	mine := map[int]bool{}
	var got []string
	for _, k := range groupKeyIDs {
		i := latchOf(k)
		if !mine[i] {
			if !l.stripes[i].TryLock() {
				continue
			}
			mine[i] = true
			h.idxs = append(h.idxs, i)
		}
		got = append(got, k)
	}
	if len(got) == 0 && len(groupKeyIDs) > 0 {
		i := latchOf(groupKeyIDs[0])
		l.stripes[i].Lock()
		h.waited = true
		h.idxs = append(h.idxs, i)
		for _, k := range groupKeyIDs {
			if latchOf(k) == i {
				got = append(got, k)
			}
		}
	}
	return h, got
}

func (h *held) unlock() {
	for _, i := range h.idxs {
		h.l.stripes[i].Unlock()
	}
	h.idxs = nil
}
