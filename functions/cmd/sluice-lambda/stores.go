package main

// The stores a Lambda deploys. Each registers its URL schemes in init (see
// stores/registry); this list is all that decides what SLUICE_STORE can
// open. Not the embedded store (a function's disk is its own and goes away
// with it) and not Firestore (its SDK would double the binary and the cold
// start): linking_test.go holds the binary to that.
import (
	_ "github.com/sluicehq/sluice/stores/memstore" // mem://, memory:// (tests: every execution environment has its own)
	_ "github.com/sluicehq/sluice/stores/pgstore"  // postgres://, postgresql://

	_ "github.com/sluicehq/sluice/stores/wake/pgnotify" // SLUICE_WAKEUPS postgres://: LISTEN/NOTIFY
)
