package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many concurrent calls on a few keys: each gets its own result, batches
// never mix keys, never exceed maxSize, and no more than limit batches of a
// key run at once; and calls did share batches.
func TestCombinerRoutesResults(t *testing.T) {
	const limit, maxSize = 2, 8
	var mu sync.Mutex
	running := map[string]int{}
	var batches, calls atomic.Int64
	c := newCombiner(limit, maxSize, func(ctx context.Context, key string, reqs []string) ([]string, error) {
		mu.Lock()
		running[key]++
		if running[key] > limit {
			t.Errorf("key %s: %d batches at once, limit %d", key, running[key], limit)
		}
		mu.Unlock()
		if len(reqs) > maxSize {
			t.Errorf("batch of %d, max %d", len(reqs), maxSize)
		}
		time.Sleep(time.Millisecond) // a transaction
		out := make([]string, len(reqs))
		for i, r := range reqs {
			if r[:len(key)] != key {
				t.Errorf("request %s in a batch of key %s", r, key)
			}
			out[i] = "done:" + r
		}
		mu.Lock()
		running[key]--
		mu.Unlock()
		batches.Add(1)
		calls.Add(int64(len(reqs)))
		return out, nil
	})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", g%3)
			for i := range 50 {
				req := fmt.Sprintf("%s/%d/%d", key, g, i)
				got, err := c.do(context.Background(), key, req, 1)
				if err != nil || got != "done:"+req {
					t.Errorf("do(%s) = %q, %v", req, got, err)
				}
			}
		}()
	}
	wg.Wait()
	if calls.Load() != 32*50 {
		t.Errorf("%d calls ran, want %d", calls.Load(), 32*50)
	}
	if batches.Load() >= calls.Load() {
		t.Errorf("%d batches for %d calls: nothing was combined", batches.Load(), calls.Load())
	}
	t.Logf("%d calls in %d batches", calls.Load(), batches.Load())
	// A call returns as soon as its batch is done, a moment before the
	// runner that executed it ends its turn; so the lanes are given a
	// moment to close, and a lane that never does is a leak.
	lanes := func() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.lanes) }
	if !eventually(func() bool { return lanes() == 0 }) {
		t.Errorf("%d lanes left 5 s after every call returned", lanes())
	}
}

// A batch's error reaches every call in it; a caller that gives up gets its
// context's error, its call never runs, and the others still get their
// results.
func TestCombinerErrorsAndCancel(t *testing.T) {
	boom := errors.New("boom")
	release := make(chan struct{})
	var ranMu sync.Mutex
	var ran []int
	c := newCombiner(1, 100, func(ctx context.Context, key string, reqs []int) ([]int, error) {
		ranMu.Lock()
		ran = append(ran, reqs...)
		ranMu.Unlock()
		if reqs[0] == 0 {
			<-release // hold the lane so that the next calls queue up
			return []int{0}, nil
		}
		for _, r := range reqs {
			if r == 99 {
				return nil, boom
			}
		}
		return reqs, nil
	})
	first := make(chan error, 1)
	go func() {
		_, err := c.do(context.Background(), "k", 0, 1)
		first <- err
	}()
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.lanes["k"] != nil && c.lanes["k"].running == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := c.do(ctx, "k", 1, 1)
		gaveUp <- err
	}()
	errs := make(chan error, 2)
	for _, r := range []int{2, 99} {
		go func() {
			_, err := c.do(context.Background(), "k", r, 1)
			errs <- err
		}()
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.lanes["k"].pending) == 3 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled call: %v, want context.Canceled", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first call: %v", err)
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Errorf("call in the failing batch: %v, want boom", err)
		}
	}
	ranMu.Lock()
	defer ranMu.Unlock()
	for _, r := range ran {
		if r == 1 {
			t.Errorf("the call whose caller gave up while queued ran (calls run: %v)", ran)
		}
	}
}

// A caller that gives up while its call's batch runs gets the batch's
// outcome, not its context's error: the batch may commit, and what it
// committed must be reported (a send's wake-ups, a hand-off's claim).
func TestCombinerCallerLeavingARunningBatchGetsItsOutcome(t *testing.T) {
	running, release := make(chan struct{}), make(chan struct{})
	c := newCombiner(1, 100, func(ctx context.Context, key string, reqs []int) ([]int, error) {
		close(running)
		<-release
		return reqs, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		res int
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := c.do(ctx, "k", 7, 1)
		got <- answer{res, err}
	}()
	<-running
	cancel()
	select {
	case a := <-got:
		t.Fatalf("the call answered (%d, %v) while its batch still ran", a.res, a.err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if a := <-got; a.err != nil || a.res != 7 {
		t.Errorf("the call whose caller left while its batch ran answered (%d, %v), want the batch's (7, nil)", a.res, a.err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatal("condition not reached in 5 s")
	}
}

// eventually polls cond for up to 5 s and reports whether it held.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
