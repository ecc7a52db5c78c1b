package pswake

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice/stores/wake"
)

// Importing the package makes pubsub://PROJECT[/TOPIC] wake-up URLs open
// the transport on that topic (DefaultTopic without one).
func init() {
	wake.Register(wake.Opener{
		Kind:    "pubsub",
		Schemes: []string{"pubsub"},
		Open: func(ctx context.Context, rawURL string, logger *slog.Logger) (wake.Transport, error) {
			project, topic, err := parseURL(rawURL)
			if err != nil {
				return nil, err
			}
			return Open(ctx, project, Options{Topic: topic, Logger: logger})
		},
	})
}

// parseURL reads pubsub://PROJECT or pubsub://PROJECT/TOPIC.
func parseURL(rawURL string) (project, topic string, err error) {
	a, b, ok := wake.SplitURL(rawURL, "pubsub")
	if !ok {
		return "", "", fmt.Errorf("pswake: want pubsub://PROJECT or pubsub://PROJECT/TOPIC, got %q", rawURL)
	}
	return a, b, nil
}
