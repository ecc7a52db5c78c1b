package main

// The stores this binary ships. Each registers its URL schemes in init
// (see stores/registry); the rest of the command names none of them, so
// this list is all that decides what --store can open. Wake-up transports
// register the same way, for --wakeups.
import (
	_ "github.com/sluicehq/sluice/stores/embedded"  // file://, embedded://, plain paths, the default
	_ "github.com/sluicehq/sluice/stores/firestore" // firestore://PROJECT[/DATABASE]
	_ "github.com/sluicehq/sluice/stores/memstore"  // mem://, memory://
	_ "github.com/sluicehq/sluice/stores/pgstore"   // postgres://, postgresql://
	_ "github.com/sluicehq/sluice/stores/spanner"   // spanner://projects/P/instances/I/databases/D

	_ "github.com/sluicehq/sluice/stores/wake/fslisten" // --wakeups firestore://: snapshot listeners
	_ "github.com/sluicehq/sluice/stores/wake/pgnotify" // --wakeups postgres://: LISTEN/NOTIFY
	_ "github.com/sluicehq/sluice/stores/wake/pubsub"   // --wakeups pubsub://PROJECT/TOPIC: Pub/Sub
)
