package spanner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
	"github.com/sluicehq/sluice/stores/wake"
	pswake "github.com/sluicehq/sluice/stores/wake/pubsub"
)

// TestConformance runs the whole SQS conformance suite on the emulator,
// each test on a database of its own; a second instance is a second
// client on the same database, as a second server would be.
func TestConformance(t *testing.T) {
	emulatorHost(t)
	conformance.Run(t, conformance.Harness{
		NewStore: func(t *testing.T) stores.Store {
			st, err := Open(context.Background(), newConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		OpenInstance: func(t *testing.T, st stores.Store) stores.Store {
			other, err := Open(context.Background(), st.(*Store).docs.cfg)
			if err != nil {
				t.Fatal(err)
			}
			return other
		},
		NewWakeups: pubsubWakeups(t),
		OpTimeout:  2 * time.Minute,
	})
}

// pubsubWakeups returns the suite's wake-ups over the Pub/Sub emulator, a
// topic of each test's own, which is how Spanner instances wake each
// other. Without PUBSUB_EMULATOR_HOST the suite uses its in-process
// loopback, except in CI (CI=true) or with SLUICE_REQUIRE_PUBSUB=1.
func pubsubWakeups(t *testing.T) func(t *testing.T) func() wake.Transport {
	if os.Getenv("PUBSUB_EMULATOR_HOST") == "" {
		if os.Getenv("CI") == "true" || os.Getenv("SLUICE_REQUIRE_PUBSUB") == "1" {
			t.Fatal("PUBSUB_EMULATOR_HOST is not set, and CI=true or SLUICE_REQUIRE_PUBSUB=1 forbids running the Spanner suite without Pub/Sub wake-ups; " +
				`start the emulator with: eval "$(infra/scripts/pubsub.sh start)"`)
		}
		t.Log("PUBSUB_EMULATOR_HOST is not set: the suite's instances wake each other in process")
		return nil
	}
	return func(t *testing.T) func() wake.Transport {
		var b [6]byte
		_, _ = rand.Read(b[:])
		topic := "sluice-test-" + hex.EncodeToString(b[:])
		return func() wake.Transport {
			tr, err := pswake.Open(context.Background(), "sluice-test",
				pswake.Options{Topic: topic, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatalf("pswake.Open: %v", err)
			}
			return tr
		}
	}
}

// A spanner:// store's instances wake each other through a Pub/Sub topic
// of its database's own in its project.
func TestDefaultWakeups(t *testing.T) {
	const url = "spanner://projects/proj/instances/inst/databases/db"
	got, err := registry.DefaultWakeups(url)
	if want := "pubsub://proj/sluice-wake-inst-db"; err != nil || got != want {
		t.Fatalf("DefaultWakeups(%q) = %q, %v; want %q", url, got, err, want)
	}
	if os.Getenv("PUBSUB_EMULATOR_HOST") == "" {
		t.Skip("PUBSUB_EMULATOR_HOST is not set: not opening the transport")
	}
	tr, kind, err := wake.OpenTransport(context.Background(), got, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, ok := tr.(*pswake.Transport); !ok || kind != "pubsub" {
		t.Errorf("opened %T (kind %q), want *pubsub.Transport", tr, kind)
	}
}

func TestParseTarget(t *testing.T) {
	got, err := ParseTarget("projects/p/instances/i/databases/d")
	if err != nil || got.Project != "p" || got.Instance != "i" || got.Database != "d" {
		t.Errorf("ParseTarget = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "projects/p", "projects/p/instances/i", "projects/p/instances/i/databases/",
		"projects//instances/i/databases/d", "p/i/d", "projects/p/instances/i/databases/d/x", "projects/p/instances/i/databases/d?x=1"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}
