package fslisten

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice/stores/wake"
)

// Importing the package makes firestore://PROJECT[/DATABASE] wake-up URLs
// (the Firestore store's URLs) open snapshot listeners on that database,
// in the default collection.
func init() {
	wake.Register(wake.Opener{
		Kind:    "firestore",
		Schemes: []string{"firestore"},
		Open: func(ctx context.Context, rawURL string, logger *slog.Logger) (wake.Transport, error) {
			project, database, err := parseURL(rawURL)
			if err != nil {
				return nil, err
			}
			return Open(ctx, project, Options{Database: database, Logger: logger})
		},
	})
}

// parseURL reads firestore://PROJECT or firestore://PROJECT/DATABASE, as
// the Firestore store does.
func parseURL(rawURL string) (project, database string, err error) {
	a, b, ok := wake.SplitURL(rawURL, "firestore")
	if !ok {
		return "", "", fmt.Errorf("fslisten: want firestore://PROJECT or firestore://PROJECT/DATABASE, got %q", rawURL)
	}
	return a, b, nil
}
