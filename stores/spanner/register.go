package spanner

import (
	"context"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
)

// Importing the package makes spanner://projects/P/instances/I/databases/D
// URLs open Spanner (the emulator when SPANNER_EMULATOR_HOST is set,
// creating the instance and database when missing; otherwise with
// Application Default Credentials). Its instances wake each other through
// Google Cloud Pub/Sub (stores/wake/pubsub) unless told otherwise: Spanner
// has no notifications of its own that the emulator serves.
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
		Wakeups: func(t registry.Target) string {
			cfg, err := ParseTarget(t.Rest)
			if err != nil {
				return ""
			}
			return WakeupsURL(cfg)
		},
	})
}

// WakeupsURL is the Pub/Sub topic the instances of cfg's database wake
// each other through by default: in cfg's project, named after the
// instance and database, so that deployments on other databases of the
// project do not wake these.
func WakeupsURL(cfg Config) string {
	return "pubsub://" + cfg.Project + "/sluice-wake-" + cfg.Instance + "-" + cfg.Database
}
