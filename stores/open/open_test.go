package open

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
	"github.com/sluicehq/sluice/stores/pgstore"
)

func TestParse(t *testing.T) {
	cases := []struct {
		url  string
		kind kind
		dir  string
	}{
		{"", kindEmbedded, "./sluice-data"},
		{"  ", kindEmbedded, "./sluice-data"},
		{"mem://", kindMemory, ""},
		{"memory://", kindMemory, ""},
		{"MEM://", kindMemory, ""},
		{"file:///var/lib/sluice", kindEmbedded, "/var/lib/sluice"},
		{"file://rel/dir", kindEmbedded, "rel/dir"},
		{"file://./rel", kindEmbedded, "./rel"},
		{"file://localhost/abs/dir", kindEmbedded, "/abs/dir"},
		{"file:///with%20space", kindEmbedded, "/with space"},
		{"embedded:///data", kindEmbedded, "/data"},
		{"embedded://data", kindEmbedded, "data"},
		{"/plain/path", kindEmbedded, "/plain/path"},
		{"./data", kindEmbedded, "./data"},
		{"postgres://u:p@h/db", kindPostgres, ""},
		{"postgresql://h/db?sslmode=disable", kindPostgres, ""},
	}
	for _, c := range cases {
		k, dir, err := parse(c.url)
		if err != nil || k != c.kind || dir != c.dir {
			t.Errorf("parse(%q) = %v, %q, %v; want %v, %q", c.url, k, dir, err, c.kind, c.dir)
		}
	}
	for _, bad := range []string{"redis://h", "file://", "embedded://", "file://%zz"} {
		if _, _, err := parse(bad); err == nil {
			t.Errorf("parse(%q): no error", bad)
		}
	}
}

func TestOpenMemory(t *testing.T) {
	for _, u := range []string{"mem://", "memory://"} {
		s, err := Open(context.Background(), u, nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if _, ok := s.(*memstore.Store); !ok {
			t.Errorf("%s: got %T", u, s)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestOpenPostgres(t *testing.T) {
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL is not set; make test-go starts PostgreSQL for this test")
		}
		t.Skip("DATABASE_URL is not set: run through make test-go, which starts PostgreSQL")
	}
	s, err := Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*pgstore.Store); !ok {
		t.Errorf("got %T", s)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

func TestOpenPostgresErrorHidesPassword(t *testing.T) {
	_, err := Open(context.Background(), "postgres://user:secret@127.0.0.1:1/sluice?connect_timeout=1", nil)
	if err == nil {
		t.Fatal("opened a database that cannot exist")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error shows the password: %q", err)
	}
}

func TestOpenUnknown(t *testing.T) {
	_, err := Open(context.Background(), "redis://:pw@h", nil)
	if err == nil || strings.Contains(err.Error(), "pw") {
		t.Fatalf("got %v", err)
	}
}

// roundTrip creates a queue in s and reads it back.
func roundTrip(t *testing.T, s stores.Store) {
	t.Helper()
	ctx := context.Background()
	_, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{
		Name: "q", ID: "id1", Attributes: map[string]string{}, Tags: map[string]string{}}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.QueueGet(ctx, &stores.QueueGetParams{Name: "q"})
	if err != nil || q.Name != "q" {
		t.Fatalf("QueueGet: %v %v", q, err)
	}
}

func TestOpenEmbedded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, u := range []string{"file://" + dir, "embedded://" + dir, dir} {
		s, err := Open(context.Background(), u, nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		roundTrip(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("no store directory: %v", err)
	}
}

func TestOpenDefaultDir(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := Open(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("sluice-data"); err != nil {
		t.Errorf("no ./sluice-data: %v", err)
	}
}

func TestRedact(t *testing.T) {
	if got := Redact("postgres://u:secret@h/db"); strings.Contains(got, "secret") {
		t.Errorf("Redact = %q", got)
	}
	if got := Redact("mem://"); got != "mem://" {
		t.Errorf("Redact = %q", got)
	}
}
