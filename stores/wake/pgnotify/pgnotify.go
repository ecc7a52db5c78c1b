// Package pgnotify is a wake.Transport over PostgreSQL LISTEN/NOTIFY: the
// default for the PostgreSQL store, whose instances already share a
// database. Any store can use it when a PostgreSQL is at hand.
//
// Each instance holds one listening connection and publishes through a
// small pool. A NOTIFY is sent in a transaction of its own that does not
// wait for its commit to reach disk: a transaction that issues NOTIFY holds
// a cluster-wide lock through its commit, so notifying inside every send's
// transaction would serialize the sends on the WAL flush; off them and
// without a flush, the lock is held for microseconds. A crash may lose a
// hint, which costs latency only.
//
// A NOTIFY is sent only when another instance listens on the channel: a
// single instance, the common case, then commits no transaction for its
// wake-ups. Listening connections name themselves by their
// application_name, which pg_stat_activity shows to every role, and a
// publisher looks for them at most every lookEvery. A listener reports
// itself ready only after noticeWithin, by when every publisher has looked
// again and seen it.
package pgnotify

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/stores/wake"
)

// DefaultChannel is the channel when Options.Channel is empty.
const DefaultChannel = "sluice_wake"

// lookEvery is how old, at most, a publisher's knowledge of the other
// listeners is; noticeWithin is how long a newcomer waits before it
// counts on their notifications (lookEvery, and room for the look itself).
const (
	lookEvery    = 250 * time.Millisecond
	noticeWithin = 2 * lookEvery
)

// listenerPrefix starts the application_name of a listening connection;
// the channel follows.
const listenerPrefix = "sluice-wake "

// Options configure a Transport.
type Options struct {
	// Channel is the LISTEN/NOTIFY channel (default DefaultChannel).
	// Instances that should wake each other use the same one; deployments
	// sharing a database in different schemas are best kept apart with
	// different ones (a stray wake-up costs a claim, nothing more).
	Channel string
	Logger  *slog.Logger
}

// Transport is a wake.Transport on one PostgreSQL database.
type Transport struct {
	pool     *pgxpool.Pool
	conn     *pgx.ConnConfig
	channel  string
	instance string // names this instance's notifications, so it skips its own
	log      *slog.Logger

	listenerPID atomic.Uint32 // the backend of this instance's listening connection, 0 while none
	// What Publish last found (Quiet reads it concurrently): when it
	// looked for other listeners (on the monotonic clock: nanoseconds
	// since opened, 0 before it looked) and whether any listened.
	opened   time.Time
	lookedAt atomic.Int64
	others   atomic.Bool
}

var (
	_ wake.Transport = (*Transport)(nil)
	_ wake.Quieter   = (*Transport)(nil)
)

// Open connects to the database named by dsn (a pgx connection string).
func Open(ctx context.Context, dsn string, opts Options) (*Transport, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgnotify: parse dsn: %w", err)
	}
	cfg.MaxConns = 2 // publishes are coalesced by the Hub: one at a time
	cfg.MinConns = 0
	if opts.Channel == "" {
		opts.Channel = DefaultChannel
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgnotify: connect: %w", err)
	}
	b := make([]byte, 8)
	_, _ = crand.Read(b)
	listen := cfg.ConnConfig.Copy()
	listen.RuntimeParams["application_name"] = listenerName(opts.Channel)
	return &Transport{pool: pool, conn: listen, channel: opts.Channel,
		instance: hex.EncodeToString(b), log: opts.Logger, opened: time.Now()}, nil
}

// listenerName is the application_name of a listening connection on the
// channel. PostgreSQL keeps at most 63 bytes of it and shows non-ASCII
// characters escaped, so a channel that would not come back intact is
// named by a digest instead.
func listenerName(channel string) string {
	name := listenerPrefix + channel
	if len(name) <= 63 && printableASCII(channel) {
		return name
	}
	sum := sha256.Sum256([]byte(channel))
	return listenerPrefix + "#" + hex.EncodeToString(sum[:16])
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// othersListenSQL is true when a connection other than this instance's
// listener ($2) listens on the channel: by its application_name ($1), or,
// for a listener of an older sluice that does not name itself, by its
// last statement ($3), which pg_stat_activity shows to the same role.
const othersListenSQL = `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
	WHERE datname = current_database() AND pid <> $2
		AND (application_name = $1 OR (state = 'idle' AND query = $3)))`

// othersListen reports whether another instance may be listening,
// looking again when what it knows is older than lookEvery.
func (t *Transport) othersListen(ctx context.Context) bool {
	if t.fresh() {
		return t.others.Load()
	}
	start := time.Now()
	var others bool
	err := t.pool.QueryRow(ctx, othersListenSQL, listenerName(t.channel),
		int64(t.listenerPID.Load()), t.listenStatement()).Scan(&others)
	if err != nil {
		return true // unknown: notify, as if someone listened
	}
	t.others.Store(others)
	t.lookedAt.Store(max(int64(start.Sub(t.opened)), 1))
	return others
}

// fresh reports whether the last look for other listeners is younger than
// lookEvery.
func (t *Transport) fresh() bool {
	at := t.lookedAt.Load()
	return at != 0 && time.Since(t.opened)-time.Duration(at) < lookEvery
}

// Quiet implements wake.Quieter: no other listener, as of a look younger
// than lookEvery.
func (t *Transport) Quiet() bool { return t.fresh() && !t.others.Load() }

func (t *Transport) listenStatement() string {
	return "LISTEN " + pgx.Identifier{t.channel}.Sanitize()
}

// Publish sends one notification per event, in one statement.
func (t *Transport) Publish(ctx context.Context, events []wake.Event) error {
	payloads := make([]string, 0, len(events))
	for _, ev := range events {
		if ev.Queue == "" || strings.Contains(ev.Queue, " ") {
			continue
		}
		payloads = append(payloads, payload(t.instance, ev))
	}
	if len(payloads) == 0 || !t.othersListen(ctx) {
		return nil
	}
	_, err := t.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true),
		(SELECT count(pg_notify($1, n)) FROM unnest($2::text[]) AS n)`, t.channel, payloads)
	return err
}

// Listen holds the listening connection, reconnecting with backoff when
// it drops; while it is down the transport reports itself degraded.
func (t *Transport) Listen(ctx context.Context, r wake.Receiver) error {
	backoff := 100 * time.Millisecond
	for {
		conn, err := t.listenConn(ctx)
		if err == nil {
			t.listenerPID.Store(conn.PgConn().PID())
			err = t.awaitNotice(ctx)
			if err == nil {
				r.Degraded(false)
				backoff = 100 * time.Millisecond
				err = t.receive(ctx, conn, r)
			}
			t.listenerPID.Store(0)
			conn.Close(context.Background())
		}
		if ctx.Err() != nil {
			return nil
		}
		r.Degraded(true)
		t.log.Warn("pgnotify: listener connection lost; reconnecting", "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// Close closes the publishing pool.
func (t *Transport) Close() error {
	t.pool.Close()
	return nil
}

// awaitNotice waits until every other instance has looked for listeners
// since this one started (noticeWithin): until then they may skip
// notifications this one needs. Also when none listens now: an instance
// whose own listening connection is down (a database restart drops them
// all) still publishes, and may have looked before this one listened.
func (t *Transport) awaitNotice(ctx context.Context) error {
	select {
	case <-time.After(noticeWithin):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Transport) listenConn(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, t.conn.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, t.listenStatement()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// quietCheckEvery is how long the listening connection may stay silent
// before the listener asks it for an answer, and quietCheckTimeout how
// long that answer may take. A connection that went silent (a stalled
// proxy or middlebox, a host gone without a reset) would otherwise count
// as listening until TCP gave up on it, minutes later or, when something
// on the way still acknowledges its segments, never: all that while every
// other instance's wake-ups are lost here, unnoticed, and this instance's
// long polls rely on them.
var (
	quietCheckEvery   = 30 * time.Second
	quietCheckTimeout = 5 * time.Second
)

func (t *Transport) receive(ctx context.Context, conn *pgx.Conn, r wake.Receiver) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, quietCheckEvery)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil && ctx.Err() == nil && pgconn.Timeout(err) {
			// Quiet for a while: does the connection still answer? A
			// notification that comes meanwhile is kept for the next wait.
			pctx, cancel := context.WithTimeout(ctx, quietCheckTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("pgnotify: the listening connection did not answer within %s: %w", quietCheckTimeout, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if n.Channel != t.channel {
			continue
		}
		if from, ev, ok := parse(n.Payload); ok && from != t.instance {
			r.Deliver([]wake.Event{ev})
		}
	}
}

// A notification's payload is "<instance> <queue> <count>" (count 0: every
// waiter). Queue names have no spaces. A payload of a queue name alone (an
// older sluice) wakes every waiter of that queue.
func payload(instance string, ev wake.Event) string {
	return instance + " " + ev.Queue + " " + strconv.Itoa(max(ev.Count, 0))
}

func parse(p string) (from string, ev wake.Event, ok bool) {
	parts := strings.Split(p, " ")
	switch len(parts) {
	case 1:
		return "", wake.Event{Queue: parts[0]}, parts[0] != ""
	case 3:
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 0 || parts[1] == "" {
			return "", wake.Event{}, false
		}
		return parts[0], wake.Event{Queue: parts[1], Count: n}, true
	}
	return "", wake.Event{}, false
}
