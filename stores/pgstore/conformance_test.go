package pgstore

import (
	"testing"

	"github.com/sluicehq/sluice/contract/conformance"
	"github.com/sluicehq/sluice/stores"
)

func TestConformance(t *testing.T) {
	databaseURL(t) // skip (or, in CI, fail) once rather than per test
	conformance.Run(t, conformance.Harness{NewStore: func(t *testing.T) stores.Store { return newTestStore(t) }})
}
