package firestore

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
	"github.com/sluicehq/sluice/stores/wake"
	"github.com/sluicehq/sluice/stores/wake/fslisten"
)

// TestConformance runs the whole SQS conformance suite on the emulator,
// each test on a project of its own; a second instance is a second client
// on the same project, as a second server would be, and instances wake
// each other through snapshot listeners on a project of the test's own.
func TestConformance(t *testing.T) {
	emulatorHost(t)
	conformance.Run(t, conformance.Harness{
		NewStore: func(t *testing.T) stores.Store {
			st, err := Open(context.Background(), DocsConfig{ProjectID: newProject(t)})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		OpenInstance: func(t *testing.T, st stores.Store) stores.Store {
			cfg := DocsConfig{ProjectID: st.(*Store).docs.project}
			other, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return other
		},
		NewWakeups: func(t *testing.T) func() wake.Transport {
			project := newProject(t)
			return func() wake.Transport {
				tr, err := fslisten.Open(context.Background(), project,
					fslisten.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatalf("fslisten.Open: %v", err)
				}
				return tr
			}
		},
		OpTimeout: 2 * time.Minute,
	})
}

// A firestore:// store names its own URL as its wake-ups, which the
// snapshot-listener transport opens.
func TestDefaultWakeups(t *testing.T) {
	const url = "firestore://proj/db"
	got, err := registry.DefaultWakeups(url)
	if err != nil || got != url {
		t.Fatalf("DefaultWakeups(%q) = %q, %v; want the URL itself", url, got, err)
	}
	if w, err := registry.DefaultWakeups(url + "?ttl=true"); err != nil || w != url {
		t.Errorf("DefaultWakeups(%q) = %q, %v; want %q, without the store's parameters", url+"?ttl=true", w, err, url)
	}
	emulatorHost(t)
	tr, kind, err := wake.OpenTransport(context.Background(), got, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if kind != "firestore" {
		t.Errorf("transport kind %q, want firestore", kind)
	}
	if _, ok := tr.(*fslisten.Transport); !ok {
		t.Errorf("opened %T, want *fslisten.Transport", tr)
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]DocsConfig{
		"proj":                 {ProjectID: "proj"},
		"proj/":                {ProjectID: "proj"},
		"proj/orders":          {ProjectID: "proj", DatabaseID: "orders"},
		"proj/orders?ttl=true": {ProjectID: "proj", DatabaseID: "orders", TTL: true},
		"proj?ttl=false":       {ProjectID: "proj"},
	} {
		got, err := ParseTarget(in)
		if err != nil || got.ProjectID != want.ProjectID || got.DatabaseID != want.DatabaseID || got.TTL != want.TTL {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "/db", "a/b/c", "proj?ttl=maybe", "proj?region=eu", "proj?ttl=true&x=1"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}
