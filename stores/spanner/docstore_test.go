package spanner

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/docstoretest"
)

// TestDocstoreConformance runs the docstore suite on the emulator, each
// test on a database of its own. Its collections are not the protocol's,
// so they live in the Schemaless table; RunTx, reads and commits are the
// same code as for typed tables. The emulator runs one read-write
// transaction at a time and aborts the others, so the concurrency tests
// run with fewer workers.
func TestDocstoreConformance(t *testing.T) {
	emulatorHost(t)
	docstoretest.RunWith(t, func(t *testing.T) docstore.Store {
		return openTest(t, Config{})
	}, docstoretest.Options{Workers: 4, Rounds: 10, Timeout: 3 * time.Minute})
}
