package pgnotify

import (
	"context"
	"log/slog"

	"github.com/sluicehq/sluice/stores/wake"
)

// Importing the package makes postgres:// and postgresql:// wake-up URLs
// (pgx connection strings) open LISTEN/NOTIFY on that database, on the
// default channel.
func init() {
	wake.Register(wake.Opener{
		Kind:    "postgres",
		Schemes: []string{"postgres", "postgresql"},
		Open: func(ctx context.Context, rawURL string, logger *slog.Logger) (wake.Transport, error) {
			return Open(ctx, rawURL, Options{Logger: logger})
		},
	})
}
