package embedded_test

import (
	"testing"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/embedded"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{NewStore: func(t *testing.T) stores.Store {
		st, err := embedded.Open(t.TempDir())
		if err != nil {
			t.Fatalf("embedded.Open: %v", err)
		}
		return st
	}})
}
