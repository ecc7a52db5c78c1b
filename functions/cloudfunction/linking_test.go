package cloudfunction_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestFunctionLinks: the function (the module's root package) carries the
// stores a function deploys and the Framework, and not the embedded store,
// whose disk would go with the instance.
func TestFunctionLinks(t *testing.T) {
	const fn = "github.com/sluicehq/sluice"
	out, err := exec.Command(goTool(t), "list", "-deps", fn).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", fn, err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{
		fn,
		"github.com/sluicehq/sluice/stores/firestore",
		"github.com/sluicehq/sluice/stores/spanner",
		"github.com/sluicehq/sluice/stores/wake/fslisten",
		"github.com/sluicehq/sluice/stores/pgstore",
		"github.com/sluicehq/sluice/stores/wake/pgnotify",
		"github.com/sluicehq/sluice/stores/wake/pubsub",
		"github.com/sluicehq/sluice/stores/memstore",
		"github.com/GoogleCloudPlatform/functions-framework-go/functions",
	} {
		if !slices.Contains(deps, want) {
			t.Errorf("the function does not link %s", want)
		}
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "go.etcd.io/bbolt") || p == "github.com/sluicehq/sluice/stores/embedded" {
			t.Errorf("the function links %s", p)
		}
	}
}
