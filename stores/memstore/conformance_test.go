package memstore_test

import (
	"testing"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{NewStore: func(t *testing.T) stores.Store { return memstore.New() }})
}
