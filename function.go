// Package sluice is sluice's Google Cloud Function (2nd gen): deploy the
// repository's root with the entry point Sluice (see
// docs/cloudfunctions.md). Google's Go buildpack builds the package at the
// root of the uploaded source and generates a main that imports it and
// starts the Functions Framework; init registers the function with the
// Framework by name, and the stores a function can use register their URL
// schemes (stores/registry).
//
// The package is at the module's root because the buildpack looks for the
// function nowhere else; its code and tests are in functions/cloudfunction.
// The buildpack parses every .go file here, _test.go files too, and fails
// on a second package name: a test here would have to be in package
// sluice, never sluice_test.
package sluice

import (
	"os"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/sluicehq/sluice/functions/app"
	"github.com/sluicehq/sluice/functions/cloudfunction"

	// The stores of a function: the embedded store needs a disk that
	// outlives the instance, which a function does not have.
	_ "github.com/sluicehq/sluice/stores/firestore" // firestore://PROJECT[/DATABASE]
	_ "github.com/sluicehq/sluice/stores/memstore"  // mem://, for tests: one instance's memory
	_ "github.com/sluicehq/sluice/stores/pgstore"   // postgres://, postgresql://
	_ "github.com/sluicehq/sluice/stores/spanner"   // spanner://projects/P/instances/I/databases/D

	_ "github.com/sluicehq/sluice/stores/wake/fslisten" // SLUICE_WAKEUPS firestore://
	_ "github.com/sluicehq/sluice/stores/wake/pgnotify" // SLUICE_WAKEUPS postgres://
	_ "github.com/sluicehq/sluice/stores/wake/pubsub"   // SLUICE_WAKEUPS pubsub://PROJECT/TOPIC
)

// EntryPoint is the name the function is registered under: gcloud's
// --entry-point, which the platform passes to the Framework as
// FUNCTION_TARGET.
const EntryPoint = "Sluice"

// stopGrace is what an instance that got SIGTERM gives the requests in
// flight; Cloud Run kills it 10 s after the signal.
const stopGrace = 8 * time.Second

func init() {
	fn := cloudfunction.New(cloudfunction.Options{
		Config: func() (app.Config, error) { return app.FromEnv(cloudfunction.Lookup, os.Stderr) },
	})
	fn.ExitOnSignal(stopGrace)
	functions.HTTP(EntryPoint, fn.ServeHTTP)
}
