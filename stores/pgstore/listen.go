package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

type subscription struct {
	ch chan struct{}
}

// Subscribe returns a channel that receives, without blocking the sender and
// possibly coalesced, when the named queue may have become receivable: a
// send, a visibility reset or a move into it, by this Store or by any other
// on the same database (through LISTEN/NOTIFY).
func (s *Store) Subscribe(queueName string) (<-chan struct{}, func()) {
	sub := &subscription{ch: make(chan struct{}, 1)}
	s.subMu.Lock()
	set := s.subs[queueName]
	if set == nil {
		set = map[*subscription]struct{}{}
		s.subs[queueName] = set
	}
	set[sub] = struct{}{}
	s.subMu.Unlock()
	var once sync.Once
	return sub.ch, func() {
		once.Do(func() {
			s.subMu.Lock()
			defer s.subMu.Unlock()
			if set := s.subs[queueName]; set != nil {
				delete(set, sub)
				if len(set) == 0 {
					delete(s.subs, queueName)
				}
			}
		})
	}
}

// fanOut wakes the subscribers of each named queue.
func (s *Store) fanOut(names []string) {
	if len(names) == 0 {
		return
	}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for _, name := range names {
		for sub := range s.subs[name] {
			select {
			case sub.ch <- struct{}{}:
			default:
			}
		}
	}
}

// wakeAll wakes every subscriber: after the listener reconnects, hints sent
// while it was away are lost, so everyone looks again.
func (s *Store) wakeAll() {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for _, set := range s.subs {
		for sub := range set {
			select {
			case sub.ch <- struct{}{}:
			default:
			}
		}
	}
}

// listen holds the Store's one listening connection: it LISTENs on the
// channel and fans notifications (payload: queue name) out to subscribers,
// reconnecting with backoff when the connection drops. ready receives the
// outcome of the first connection attempt.
func (s *Store) listen(ctx context.Context, cc *pgx.ConnConfig, ready chan<- error) {
	defer close(s.listenDone)
	backoff := 100 * time.Millisecond
	first := true
	for {
		conn, err := s.listenConn(ctx, cc)
		if first {
			first = false
			ready <- err
			if err != nil {
				return
			}
		} else if err == nil {
			s.log.Info("pgstore: listener reconnected", "channel", s.channel)
			s.wakeAll()
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			err = s.receive(ctx, conn)
			conn.Close(context.Background())
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("pgstore: listener connection lost; reconnecting", "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listenConn(ctx context.Context, cc *pgx.ConnConfig) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cc.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

func (s *Store) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == s.channel {
			s.fanOut([]string{n.Payload})
		}
	}
}

// notifyOthers queues wake-ups for other instances; the notifier sends them.
func (s *Store) notifyOthers(names []string) {
	if len(names) == 0 {
		return
	}
	s.notifyMu.Lock()
	for _, n := range names {
		s.notifyPending[n] = struct{}{}
	}
	s.notifyMu.Unlock()
	select {
	case s.notifyKick <- struct{}{}:
	default:
	}
}

// notifier sends the queued wake-ups, coalesced, each batch in one
// transaction of its own that does not wait for its commit to reach disk
// (hints: losing one in a crash costs nothing, every waiter looks again
// when its listener reconnects). NOTIFY holds a cluster-wide lock from
// before commit until the commit is done; off the requests' transactions
// and without a WAL flush, it is held for microseconds.
func (s *Store) notifier(ctx context.Context) {
	defer close(s.notifyDone)
	for {
		select {
		case <-s.notifyKick:
		case <-ctx.Done():
			s.flushNotify(context.Background()) // the last ones
			return
		}
		s.flushNotify(ctx)
	}
}

func (s *Store) flushNotify(ctx context.Context) {
	s.notifyMu.Lock()
	if len(s.notifyPending) == 0 {
		s.notifyMu.Unlock()
		return
	}
	names := make([]string, 0, len(s.notifyPending))
	for n := range s.notifyPending {
		names = append(names, n)
	}
	clear(s.notifyPending)
	s.notifyMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true),
			(SELECT count(pg_notify($1, n)) FROM unnest($2::text[]) AS n)`, s.channel, names); err != nil && ctx.Err() == nil {
		s.log.Warn("pgstore: notify", "err", err)
	}
}
