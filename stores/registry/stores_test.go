package registry_test

// The URL forms of the stores of this module, opened through the registry
// as a binary that imports them all does.

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/embedded"
	"github.com/sluicehq/sluice/stores/memstore"
	"github.com/sluicehq/sluice/stores/pgstore"
	"github.com/sluicehq/sluice/stores/registry"
)

func TestKnownIsWhatTheStoresRegister(t *testing.T) {
	got := registry.Schemes()
	want := slices.Sorted(maps.Keys(registry.Known))
	if !slices.Equal(got, want) {
		t.Errorf("registered schemes %q; the registry's known list has %q", got, want)
	}
}

func TestKinds(t *testing.T) {
	cases := []struct{ url, kind string }{
		{"", "embedded"},
		{"  ", "embedded"},
		{"mem://", "memory"},
		{"memory://", "memory"},
		{"MEM://", "memory"},
		{"file:///var/lib/sluice", "embedded"},
		{"file://rel/dir", "embedded"},
		{"file://localhost/abs/dir", "embedded"},
		{"embedded:///data", "embedded"},
		{"/plain/path", "embedded"},
		{"./data", "embedded"},
		{"postgres://u:p@h/db", "postgres"},
		{"postgresql://h/db?sslmode=disable", "postgres"},
	}
	for _, c := range cases {
		if k, err := registry.Kind(c.url); err != nil || k != c.kind {
			t.Errorf("Kind(%q) = %q, %v; want %q", c.url, k, err, c.kind)
		}
	}
	if k, err := registry.Kind("redis://h"); err == nil {
		t.Errorf("Kind(redis://h) = %q, no error", k)
	}
}

func TestOpenMemory(t *testing.T) {
	for _, u := range []string{"mem://", "memory://"} {
		s, err := registry.Open(context.Background(), u, nil)
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
	s, err := registry.Open(context.Background(), dsn, nil)
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
	_, err := registry.Open(context.Background(), "postgres://user:secret@127.0.0.1:1/sluice?connect_timeout=1", nil)
	if err == nil {
		t.Fatal("opened a database that cannot exist")
	}
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("error: %q", err)
	}
}

func TestOpenUnknown(t *testing.T) {
	_, err := registry.Open(context.Background(), "redis://:pw@h", nil)
	if err == nil || strings.Contains(err.Error(), "pw") || !strings.Contains(err.Error(), "postgres://") {
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

// TestOpenEmbedded opens each embedded form and checks the store lands in
// the directory the URL names.
func TestOpenEmbedded(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	cases := []struct{ url, dir string }{
		{"file://" + filepath.Join(root, "abs"), "abs"},
		{"file://localhost" + filepath.Join(root, "local"), "local"},
		{"file://rel/dir", "rel/dir"},
		{"file://" + filepath.Join(root, "with%20space"), "with space"},
		{"embedded://" + filepath.Join(root, "emb"), "emb"},
		{"embedded://emb-rel", "emb-rel"},
		{filepath.Join(root, "plain"), "plain"},
		{"./plain-rel", "plain-rel"},
	}
	for _, c := range cases {
		s, err := registry.Open(context.Background(), c.url, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if _, ok := s.(*embedded.Store); !ok {
			t.Errorf("%s: got %T", c.url, s)
		}
		roundTrip(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, c.dir)); err != nil {
			t.Errorf("%s: no store directory: %v", c.url, err)
		}
	}
	for _, bad := range []string{"file://", "embedded://", "file://%zz"} {
		if s, err := registry.Open(context.Background(), bad, nil); err == nil {
			s.Close()
			t.Errorf("%s: opened", bad)
		}
	}
}

func TestOpenDefaultDir(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := registry.Open(context.Background(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(embedded.DefaultDir); err != nil {
		t.Errorf("no %s: %v", embedded.DefaultDir, err)
	}
}
