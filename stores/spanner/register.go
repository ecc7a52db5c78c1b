package spanner

import (
	"context"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
)

// Importing the package makes spanner://projects/P/instances/I/databases/D
// URLs open Spanner (the emulator when SPANNER_EMULATOR_HOST is set,
// creating the instance and database when missing; otherwise with
// Application Default Credentials).
func init() {
	registry.Register(registry.Driver{
		Kind:    "spanner",
		Schemes: []string{"spanner"},
		Open: func(ctx context.Context, t registry.Target, _ registry.Options) (stores.Store, error) {
			cfg, err := ParseTarget(t.Rest)
			if err != nil {
				return nil, err
			}
			return Open(ctx, cfg)
		},
	})
}
