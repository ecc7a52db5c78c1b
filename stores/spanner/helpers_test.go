package spanner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// emulatorHost returns SPANNER_EMULATOR_HOST. Without it the test is
// skipped, except in CI (CI=true) or with SLUICE_REQUIRE_SPANNER=1, where
// the Spanner tests must never be skipped silently.
func emulatorHost(t testing.TB) string {
	t.Helper()
	if h := os.Getenv("SPANNER_EMULATOR_HOST"); h != "" {
		return h
	}
	if os.Getenv("CI") == "true" || os.Getenv("SLUICE_REQUIRE_SPANNER") == "1" {
		t.Fatal("SPANNER_EMULATOR_HOST is not set, and CI=true or SLUICE_REQUIRE_SPANNER=1 forbids skipping the Spanner tests; " +
			`start the emulator with: eval "$(infra/scripts/spanner.sh start)"`)
	}
	t.Skip(`SPANNER_EMULATOR_HOST is not set: skipping the Spanner tests (start the emulator with: eval "$(infra/scripts/spanner.sh start)")`)
	return ""
}

// testInstance is the emulator instance the tests' databases live in.
const testInstance = "sluice-test"

// newConfig names a database of its own for one test (created on first
// open), dropped when the test ends.
func newConfig(t testing.TB) Config {
	t.Helper()
	emulatorHost(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	cfg := Config{Project: "sluice-test", Instance: testInstance, Database: "t" + hex.EncodeToString(b[:])}
	t.Cleanup(func() { dropDatabase(t, cfg) })
	return cfg
}

// dropDatabase removes a test's database, so that the emulator's memory
// stays bounded over a run.
func dropDatabase(t testing.TB, cfg Config) {
	ctx := context.Background()
	if err := DropDatabase(ctx, cfg); err != nil {
		t.Logf("dropping %s: %v", cfg.DatabaseName(), err)
	}
}

// openTest opens a Docs on a database of the test's own unless cfg names
// one, closed when the test ends.
func openTest(t testing.TB, cfg Config) *Docs {
	t.Helper()
	if cfg.Database == "" {
		tables, indexes := cfg.Tables, cfg.Indexes
		cfg = newConfig(t)
		cfg.Tables, cfg.Indexes = tables, indexes
	}
	d, err := OpenDocs(context.Background(), cfg)
	if err != nil {
		t.Fatalf("OpenDocs: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}
