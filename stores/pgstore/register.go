package pgstore

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
)

// Importing the package makes postgres:// and postgresql:// URLs (pgx
// connection strings) open PostgreSQL.
func init() {
	registry.Register(registry.Driver{
		Kind:    "postgres",
		Schemes: []string{"postgres", "postgresql"},
		Open: func(ctx context.Context, t registry.Target, o registry.Options) (stores.Store, error) {
			s, err := Open(ctx, t.URL, Options{Logger: o.Logger})
			if err != nil {
				return nil, fmt.Errorf("opening PostgreSQL at %s: %w", registry.Redact(t.URL), err)
			}
			return s, nil
		},
		// LISTEN/NOTIFY on the same database (stores/wake/pgnotify).
		Wakeups: func(t registry.Target) string { return t.URL },
	})
}
