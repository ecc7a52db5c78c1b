package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// deps lists what the bootstrap links, built as for Lambda.
func deps(t *testing.T) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no go tool on PATH: %v", err)
		}
		t.Skipf("no go tool on PATH: %v", err)
	}
	cmd := exec.Command(gobin, "list", "-deps", "-tags", "lambda.norpc", ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	return strings.Fields(string(out))
}

// TestLinksOnlyLambdaStores: the function carries PostgreSQL and the
// memory store, and neither the Google SDKs (Firestore) nor the embedded
// store, which would only grow the zip and the cold start.
func TestLinksOnlyLambdaStores(t *testing.T) {
	list := deps(t)
	for _, want := range []string{
		"github.com/sluicehq/sluice/stores/pgstore",
		"github.com/sluicehq/sluice/stores/wake/pgnotify",
		"github.com/sluicehq/sluice/stores/memstore",
		"github.com/aws/aws-lambda-go/lambda",
	} {
		if !slices.Contains(list, want) {
			t.Errorf("the bootstrap does not link %s", want)
		}
	}
	for _, p := range list {
		for _, banned := range []string{
			"cloud.google.com/",
			"google.golang.org/grpc",
			"google.golang.org/api",
			"go.etcd.io/bbolt",
			"github.com/sluicehq/sluice/stores/embedded",
			"github.com/sluicehq/sluice/stores/firestore",
		} {
			if strings.HasPrefix(p, banned) {
				t.Errorf("the bootstrap links %s", p)
			}
		}
	}
}
