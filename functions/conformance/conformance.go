// Package conformance is the shared test suite that every sluice store runs,
// in one line, from its own package tests:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{NewStore: func(t *testing.T) stores.Store { return memstore.New() }})
//	}
//
// The suite drives the store through the SQS service layer
// (functions/service), so what it checks is the behaviour a client sees on
// the wire: results, error codes, statuses and messages. Time comes from a
// Clock the tests advance, so no test sleeps through a visibility, delay,
// retention, purge, recreate or deduplication window. Only the long-poll
// tests use real time, and they never assert how long anything took.
//
// Where an expectation comes from matters, so each one says: "snapshot" is
// /work/shared/reference/aws-recorded-sqs-responses.snapshot.json (responses
// recorded against real SQS, keyed by test name), "validated" is a LocalStack
// test marked as validated against AWS without a recorded snapshot, "docs"
// is the AWS API reference or developer guide (also quoted in the botocore
// model beside the snapshot), and "design" is sluice's DESIGN.md where sluice
// promises more than AWS documents.
package conformance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
)

// Where the suite's queues live. Queue URLs are BaseURL/AccountID/name and
// ARNs arn:aws:sqs:Region:AccountID:name.
const (
	BaseURL   = "http://sluice.test"
	AccountID = "000000000000"
	Region    = "us-east-1"
)

// Harness tells the suite how to make a store.
type Harness struct {
	// NewStore returns a fresh, empty store for one test; the suite closes
	// it when the test ends.
	NewStore func(t *testing.T) stores.Store

	// OpenInstance, when set, opens another handle on the backend of st,
	// as a second server instance would (its own connections, caches and
	// background work); the suite closes it when the test ends. Unset:
	// instances share st (a store that one process owns).
	OpenInstance func(t *testing.T, st stores.Store) stores.Store

	// NewWakeups, when set, returns for one test a function that opens the
	// wake-up transport of one more instance; the transports of one test
	// reach each other and no other test's. Unset: an in-process
	// wake.Loopback per test.
	NewWakeups func(t *testing.T) func() wake.Transport

	// OpTimeout bounds every service call the suite makes (default 30s),
	// so a store that hangs fails the one call, clearly, instead of the
	// whole run at go test's timeout. It is a hang guard, never a speed
	// expectation: keep it well above the slowest call a backend makes.
	OpTimeout time.Duration

	// Areas, when set, runs only the areas of these names (as Run names
	// its subtests: "Stress", "FIFO", ...), for a test that repeats some
	// areas under other conditions. Unset: every area.
	Areas []string

	// Sequential runs the tests one at a time instead of in parallel, for
	// backends (emulators) that serialize transactions or dislike concurrent
	// load. It tunes the mechanics only; every expectation stays the same.
	Sequential bool
}

// repairInterval is how long the suite's long polls trust wake-ups before
// they check the store themselves: longer than any WaitTimeSeconds, so that
// a wake-up that never arrives fails the test that waits for it (see
// awaitWoken) instead of being covered by the check.
const repairInterval = 30 * time.Second

// defaultOpTimeout is Harness.OpTimeout unless set: longer than any long
// poll (20s) so that no correct call reaches it.
const defaultOpTimeout = 30 * time.Second

// Run runs the whole suite against the stores h makes. Each area is a
// subtest and each test in it gets its own fresh store, service and clock.
func Run(t *testing.T, h Harness) {
	if h.NewStore == nil {
		t.Fatal("conformance: Harness.NewStore is nil")
	}
	if h.OpTimeout <= 0 {
		h.OpTimeout = defaultOpTimeout
	}
	s := suite{h: h}
	areas := []struct {
		name string
		run  func(*testing.T, suite)
	}{
		{"Queues", testQueues},
		{"Attributes", testAttributes},
		{"Messages", testMessages},
		{"ReceiveFilters", testReceiveFilters},
		{"Visibility", testVisibility},
		{"ReceiptHandles", testReceiptHandles},
		{"Delay", testDelay},
		{"Retention", testRetention},
		{"Batches", testBatches},
		{"FIFO", testFIFO},
		{"Deduplication", testDeduplication},
		{"DeadLetter", testDeadLetter},
		{"MoveTasks", testMoveTasks},
		{"Purge", testPurge},
		{"Tags", testTags},
		{"Permissions", testPermissions},
		{"LongPoll", testLongPoll},
		{"WakeUps", testWakeUps},
		{"Concurrency", testConcurrency},
		{"Stress", testStress},
		{"Differential", testDifferential},
		{"Scale", testScale},
		{"StoreClock", testStoreClock},
		{"BadInputChangesNothing", testBadInput},
		{"DevSwitches", testDevSwitches},
	}
	for _, a := range areas {
		if len(h.Areas) > 0 && !slices.Contains(h.Areas, a.name) {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			s.parallel(t)
			a.run(t, s)
		})
	}
}

type suite struct{ h Harness }

func (s suite) parallel(t *testing.T) {
	if !s.h.Sequential {
		t.Parallel()
	}
}

// test runs f as a subtest on a fresh environment.
func (s suite) test(t *testing.T, name string, f func(e *env)) {
	t.Run(name, func(t *testing.T) {
		s.parallel(t)
		f(newEnv(t, s.h))
	})
}

// env is one test's world: a fresh store, a service over it and the clock
// the service reads.
type env struct {
	t     *testing.T
	h     Harness
	base  context.Context // the test's; each call gets its own, see op
	clock *Clock
	store stores.Store
	svc   *service.Service
	hub   *wake.Hub             // svc's
	join  func() wake.Transport // the transport of one more instance
	// ownClock: the services pass no clock (the store's own, real time);
	// clock is then unused.
	ownClock bool

	cancelMu sync.Mutex
	cancels  []context.CancelFunc // of op's contexts
}

func newEnv(t *testing.T, h Harness) *env { return newEnvClock(t, h, false) }

// newEnvClock is newEnv; with ownClock the services pass no clock, so the
// store uses its own (see storeclock.go).
func newEnvClock(t *testing.T, h Harness, ownClock bool) *env {
	t.Helper()
	st := h.NewStore(t)
	if st == nil {
		t.Fatal("conformance: Harness.NewStore returned nil")
	}
	e := &env{
		t:    t,
		h:    h,
		base: t.Context(),
		// Whole seconds, so CreatedTimestamp and friends are exact; near the
		// real time, so a store's own background housekeeping (which may
		// read the wall clock) does not see the suite's messages as ancient.
		clock:    NewClock(time.Now().UTC().Truncate(time.Second)),
		store:    st,
		ownClock: ownClock,
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	t.Cleanup(func() {
		e.cancelMu.Lock()
		defer e.cancelMu.Unlock()
		for _, c := range e.cancels {
			c()
		}
	})
	if h.NewWakeups != nil {
		e.join = h.NewWakeups(t)
	} else {
		lb := wake.NewLoopback()
		e.join = lb.Join
	}
	e.svc = e.instance(e.store)
	return e
}

// newService returns the Service of another instance: over another handle
// on the same backend (Harness.OpenInstance) or the same store, with the
// same clock and its own wake-up hub on the test's transport. It is shut
// down when the test ends, before the store is closed.
func (e *env) newService() *service.Service {
	st := e.store
	if e.h.OpenInstance != nil {
		st = e.h.OpenInstance(e.t, e.store)
		if st == nil {
			e.t.Fatal("conformance: Harness.OpenInstance returned nil")
		}
		e.t.Cleanup(func() {
			if err := st.Close(); err != nil {
				e.t.Errorf("closing the second instance's store: %v", err)
			}
		})
	}
	return e.instance(st)
}

func (e *env) instance(st stores.Store) *service.Service {
	hub := wake.NewHub(wake.HubOptions{Transport: e.join()})
	if e.hub == nil {
		e.hub = hub // the first instance's: e.svc
	}
	clock := e.clock.Now
	if e.ownClock {
		clock = nil
	}
	svc := service.New(service.Config{
		Store:          st,
		Region:         Region,
		AccountID:      AccountID,
		BaseURL:        BaseURL,
		Clock:          clock,
		Wakeups:        hub,
		RepairInterval: repairInterval,
	})
	// Cleanups run last-in first-out: the service stops before its hub.
	e.t.Cleanup(func() {
		if err := hub.Close(); err != nil {
			e.t.Errorf("closing the wake-up hub: %v", err)
		}
	})
	e.t.Cleanup(svc.Shutdown)
	return svc
}

// op returns the context for one service call: the test's, ending after
// Harness.OpTimeout. Its timer is released when the test ends (the call has
// long returned by then; the context only guards against a hang).
func (e *env) op() context.Context {
	ctx, cancel := context.WithTimeoutCause(e.base, e.h.OpTimeout, errOpTimeout)
	e.cancelMu.Lock()
	e.cancels = append(e.cancels, cancel)
	e.cancelMu.Unlock()
	return ctx
}

var errOpTimeout = errors.New("conformance: the call did not return within Harness.OpTimeout")

func queueURL(name string) string { return BaseURL + "/" + AccountID + "/" + name }
func queueARN(name string) string { return "arn:aws:sqs:" + Region + ":" + AccountID + ":" + name }
