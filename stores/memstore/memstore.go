// Package memstore is an in-memory stores.Store: fast, exact, and gone when
// the process ends. All of its queue logic lives in the engine sub-package,
// which the durable embedded store (stores/embedded) reuses.
package memstore

import (
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
)

// Store is an in-memory stores.Store. It is safe for concurrent use.
// Every stores.Store method but Close is the engine's own.
type Store struct {
	*engine.Engine
}

var (
	_ stores.Store         = (*Store)(nil)
	_ stores.HealthChecker = (*Store)(nil) // the engine's Health: nil until closed
)

// New returns an empty in-memory store.
func New() *Store {
	return &Store{Engine: engine.New(nil)}
}

// Close makes every later operation fail with engine.ErrClosed.
func (s *Store) Close() error {
	s.Engine.Close()
	return nil
}
