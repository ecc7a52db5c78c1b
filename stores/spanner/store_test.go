package spanner

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
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
		OpTimeout: 2 * time.Minute,
	})
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
