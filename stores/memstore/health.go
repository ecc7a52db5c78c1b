package memstore

import "context"

// Health: an in-memory store can always serve (until closed, when every call
// fails anyway).
func (s *Store) Health(context.Context) error { return nil }
