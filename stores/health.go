package stores

import "context"

// HealthChecker is implemented by a store that can tell whether it serves
// everything now; a readiness check calls it. It is optional: a store
// without it is taken to be healthy while it answers.
type HealthChecker interface {
	// Health returns nil when the store takes every operation. Otherwise
	// it returns why not: an error wrapping ErrUnavailable while the store
	// is degraded but serving and expects to recover by itself (the
	// embedded store on a full disk serves reads, receives and deletes and
	// refuses sends), any other error when it cannot serve at all.
	Health(ctx context.Context) error
}
