package firestore

import (
	"testing"

	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/docstore/docstoretest"
)

// TestConformance runs the docstore suite on the emulator, each test on a
// project of its own (the suite closes each store).
func TestConformance(t *testing.T) {
	emulatorHost(t)
	docstoretest.RunWith(t, func(t *testing.T) docstore.Store {
		return openTest(t, DocsConfig{})
	}, docstoretest.Options{Workers: 8, Rounds: 10})
}
