package stores

import "context"

// HealthChecker is implemented by stores that can tell whether they can serve.
type HealthChecker interface {
	Health(ctx context.Context) error
}
