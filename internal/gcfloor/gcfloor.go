// Package gcfloor lets a server's heap grow to a floor before the Go
// runtime collects it.
//
// With a database store a server keeps a few MiB of live heap (the
// messages are in the database), and the runtime's default pacing
// (GOGC=100) collects whenever the heap has doubled since the last
// collection: on PostgreSQL at FIFO batch 1, about ten collections a
// second and 8 % of the server's CPU. With a floor, the heap goal is at
// least the floor: after each collection GOGC is set so that the next one
// comes when the heap reaches it, and back to 100 once the live heap is
// half the floor or more, so a store that keeps a large heap (mem://,
// embedded) is collected as by default and never held to more than
// twice its live heap.
//
// An operator who sets GOGC or GOMEMLIMIT keeps the runtime's pacing:
// Start then does nothing.
package gcfloor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Default is the floor the servers use: a fraction of the smallest memory
// a function is given (128 MiB on AWS Lambda).
const Default = 32 << 20

const (
	liveMetric = "/gc/heap/live:bytes"
	maxPercent = 10000 // GOGC when the live heap is tiny
	retune     = 0.05  // a change of GOGC smaller than this is not made (each is a stop of the world)
)

var (
	mu      sync.Mutex
	floor   uint64
	percent = 100 // what this package set last
	started bool
)

// Start holds the heap goal at floor bytes or more for the rest of the
// process, unless the environment sets GOGC or GOMEMLIMIT. It reports
// whether it did. Later calls change the floor.
func Start(bytes uint64) bool {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return false
	}
	mu.Lock()
	floor = bytes
	first := !started
	started = true
	mu.Unlock()
	tune()
	if first {
		arm()
	}
	return true
}

// arm has tune run after the next collection, and arm again then.
func arm() {
	sentinel := new([16]byte) // not a tiny allocation, which may never be collected alone
	runtime.AddCleanup(sentinel, func(struct{}) {
		tune()
		arm()
	}, struct{}{})
}

// tune sets GOGC from the live heap of the last collection.
func tune() {
	s := []metrics.Sample{{Name: liveMetric}}
	metrics.Read(s)
	var live uint64
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = s[0].Value.Uint64()
	}
	mu.Lock()
	defer mu.Unlock()
	want := Percent(live, floor)
	if math.Abs(float64(want-percent)) <= retune*float64(percent) {
		return
	}
	percent = want
	debug.SetGCPercent(want)
}

// Percent is the GOGC that puts the next collection at floor bytes of heap
// after one that left live bytes, and never below the default of 100.
func Percent(live, floor uint64) int {
	if live == 0 || 2*live >= floor {
		return 100
	}
	p := float64(floor)/float64(live)*100 - 100
	return int(min(p, maxPercent))
}
