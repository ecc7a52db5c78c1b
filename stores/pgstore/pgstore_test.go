package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
)

// databaseURL returns DATABASE_URL. Without it the test is skipped, except
// in CI (CI=true) or with SLUICE_REQUIRE_POSTGRES=1, where the store suite
// must never be skipped silently.
func databaseURL(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("DATABASE_URL")
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") == "true" || os.Getenv("SLUICE_REQUIRE_POSTGRES") == "1" {
		t.Fatal("DATABASE_URL is not set, and CI=true or SLUICE_REQUIRE_POSTGRES=1 forbids skipping the PostgreSQL store tests; " +
			`start one with: eval "$(infra/scripts/postgres.sh start)"`)
	}
	t.Skip(`DATABASE_URL is not set: skipping the PostgreSQL store tests (start a throwaway server with: eval "$(infra/scripts/postgres.sh start)")`)
	return ""
}

func randomName(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// newSchema returns a fresh schema name, dropped when the test ends.
func newSchema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = databaseURL(t)
	schema = randomName("t_")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Logf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Logf("dropping schema %s: %v", schema, err)
		}
	})
	return dsn, schema
}

// withParams adds query parameters (a=b&c=d) to a URL-form dsn; pgx sends
// those it does not know as session settings.
func withParams(dsn, params string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openSchema opens a Store on schema, closed when the test ends.
func openSchema(t testing.TB, dsn, schema string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Open(ctx, dsn, Options{Schema: schema, Logger: quietLogger(), MaxConns: 8})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newTestStore opens a Store on a fresh, isolated schema.
func newTestStore(t testing.TB) *Store {
	t.Helper()
	dsn, schema := newSchema(t)
	return openSchema(t, dsn, schema)
}

// Health pings the database, and fails once the store is closed.
func TestHealth(t *testing.T) {
	s := newTestStore(t)
	if err := s.Health(context.Background()); err != nil {
		t.Fatalf("health: %v", err)
	}
	s.Close()
	if err := s.Health(context.Background()); err == nil {
		t.Fatal("health of a closed store: nil")
	}
}

// A receive or a delete on a queue deleted since the store last saw it (its
// kind still cached: the one-statement paths) finds it gone.
func TestGoneQueueOnTheOneStatementPaths(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	for _, fifo := range []bool{false, true} {
		name := randomName("gone-")
		if fifo {
			name += ".fifo"
		}
		q := createQueue(t, s, name, fifo)
		if _, ok := s.fifoOf(q.ID); !ok {
			t.Fatalf("%s: the store does not know the queue's kind after creating it", name)
		}
		claim := &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1, VisibilityTimeout: time.Minute, Token: "t"}
		// The first claim sweeps, on the general path; the next one, soon
		// after, does not.
		if _, err := s.MessageClaim(ctx, claim); err != nil {
			t.Fatal(err)
		}
		if err := s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: q.Name}); err != nil {
			t.Fatal(err)
		}
		_, err := s.MessageClaim(ctx, claim)
		if !errors.Is(err, stores.ErrQueueNotFound) {
			t.Errorf("%s: MessageClaim gave %v, want ErrQueueNotFound", name, err)
		}
		_, err = s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
			Receipts: []stores.Receipt{{MessageID: "m", Token: "t"}}})
		if !errors.Is(err, stores.ErrQueueNotFound) {
			t.Errorf("%s: MessageDelete gave %v, want ErrQueueNotFound", name, err)
		}
	}
}

// The store's sessions run with generic plans, sequential scans priced
// out and JIT compilation off (PostgreSQL compiled a Standard claim on
// every call, 17 ms each, once its generic plan was costed against a
// million-row table), each unless the URL sets it.
func TestSessionSettings(t *testing.T) {
	want := map[string]string{"plan_cache_mode": "force_generic_plan", "enable_seqscan": "off", "jit": "off"}
	show := func(s *Store) map[string]string {
		got := map[string]string{}
		for name := range want {
			var v string
			if err := s.pool.QueryRow(context.Background(), "SELECT current_setting($1)", name).Scan(&v); err != nil {
				t.Fatal(err)
			}
			got[name] = v
		}
		return got
	}
	for name, v := range show(newTestStore(t)) {
		if v != want[name] {
			t.Errorf("%s = %s, want %s", name, v, want[name])
		}
	}
	dsn, schema := newSchema(t)
	own := map[string]string{"plan_cache_mode": "auto", "enable_seqscan": "on", "jit": "on"}
	for name, v := range own {
		dsn = withParams(dsn, name+"="+v)
	}
	for name, v := range show(openSchema(t, dsn, schema)) {
		if v != own[name] {
			t.Errorf("with %s=%s in the URL: %s = %s", name, own[name], name, v)
		}
	}
}

// columnStrings runs sql and returns its first column, a text, row by row.
func columnStrings(t *testing.T, s *Store, sql string, args ...any) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}
