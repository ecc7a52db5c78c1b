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
// beside 100,000.
//
// So when a claim passed frontHintFrom messages or more before its first
// candidate, this instance's next Standard claims of the queue start after
// them, for frontHintFor: the front hint. A message behind the hint that
// becomes receivable meanwhile (its visibility timeout ends, another
// instance makes it visible, a send that took its number earlier commits
// later, a claim that held it rolls back) waits for the hint to run out;
// a visibility change through this instance drops the hint at once. Below
// frontHintFrom a claim walks from the front, so small queues are served
// exactly as before.
const (
	frontHintFrom = 1000
	frontHintFor  = time.Second
)

type frontHint struct {
	seq   int64     // claims start after this seq
	until time.Time // host clock
}

// frontHints are the hints by queue incarnation.
type frontHints struct {
	mu      sync.Mutex
	byQueue map[string]frontHint
}

// from is the seq after which a claim of the queue starts now: the
// hint's, or 0 (the front).
func (h *frontHints) from(id string, now time.Time) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.byQueue[id]
	if !ok {
		return 0
	}
	if !now.Before(f.until) {
		delete(h.byQueue, id)
		return 0
	}
	return f.seq
}

// claimed records what a claim that started after seq from found: passed
// messages before its first candidate, whose seq was first. A live hint
// moves up to the candidate (the messages between were in flight or held
// by other claims), keeping its end; otherwise a walk that passed
// frontHintFrom or more starts a hint.
func (h *frontHints) claimed(id string, now time.Time, passed int, first int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, live := h.byQueue[id]
	live = live && now.Before(f.until)
	switch {
	case live:
		f.seq = max(f.seq, first-1)
	case passed >= frontHintFrom:
		f = frontHint{seq: first - 1, until: now.Add(frontHintFor)}
	default:
		return
	}
	if h.byQueue == nil {
		h.byQueue = map[string]frontHint{}
	}
	h.byQueue[id] = f
}

// claimedRows is claimed for a Standard claim's rows (sorted, each
// carrying the count of messages the walk passed as its ord1); a claim
// that got nothing changes no hint.
func (h *frontHints) claimedRows(id string, rows []claimRow) {
	if len(rows) > 0 {
		h.claimed(id, time.Now(), int(rows[0].ord1), int64(rows[0].ord2))
	}
}

// drop forgets the queue's hint: a message behind it may be receivable.
func (h *frontHints) drop(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byQueue, id)
}
