package firestore

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
)

// TestConformance runs the whole SQS conformance suite on the emulator,
// each test on a project of its own; a second instance is a second client
// on the same project, as a second server would be.
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
		OpTimeout: 2 * time.Minute,
	})
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]DocsConfig{
		"proj":        {ProjectID: "proj"},
		"proj/":       {ProjectID: "proj"},
		"proj/orders": {ProjectID: "proj", DatabaseID: "orders"},
	} {
		got, err := ParseTarget(in)
		if err != nil || got.ProjectID != want.ProjectID || got.DatabaseID != want.DatabaseID {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "/db", "a/b/c"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}
