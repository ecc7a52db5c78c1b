package pgstore

import (
	"context"
	"strconv"
	"strings"
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

// fanOut wakes every subscriber of each named queue.
func (s *Store) fanOut(names []string) {
	for _, name := range names {
		s.fanOutN(name, 0)
	}
}

// fanOutN wakes n subscribers of the queue (0: all of them). A send of one
// message needs one receiver, not every receive waiting on the queue: each
// woken one runs a claim, and all but one would find nothing. Subscribers
// are tried in random order (map order); one whose channel already holds a
// hint counts as woken. A woken receive that ends before it claims loses
// that hint; the others find the message at their repair check, so a lost
// hint costs latency, never a message.
func (s *Store) fanOutN(name string, n int) {
	s.idle.woke(name)
	s.subMu.Lock()
	defer s.subMu.Unlock()
	woken := 0
	for sub := range s.subs[name] {
		select {
		case sub.ch <- struct{}{}:
		default:
		}
		woken++
		if n > 0 && woken >= n {
			return
		}
	}
}

// wakeAll wakes every subscriber: after the listener reconnects, hints sent
// while it was away are lost, so everyone looks again.
func (s *Store) wakeAll() {
	s.idle.wokeAll()
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
// channel and fans notifications (see wakePayload) out to subscribers,
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
		if n.Channel != s.channel {
			continue
		}
		if from, name, count, ok := parseWake(n.Payload); ok && from != s.instance {
			s.fanOutN(name, count) // this Store woke its own at commit
		}
	}
}

// notifyOthers queues wake-ups of all subscribers for other instances;
// the notifier sends them.
func (s *Store) notifyOthers(names []string) {
	for _, name := range names {
		s.notifyOthersN(name, 0)
	}
}

// notifyOthersN queues a wake-up of n subscribers (0: all) per instance.
// Wake-ups of one queue coalesce: their counts add up, and all stays all.
func (s *Store) notifyOthersN(name string, n int) {
	s.notifyMu.Lock()
	if prev, ok := s.notifyPending[name]; !ok {
		s.notifyPending[name] = n
	} else if prev != 0 {
		if n == 0 {
			s.notifyPending[name] = 0
		} else {
			s.notifyPending[name] = prev + n
		}
	}
	s.notifyMu.Unlock()
	select {
	case s.notifyKick <- struct{}{}:
	default:
	}
}

// A wake-up's payload is "<instance> <queue> <count>" (count 0: every
// subscriber). Queue names have no spaces. A payload of a queue name alone
// (an older sluice) wakes every subscriber.
func wakePayload(instance, name string, n int) string {
	return instance + " " + name + " " + strconv.Itoa(n)
}

func parseWake(payload string) (from, name string, n int, ok bool) {
	parts := strings.Split(payload, " ")
	switch len(parts) {
	case 1:
		return "", parts[0], 0, parts[0] != ""
	case 3:
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 0 || parts[1] == "" {
			return "", "", 0, false
		}
		return parts[0], parts[1], n, true
	}
	return "", "", 0, false
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
	payloads := make([]string, 0, len(s.notifyPending))
	for name, n := range s.notifyPending {
		payloads = append(payloads, wakePayload(s.instance, name, n))
	}
	clear(s.notifyPending)
	s.notifyMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true),
			(SELECT count(pg_notify($1, n)) FROM unnest($2::text[]) AS n)`, s.channel, payloads); err != nil && ctx.Err() == nil {
		s.log.Warn("pgstore: notify", "err", err)
	}
}
