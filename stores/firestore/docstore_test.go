package firestore

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/docstoretest"
)

// TestDocstoreConformance runs the docstore suite on the emulator, each test on a
// project of its own (the suite closes each store). The load is lower than
// the suite's default and the hang guard longer: the emulator locks
// pessimistically and breaks a deadlock only by a 2 s lock timeout, so
// each conflict of the concurrency tests costs seconds.
func TestDocstoreConformance(t *testing.T) {
	emulatorHost(t)
	docstoretest.RunWith(t, func(t *testing.T) docstore.Store {
		return openTest(t, DocsConfig{})
	}, docstoretest.Options{Workers: 8, Rounds: 10, Timeout: 3 * time.Minute})
}
