package service

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// This file is what operators see of the service: the switches for local
// development, long-poll reports and queue depths for metrics, request ids
// for logs. None of it changes what a client sees, except NoCooldowns.

// cooldown is the SQS rule's window, or none when the service runs without
// cooldowns.
func (s *Service) cooldown(d time.Duration) time.Duration {
	if s.cfg.NoCooldowns {
		return 0
	}
	return d
}

type requestIDKey struct{}

// WithRequestID records the request id the entry point answers with, so
// that the service's own error logs name it.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id WithRequestID recorded, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// How a long poll ended.
const (
	LongPollAnswered  = "answered"  // with messages, or empty when its wait was over
	LongPollCancelled = "cancelled" // the client went away
	LongPollShutdown  = "shutdown"  // the server is shutting down
)

// LongPoll reports one receive that waited: its first look found nothing
// and it had time left.
type LongPoll struct {
	Waited   time.Duration
	Wakeups  int // waits ended by a wake-up (a send, a release, ...)
	HandOffs int // waits ended by a send that claimed for the poll (handOffs)
	Checks   int // waits ended by the timer: a known visibility change, or the repair check
	Messages int // how many it returned
	Ended    string
}

// longPollWatch follows one call of claimWaiting.
type longPollWatch struct {
	s     *Service
	start time.Time // zero until the poll first waits
	info  LongPoll
}

func (w *longPollWatch) waiting() {
	if w.start.IsZero() {
		w.start = time.Now()
		w.s.waiting.Add(1)
	}
}

func (w *longPollWatch) done() {
	if w.start.IsZero() {
		return
	}
	w.s.waiting.Add(-1)
	if w.s.cfg.OnLongPoll != nil {
		w.info.Waited = time.Since(w.start)
		if w.info.Ended == "" {
			w.info.Ended = LongPollAnswered
		}
		w.s.cfg.OnLongPoll(w.info)
	}
}

// LongPollsWaiting is how many receives are waiting now.
func (s *Service) LongPollsWaiting() int64 { return s.waiting.Load() }

// QueueDepth is one queue's approximate counts.
type QueueDepth struct {
	AccountID, Region, Name string
	stores.QueueStats
}

// QueueDepths reads the counts of at most limit queues, of every account and
// region, in name order; more reports whether there were others. It costs
// one store list and one count per queue: callers bound and cache it.
func (s *Service) QueueDepths(ctx context.Context, limit int) (depths []QueueDepth, more bool, err error) {
	qs, err := s.store.QueueList(ctx, &stores.QueueListParams{Limit: limit + 1})
	if err != nil {
		return nil, false, err
	}
	if len(qs) > limit {
		qs, more = qs[:limit], true
	}
	for _, q := range qs {
		st, err := s.store.QueueStats(ctx, &stores.QueueStatsParams{Name: q.Name, ID: q.ID, Now: s.now()})
		if err != nil {
			continue // deleted since the list, or a passing failure: skip it this time
		}
		c, name := s.owner(q.Name)
		depths = append(depths, QueueDepth{AccountID: c.AccountID, Region: c.Region, Name: name, QueueStats: *st})
	}
	return depths, more, ctx.Err()
}

// MessageCounts are the messages this Service sent, received and deleted
// since it started (successful entries of batches included; a receive
// counts each message it returned). They are this process's counts, for
// rates on the console and in metrics; other instances keep their own.
type MessageCounts struct {
	Sent, Received, Deleted uint64
}

// messageCounters are the running MessageCounts.
type messageCounters struct {
	sent, received, deleted atomic.Uint64
}

// MessageCounts reads the counts so far.
func (s *Service) MessageCounts() MessageCounts {
	return MessageCounts{Sent: s.counts.sent.Load(), Received: s.counts.received.Load(), Deleted: s.counts.deleted.Load()}
}
