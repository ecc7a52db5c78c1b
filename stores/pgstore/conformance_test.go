package pgstore

import (
	"context"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/functions/conformance"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
	"github.com/sluicehq/sluice/stores/wake/pgnotify"
)

// The suite runs as production does: a second instance is another Store on
// the same schema, and instances wake each other through LISTEN/NOTIFY on a
// channel of the test's own.
func TestConformance(t *testing.T) {
	dsn := databaseURL(t) // skip (or, in CI, fail) once rather than per test
	var mu sync.Mutex
	schemas := map[stores.Store]string{}
	conformance.Run(t, conformance.Harness{
		NewStore: func(t *testing.T) stores.Store {
			_, schema := newSchema(t)
			s := openSchema(t, dsn, schema)
			mu.Lock()
			schemas[s] = schema
			mu.Unlock()
			return s
		},
		OpenInstance: func(t *testing.T, st stores.Store) stores.Store {
			mu.Lock()
			schema := schemas[st]
			mu.Unlock()
			return openSchema(t, dsn, schema)
		},
		NewWakeups: func(t *testing.T) func() wake.Transport {
			channel := randomName("sluice_wake_")
			return func() wake.Transport {
				tr, err := pgnotify.Open(context.Background(), dsn, pgnotify.Options{Channel: channel, Logger: quietLogger()})
				if err != nil {
					t.Fatalf("pgnotify.Open: %v", err)
				}
				return tr
			}
		},
	})
}
