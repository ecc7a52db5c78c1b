package orderedbatch_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/memdocs"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// The whole conformance suite on the protocol over the in-memory backend,
// in both of its concurrency modes: the protocol must be correct whether
// transactions lock or validate at commit.
func TestConformance(t *testing.T) {
	for _, mode := range []memdocs.Mode{memdocs.Optimistic, memdocs.Pessimistic} {
		t.Run(mode.String(), func(t *testing.T) {
			conformance.Run(t, conformance.Harness{
				NewStore: func(t *testing.T) stores.Store {
					return orderedbatch.New(memdocs.New(memdocs.WithMode(mode)), orderedbatch.Options{Name: "memdocs"})
				},
				OpenInstance: func(t *testing.T, st stores.Store) stores.Store {
					return orderedbatch.New(shared{st.(*orderedbatch.Store).Docs()}, orderedbatch.Options{Name: "memdocs"})
				},
			})
		})
	}
}

// shared is a second instance's handle on the same backend: its own
// protocol state (caches, sweep position), the backend's documents shared;
// closing it leaves the backend to the first instance.
type shared struct{ docstore.Store }

func (shared) Close() error { return nil }

// TestInterleavings repeats the areas whose checkers judge concurrent
// clients (no message or FIFO group held twice, per-group order, nothing
// lost, no duplicate while in flight) with the backend sleeping a random
// moment after each read and before each commit, so that transactions
// interleave differently on every run, in both concurrency modes.
func TestInterleavings(t *testing.T) {
	rounds := 2
	if testing.Short() {
		rounds = 1
	}
	for _, mode := range []memdocs.Mode{memdocs.Optimistic, memdocs.Pessimistic} {
		for r := range rounds {
			t.Run(fmt.Sprintf("%s/round%d", mode, r), func(t *testing.T) {
				conformance.Run(t, conformance.Harness{
					Areas: []string{"Stress", "Concurrency"},
					NewStore: func(t *testing.T) stores.Store {
						return orderedbatch.New(memdocs.New(memdocs.WithMode(mode), memdocs.WithJitter(300*time.Microsecond)), orderedbatch.Options{Name: "memdocs"})
					},
					OpenInstance: func(t *testing.T, st stores.Store) stores.Store {
						return orderedbatch.New(shared{st.(*orderedbatch.Store).Docs()}, orderedbatch.Options{Name: "memdocs"})
					},
				})
			})
		}
	}
}
