// Package systemtest holds system tests of sluice: real `sluice serve`
// processes over a real PostgreSQL, or the Firestore emulator, driven over
// HTTP by the AWS SDK for Go v2. They check what only a deployment shows: several stateless instances
// acting as one queue service, an instance killed mid-load, a database
// restart under load, and bad requests leaving no partial state. Three
// tests run `sluice serve` on the embedded store instead: killed with
// SIGKILL under load, on a disk that fills up (that one mounts a tmpfs: it
// needs root, and skips without it unless CI=true), and a second process
// refused on a data directory in use.
//
// The SDK clients send bodies of their own (infra/ownbody), so that no
// answer the server sent is lost to the client and retried: the ledgers
// judge the server by what it answered.
//
// The multi-instance tests (TestThreeInstancesActAsOne,
// TestKillServingInstance) run once per shared store, as subtests
// "postgres", "firestore" and "spanner" (multiInstanceStores). The
// Firestore ones need FIRESTORE_EMULATOR_HOST (infra/scripts/firestore.sh);
// each uses a project id of its own. The Spanner ones need
// SPANNER_EMULATOR_HOST (infra/scripts/spanner.sh), a database of their own
// each, and PUBSUB_EMULATOR_HOST for their wake-ups (Pub/Sub, the default
// for spanner://), a topic of their own. Without them they skip, unless
// CI=true or SLUICE_REQUIRE_FIRESTORE=1 (SLUICE_REQUIRE_SPANNER=1), where
// they fail. TestThreeInstancesActAsOne
// also runs as "postgres+pubsub" (wakeVariants): PostgreSQL with Pub/Sub
// wake-ups instead of LISTEN/NOTIFY, on the Pub/Sub emulator
// (PUBSUB_EMULATOR_HOST, infra/scripts/pubsub.sh), a topic of its own.
//
// The PostgreSQL tests need DATABASE_URL (a PostgreSQL the tests may create and drop
// databases in); `make test-go` provides it through
// infra/scripts/postgres.sh. Without it they skip, unless CI=true or
// SLUICE_REQUIRE_POSTGRES=1, where they fail. TestPostgresRestart (a clean
// restart and a crash) starts a
// PostgreSQL cluster of its own with the same script, so restarting it does
// not disturb other tests that share DATABASE_URL.
//
// TestMain builds the sluice binary under test from this checkout, with the
// race detector when the tests run with it (SLUICE_SYSTEMTEST_RACE=0 or 1
// overrides); SLUICE_SYSTEMTEST_BIN=/path/to/sluice tests a binary built
// elsewhere instead. -short shrinks the loads.
//
// The package has no code outside its tests.
package systemtest
