package app_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// storeDeps are packages only a store brings in: the seam that every entry
// point shares must link none, so each binary carries the stores it
// imports and nothing else.
var storeDeps = []string{
	"github.com/sluicehq/sluice/stores/embedded",
	"github.com/sluicehq/sluice/stores/memstore",
	"github.com/sluicehq/sluice/stores/pgstore",
	"github.com/jackc/pgx",
	"go.etcd.io/bbolt",
	"cloud.google.com/go",
	// The Google Cloud SDKs' own modules; google.golang.org/protobuf is not
	// one (the Prometheus client links it).
	"google.golang.org/api",
	"google.golang.org/grpc",
	"google.golang.org/genproto",
}

// deps lists what pkg links (go list -deps, tests excluded).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no go tool on PATH: %v", err)
		}
		t.Skipf("no go tool on PATH: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", pkg).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	return strings.Fields(string(out))
}

// linked returns the storeDeps that list holds.
func linked(list []string) []string {
	var found []string
	for _, p := range list {
		if slices.ContainsFunc(storeDeps, func(prefix string) bool { return strings.HasPrefix(p, prefix) }) {
			found = append(found, p)
		}
	}
	return found
}

func TestSeamLinksNoStore(t *testing.T) {
	for _, pkg := range []string{
		"github.com/sluicehq/sluice/stores/registry",
		"github.com/sluicehq/sluice/functions/app",
	} {
		list := deps(t, pkg)
		if !slices.Contains(list, pkg) {
			t.Fatalf("go list -deps %s does not list the package itself: %q", pkg, list)
		}
		if found := linked(list); len(found) > 0 {
			t.Errorf("%s links %q", pkg, found)
		}
	}
}

// TestCommandLinksItsStores shows the check above can see a store: the
// sluice command imports them all.
func TestCommandLinksItsStores(t *testing.T) {
	found := linked(deps(t, "github.com/sluicehq/sluice/functions/cmd/sluice"))
	for _, want := range []string{
		"github.com/sluicehq/sluice/stores/pgstore",
		"github.com/sluicehq/sluice/stores/embedded",
		"github.com/sluicehq/sluice/stores/memstore",
		"github.com/jackc/pgx/v5",
		"go.etcd.io/bbolt",
	} {
		if !slices.Contains(found, want) {
			t.Errorf("the sluice command does not link %s (found %q)", want, found)
		}
	}
}
