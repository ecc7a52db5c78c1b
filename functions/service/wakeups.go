package service

import (
	"context"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
)

// The events that wake long polls, all of them, each published after the
// store call committed and before the request is answered. What a store
// call made receivable at once:
//
//   - a send: its stored messages (a delayed one too: the woken claim
//     finds nothing yet, but learns when it will, its NextChange), but for
//     those a waiting poll claimed with it (handOffs);
//   - a receive with VisibilityTimeout 0: what it returned is still
//     visible; a receive that redrove messages: they are receivable in
//     the dead-letter queue, and what stood behind them in the source;
//   - a delete on a FIFO queue: the next message of each group whose
//     head it deleted, when there is one (MessageDeleteResult.Freed);
//   - a visibility change that makes a message visible sooner;
//   - a move (a move task's step): the moved messages, in each destination;
//   - a queue deletion: its waiters end (the queue is gone).
//
// Purges, queue and tag updates and visibility extensions make nothing
// receivable.

func (s *Service) publish(ctx context.Context, events ...wake.Event) {
	s.hub.Publish(ctx, events...)
}

// wakeAfterSend: handed of the messages stored went to a waiting poll
// with the send (handOffs).
func (s *Service) wakeAfterSend(ctx context.Context, q *stores.Queue, res *stores.MessageSendResult, handed int) {
	n := -handed
	for _, r := range res.Results {
		if !r.Duplicate {
			n++
		}
	}
	if n > 0 {
		s.publish(ctx, wake.Event{Queue: q.Name, Count: n})
	}
}

func (s *Service) wakeAfterClaim(ctx context.Context, p *stores.MessageClaimParams, res *stores.MessageClaimResult) {
	var evs []wake.Event
	if p.VisibilityTimeout <= 0 && len(res.Messages) > 0 {
		evs = append(evs, wake.Event{Queue: p.QueueName, Count: len(res.Messages)})
	}
	if res.Redriven > 0 && p.Redrive != nil {
		evs = append(evs, wake.Event{Queue: p.Redrive.QueueName, Count: res.Redriven},
			wake.Event{Queue: p.QueueName, Count: 1})
	}
	s.publish(ctx, evs...)
}

func (s *Service) wakeAfterDelete(ctx context.Context, q *stores.Queue, freed int) {
	if q.FIFO && freed > 0 {
		s.publish(ctx, wake.Event{Queue: q.Name, Count: freed})
	}
}

func (s *Service) wakeAfterVisibility(ctx context.Context, q *stores.Queue, earlier int) {
	if earlier > 0 {
		s.publish(ctx, wake.Event{Queue: q.Name, Count: earlier})
	}
}

func (s *Service) wakeAfterMove(ctx context.Context, res *stores.MessageMoveResult) {
	var evs []wake.Event
	for name, n := range res.MovedTo {
		if n > 0 {
			evs = append(evs, wake.Event{Queue: name, Count: n})
		}
	}
	s.publish(ctx, evs...)
}

func (s *Service) wakeAfterQueueDelete(ctx context.Context, q *stores.Queue) {
	s.publish(ctx, wake.Event{Queue: q.Name})
}
