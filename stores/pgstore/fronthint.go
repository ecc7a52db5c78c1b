package pgstore

import (
	"sync"
	"time"
)

// A Standard claim walks the queue's messages_seq index from the oldest
// message and takes the first visible ones: it passes every message in
// flight or delayed before them, reading each one's row (their visibility
// is in no index, so that claims stay HOT updates). With many in flight at
// the front (long visibility timeouts, a burst of delayed sends) every
// receive would pass all of them: about 1.6 µs each, 160 ms a receive
// beside 100,000. A claim that gets nothing would read them twice: once to
// claim, once for NextChange.
//
// So when a claim passed frontHintFrom messages or more (or, getting
// nothing, read that many), this instance's next Standard claims of the
// queue start after them: the front hint. The hint remembers when the
// first message it covers that was in flight or delayed becomes visible,
// ends then, and answers NextChange for what it covers. It also ends after
// hintFor, since a message it covers may become receivable in ways this
// instance does not see: another instance makes it visible, a send that
// took its number earlier commits later, a claim that held it rolls back,
// or a claim running beside the one that passed it (which passed it as
// held, not knowing its deadline) lets its visibility timeout end. Such a
// message waits for the hint to end; a visibility change through this
// instance drops the hint at once. Below frontHintFrom a claim walks from
// the front, so small queues are served exactly as before.
//
// When a hint ends, one claim walks from the front again to renew it; the
// instance's other claims of the queue keep the ended hint meanwhile (for
// up to renewalFor), so that a hint's end costs one walk, not one per
// concurrent receive.
const (
	frontHintFrom       = 1000
	frontHintMin        = time.Second
	frontHintMax        = 5 * time.Second
	frontHintPerMessage = 20 * time.Microsecond
	renewalFor          = time.Second
)

// hintFor is how long a hint made by a walk that passed n messages lasts at
// most: a walk costs about 3 µs per message, so renewals take a few
// percent of a CPU, whatever the front's size.
func hintFor(n int) time.Duration {
	return min(max(time.Duration(n)*frontHintPerMessage, frontHintMin), frontHintMax)
}

type frontHint struct {
	seq      int64     // claims start after this seq
	until    time.Time // host clock: the hint's end, never after next
	next     time.Time // host clock: when the first message it covers that was in flight or delayed becomes visible (zero: none)
	renewing time.Time // host clock: when a claim began walking from the front to renew the ended hint (zero: none)
}

// A walk is what a Standard claim that started after seq from saw: it
// passed passed messages (in flight, delayed, or held by other claims)
// before seq first, and the earliest of them in flight or delayed becomes
// visible at next (host clock; zero: none). A claim that got nothing passed
// every message it read; first is one after the last of them.
type walk struct {
	from   int64
	passed int
	first  int64
	next   time.Time
}

// frontHints are the hints by queue incarnation.
type frontHints struct {
	mu      sync.Mutex
	byQueue map[string]frontHint
}

// from is the seq after which a claim of the queue starts now: the hint's,
// or 0 (the front). The first claim after a hint ended renews it; while it
// does, the others start after the ended hint.
func (h *frontHints) from(id string, now time.Time) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.byQueue[id]
	switch {
	case !ok:
		return 0
	case now.Before(f.until):
		return f.seq
	case !f.renewing.IsZero() && now.Before(f.renewing.Add(renewalFor)):
		return f.seq
	}
	f.renewing = now
	h.byQueue[id] = f
	return 0
}

// found records what a claim walked past. A claim that started at the
// front, or within the live hint, moves the hint up to what it passed;
// one from the front that passed frontHintFrom or more, with no live hint,
// starts a hint, and one that passed fewer forgets an ended hint. A claim
// that started after an ended hint (while another renews it) changes
// nothing: what the ended hint covered may have become visible.
func (h *frontHints) found(id string, now time.Time, w walk) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.byQueue[id]
	live := ok && now.Before(f.until)
	switch {
	case live && w.from <= f.seq:
		f.seq = max(f.seq, w.first-1)
		f.next = earliest(f.next, w.next)
		f.until = earliest(f.until, w.next)
	case w.from == 0 && w.passed >= frontHintFrom:
		f = frontHint{seq: w.first - 1, next: w.next, until: earliest(now.Add(hintFor(w.passed)), w.next)}
	case w.from == 0 && ok && !live:
		delete(h.byQueue, id)
		return
	default:
		return
	}
	if h.byQueue == nil || (!ok && int64(len(h.byQueue)) >= perIncarnationLimit) {
		// Hints of incarnations deleted elsewhere would stay: start over
		// (a lost hint costs a claim from the front).
		h.byQueue = map[string]frontHint{}
	}
	h.byQueue[id] = f
}

// nextChange is a claim's NextChange (host clock) from next, the earliest
// visibility change among the messages after from it read: the hint
// answers for the messages up to from. A claim that started after an ended
// hint cannot know: it says now, so that a long poll looks again soon.
func (h *frontHints) nextChange(id string, now time.Time, from int64, next time.Time) time.Time {
	if from == 0 {
		return next
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.byQueue[id]
	if !ok || !now.Before(f.until) || from > f.seq {
		return now
	}
	return earliest(next, f.next)
}

// claimedRows is found for a Standard claim that got rows (sorted, each
// carrying the count of messages the walk passed as its ord1, and its
// front_next, on the clock that read dbNow when the host's read hostNow);
// a claim that got nothing changes no hint here (see nothingClaimed).
func (h *frontHints) claimedRows(id string, hostNow, dbNow time.Time, from int64, rows []claimRow) {
	if len(rows) == 0 {
		return
	}
	r := rows[0]
	h.found(id, hostNow, walk{from: from, passed: int(r.ord1), first: int64(r.ord2),
		next: onClock(deref(r.frontNext), dbNow, hostNow)})
}

// stdEmpty is what sluice_standard_next_from answered a Standard claim that
// got nothing and started after seq from: it read count messages, the last
// numbered last; the earliest in flight or delayed becomes visible at next
// (database clock); receivable, one was (the claim lost it to others, or
// it came later).
type stdEmpty struct {
	from        int64
	count, last int64
	next        time.Time
	receivable  bool
}

// nothingClaimed records a Standard claim that got nothing, which passed
// every message it read (unless one was receivable), and returns its
// NextChange on the database's clock (which read dbNow when the host's
// read hostNow).
func (h *frontHints) nothingClaimed(id string, hostNow, dbNow time.Time, e stdEmpty) time.Time {
	next := onClock(e.next, dbNow, hostNow)
	if !e.receivable {
		h.found(id, hostNow, walk{from: e.from, passed: int(e.count), first: e.last + 1, next: next})
	}
	return onClock(h.nextChange(id, hostNow, e.from, next), hostNow, dbNow)
}

// drop forgets the queue's hint: a message behind it may be receivable.
func (h *frontHints) drop(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byQueue, id)
}

// earliest is the earlier of two times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// onClock carries t from the clock that read ref at the same moment as
// now to now's clock; zero stays zero. The claim statements give times on
// the database's clock, the hints keep the host's.
func onClock(t, ref, now time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return now.Add(t.Sub(ref))
}

// deref is *t, or zero for nil.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
