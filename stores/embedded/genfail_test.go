package embedded

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// A commit that fails as the first record of a new generation, while the
// generation before it cannot be folded: the rebuilt journal must go on in
// the new generation, over the failed record. Going on in the older one
// left that record whole at the start of the newer one's file, and a
// reopen (after a crash, or after a clean close, which folds the older
// one) replayed it after the acknowledged records written since: an
// acknowledged send that reused its sequence number was lost, and the
// refused one appeared.
func TestFailedFirstCommitOfAGenerationIsWrittenOver(t *testing.T) {
	for _, crash := range []bool{true, false} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) { failedFirstCommitOfGeneration(t, crash) })
	}
}

func failedFirstCommitOfGeneration(t *testing.T, crash bool) {
	foldFails := failingFolds(t)
	t.Cleanup(func() { syncData = fdatasync })
	dir := t.TempDir()
	s := open(t, dir)
	defer func() { s.Close() }()
	createQueue(t, s, "q", false, t0)
	whenIdle(t, s, func() { s.c.j.cur.direct = nil }) // write + fdatasync, so that the sync can fail after the write
	var want []string
	for i := 0; ; i++ {
		if gen, _ := journalAt(t, s); gen != 1 {
			break
		}
		id := fmt.Sprintf("m%03d", i)
		send(t, s, "q", t0, "", id)
		want = append(want, id)
	}
	// The committer rotated and started the (failing) fold.
	if gen, off := journalAt(t, s); gen != 2 || off != 0 {
		t.Fatalf("generation %d at %d, want 2 at 0", gen, off)
	}
	var fail atomic.Bool
	fail.Store(true)
	syncData = func(f *os.File) error {
		if fail.Swap(false) {
			return errors.New("injected fdatasync failure")
		}
		return fdatasync(f)
	}
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: "q", Now: t0,
		Messages: []stores.NewMessage{{ID: "failed", Body: "not acknowledged"}}}); err == nil {
		t.Fatal("a send whose record was not synced succeeded")
	}
	send(t, s, "q", t0, "", "acked")
	want = append(want, "acked")
	slices.Sort(want)
	gen, off := journalAt(t, s)
	t.Logf("after the failed commit: writing generation %d at %d", gen, off)
	if got := storedIDs(t, s, "q", at(time.Hour)); !slices.Equal(got, want) {
		t.Fatalf("served: %d messages, want %d", len(got), len(want))
	}
	foldFails.Store(false)
	var r *Store
	if crash {
		r = open(t, snapshot(t, dir))
	} else {
		if err := s.Close(); err != nil { // folds generation 1; generation 2's file still holds the failed record
			t.Fatal(err)
		}
		r = open(t, dir)
	}
	defer r.Close()
	got := storedIDs(t, r, "q", at(2*time.Hour))
	if !slices.Equal(got, want) {
		t.Errorf("after reopen: %d messages (want %d), has failed: %v, has acked: %v", len(got), len(want), slices.Contains(got, "failed"), slices.Contains(got, "acked"))
	}
}

// whenIdle runs f once the committer waits for work, its last commit's
// upkeep (a rotation, a fold started) done, under its lock: what f reads or
// writes of the journal is the committer's, which takes the lock again
// before it touches the journal.
func whenIdle(t *testing.T, s *Store, f func()) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.c.mu.Lock()
		idle := s.c.idle && s.c.open == nil
		if idle {
			f()
		}
		s.c.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the committer did not go idle within 5 s")
		}
	}
}

// journalAt is where the idle committer writes next.
func journalAt(t *testing.T, s *Store) (gen uint64, off int64) {
	t.Helper()
	whenIdle(t, s, func() { gen, off = s.c.j.cur.gen, s.c.j.cur.off })
	return gen, off
}
