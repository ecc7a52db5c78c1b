package firestore

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
)

// Importing the package makes firestore://PROJECT[/DATABASE] URLs open
// Firestore (the emulator when FIRESTORE_EMULATOR_HOST is set, otherwise
// with Application Default Credentials). Its instances wake each other
// through the same URL, which stores/wake/fslisten opens.
func init() {
	registry.Register(registry.Driver{
		Kind:    "firestore",
		Schemes: []string{"firestore"},
		Open: func(ctx context.Context, t registry.Target, _ registry.Options) (stores.Store, error) {
			cfg, err := ParseTarget(t.Rest)
			if err != nil {
				return nil, err
			}
			return Open(ctx, cfg)
		},
		// Snapshot listeners on the same database (stores/wake/fslisten),
		// named without the store's parameters.
		Wakeups: func(t registry.Target) string { u, _, _ := strings.Cut(t.URL, "?"); return u },
	})
}
