package firestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"testing"
	"time"
)

// emulatorHost returns FIRESTORE_EMULATOR_HOST. Without it the test is
// skipped, except in CI (CI=true) or with SLUICE_REQUIRE_FIRESTORE=1, where
// the Firestore tests must never be skipped silently.
func emulatorHost(t testing.TB) string {
	t.Helper()
	if h := os.Getenv("FIRESTORE_EMULATOR_HOST"); h != "" {
		return h
	}
	if os.Getenv("CI") == "true" || os.Getenv("SLUICE_REQUIRE_FIRESTORE") == "1" {
		t.Fatal("FIRESTORE_EMULATOR_HOST is not set, and CI=true or SLUICE_REQUIRE_FIRESTORE=1 forbids skipping the Firestore tests; " +
			`start the emulator with: eval "$(infra/scripts/firestore.sh start)"`)
	}
	t.Skip(`FIRESTORE_EMULATOR_HOST is not set: skipping the Firestore tests (start the emulator with: eval "$(infra/scripts/firestore.sh start)")`)
	return ""
}

// newProject returns a project id of its own for one test. On the emulator
// each project is a separate data set, so tests see only their own
// documents; its documents are dropped when the test ends.
func newProject(t testing.TB) string {
	t.Helper()
	host := emulatorHost(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	project := "sluice-test-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		// The emulator's own endpoint that deletes a database's documents.
		req, err := http.NewRequest(http.MethodDelete,
			"http://"+host+"/emulator/v1/projects/"+project+"/databases/(default)/documents", nil)
		if err != nil {
			t.Logf("clearing %s: %v", project, err)
			return
		}
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Logf("clearing %s: %v", project, err)
			return
		}
		resp.Body.Close()
	})
	return project
}

// openTest opens a Docs, on a project of the test's own unless cfg names
// one, closed when the test ends.
func openTest(t testing.TB, cfg DocsConfig) *Docs {
	t.Helper()
	if cfg.ProjectID == "" {
		cfg.ProjectID = newProject(t)
	}
	d, err := OpenDocs(context.Background(), cfg)
	if err != nil {
		t.Fatalf("OpenDocs: %v", err)
	}
	// A second Close (the conformance suite closes its stores) only errs.
	t.Cleanup(func() { _ = d.Close() })
	return d
}
