package memstore

import (
	"context"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
)

// Importing the package makes mem:// and memory:// open a fresh, empty
// in-memory store; anything after "://" is ignored.
func init() {
	registry.Register(registry.Driver{
		Kind:    "memory",
		Schemes: []string{"mem", "memory"},
		Open: func(context.Context, registry.Target, registry.Options) (stores.Store, error) {
			return New(), nil
		},
	})
}
