package memdocs

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/docstoretest"
)

// TestConformance runs the docstore suite in both modes, with and without
// jitter (which makes transactions overlap in more ways).
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"Optimistic", []Option{WithMode(Optimistic)}},
		{"Pessimistic", []Option{WithMode(Pessimistic)}},
		{"OptimisticJitter", []Option{WithMode(Optimistic), WithJitter(100 * time.Microsecond)}},
		{"PessimisticJitter", []Option{WithMode(Pessimistic), WithJitter(100 * time.Microsecond)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			docstoretest.Run(t, func(t *testing.T) docstore.Store { return New(c.opts...) })
		})
	}
}
