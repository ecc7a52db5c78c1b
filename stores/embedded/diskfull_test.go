//go:build linux

package embedded

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/stores"
)

// smallDisk mounts a tmpfs of size bytes on a new directory for the test
// and unmounts it when the test ends. It needs root; without it the test
// skips, except under CI=true, where it fails.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	dir := t.TempDir()
	err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size))
	if err != nil {
		why := fmt.Sprintf("mounting a %d-byte tmpfs (mount -t tmpfs -o size=%d tmpfs DIR) failed: %v; the disk-full tests need root", size, size, err)
		if ci {
			t.Fatal(why + " (CI=true: not skipping)")
		}
		t.Skip(why)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file in dir until the file system has no byte left, and
// returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for chunk := 1 << 16; chunk > 0; chunk /= 2 {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	if free, _ := freeBytes(dir); free != 0 {
		t.Fatalf("the disk still has %d bytes free", free)
	}
	return path
}

// smallReserve makes the stores of the test keep a reserve that fits a
// small disk, and check for space often.
func smallReserve(t *testing.T) {
	oldR, oldP, oldF := reserveSize, probeInterval, foldBytes
	reserveSize, probeInterval, foldBytes = 256<<10, 20*time.Millisecond, 256<<10
	t.Cleanup(func() { reserveSize, probeInterval, foldBytes = oldR, oldP, oldF })
}

// smallDiskDir gives the test a 4 MiB disk, and its stores a reserve that
// fits it; it returns the disk and a data directory on it.
func smallDiskDir(t *testing.T) (disk, dir string) {
	t.Helper()
	disk = smallDisk(t, 4<<20)
	smallReserve(t)
	return disk, filepath.Join(disk, "data")
}

func sendBody(s stores.Store, queue, id string, now time.Time) error {
	_, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: queue, DedupWindow: 5 * time.Minute, Now: now,
		Messages: []stores.NewMessage{{ID: id, Body: strings.Repeat("b", 1000), GroupID: "g", DedupID: id}}})
	return err
}

// wantUnavailable requires an error that wraps stores.ErrUnavailable; the
// test goes on after another error, to show what else breaks.
func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("%s: no error, want one wrapping stores.ErrUnavailable", what)
	case !errors.Is(err, stores.ErrUnavailable):
		t.Errorf("%s: %v, want an error wrapping stores.ErrUnavailable", what, err)
	}
}

// claimAll receives every visible message of queue.
func claimAll(t *testing.T, s stores.Store, queue string, now time.Time, token string) map[string]stores.ClaimedMessage {
	t.Helper()
	res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: queue, Max: 1 << 20, VisibilityTimeout: time.Minute, Token: token, Now: now})
	if err != nil {
		t.Fatalf("receive from %s: %v", queue, err)
	}
	out := map[string]stores.ClaimedMessage{}
	for _, m := range res.Messages {
		out[m.ID] = m
	}
	return out
}

func sameIDs(t *testing.T, what string, got map[string]stores.ClaimedMessage, want []string) {
	t.Helper()
	var ids []string
	for id := range got {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(ids, want) {
		t.Fatalf("%s: got %d messages, want %d\n got %v\nwant %v", what, len(ids), len(want), ids, want)
	}
}

func deleteAll(t *testing.T, s stores.Store, queue string, now time.Time, ms map[string]stores.ClaimedMessage, ids []string) {
	t.Helper()
	var rs []stores.Receipt
	for _, id := range ids {
		rs = append(rs, stores.Receipt{MessageID: id, Token: ms[id].Token})
	}
	outs, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: queue, Receipts: rs, Now: now})
	if err != nil {
		t.Fatalf("delete from %s: %v", queue, err)
	}
	for i, o := range outs.Outcomes {
		if o != stores.ReceiptCurrent {
			t.Fatalf("delete %s: outcome %v", ids[i], o)
		}
	}
}

// TestDiskFull fills the disk of a store and requires that sends then fail
// with stores.ErrUnavailable and change nothing, that everything else
// serves (reads, receives, visibility changes, deletes), also after a
// restart on the full disk, that the store takes sends again by itself
// once the disk has room, and that a restart then finds every acknowledged
// message. It runs twice: with the store watching the free space, and with
// only the failing commit to tell (the engine is then rebuilt from disk).
func TestDiskFull(t *testing.T) {
	t.Run("watching free space", func(t *testing.T) { diskFull(t, true) })
	t.Run("by failing commits", func(t *testing.T) { diskFull(t, false) })
}

func diskFull(t *testing.T, watch bool) {
	disk, dir := smallDiskDir(t)
	old, oldEvery := watchFree, checkEvery
	watchFree, checkEvery = watch, 0
	defer func() { watchFree, checkEvery = old, oldEvery }()
	s := open(t, dir)
	defer func() { s.Close() }()
	createQueue(t, s, "q", false, t0)
	createQueue(t, s, "f.fifo", true, t0)
	createQueue(t, s, "dst", false, t0) // where a move would take q's messages
	var acked, fifoAcked []string
	for i := range 40 {
		id := fmt.Sprintf("early-%d", i)
		if err := sendBody(s, "q", id, t0); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, id)
		if err := sendBody(s, "f.fifo", "f"+id, t0); err != nil {
			t.Fatal(err)
		}
		fifoAcked = append(fifoAcked, "f"+id)
	}
	if err := s.Health(ctx); err != nil {
		t.Fatalf("health before the disk is full: %v", err)
	}

	filler := fill(t, disk)
	// The file's free pages take a few more sends; then they fail.
	var refused error
	for i := 0; i < 5000 && refused == nil; i++ {
		id := fmt.Sprintf("late-%d", i)
		if refused = sendBody(s, "q", id, t0); refused == nil {
			acked = append(acked, id)
		}
	}
	wantUnavailable(t, "send on a full disk", refused)
	t.Logf("the full disk took %d sends, then: %v", len(acked)-40, refused)
	wantUnavailable(t, "health on a full disk", s.Health(ctx))
	wantUnavailable(t, "another send", sendBody(s, "f.fifo", "refused", t0))
	_, err := s.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: "new", ID: "new"}, Now: t0})
	wantUnavailable(t, "queue creation", err)
	_, err = s.MessageMove(ctx, &stores.MessageMoveParams{NewID: uuid.NewString, FromName: "q", FromID: "q-id", ToName: "dst", Max: 10, Now: t0})
	wantUnavailable(t, "message move", err)
	wantUnavailable(t, "move task creation", s.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: &stores.MoveTask{
		Handle: "h", SourceName: "q", Status: "RUNNING", StartedAt: t0, UpdatedAt: t0}}))
	if ts, err := s.MoveTaskList(ctx, &stores.MoveTaskListParams{}); err != nil || len(ts) != 0 {
		t.Fatalf("move tasks after a refused creation: %v %v", ts, err)
	}

	// Reads serve; what was refused changed nothing.
	qs, err := s.QueueList(ctx, &stores.QueueListParams{})
	if err != nil || len(qs) != 3 {
		t.Fatalf("list queues on a full disk: %d queues, %v", len(qs), err)
	}
	st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: "q", Now: t0})
	if err != nil || st.Visible != int64(len(acked)) {
		t.Fatalf("stats on a full disk: %+v %v, want %d visible", st, err, len(acked))
	}
	// Receives, visibility changes and deletes serve; what was refused is
	// not there.
	got := claimAll(t, s, "q", at(sec), "T1")
	sameIDs(t, "received on a full disk", got, acked)
	sameIDs(t, "moved on a full disk", claimAll(t, s, "dst", at(sec), "D1"), nil)
	half := acked[:len(acked)/2]
	deleteAll(t, s, "q", at(2*sec), got, half)
	if _, err := s.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: "q",
		MessageID: acked[len(acked)-1], Token: got[acked[len(acked)-1]].Token, Timeout: 0, Now: at(2 * sec)}); err != nil {
		t.Fatalf("visibility change on a full disk: %v", err)
	}
	fgot := claimAll(t, s, "f.fifo", at(sec), "F1")
	sameIDs(t, "FIFO received on a full disk", fgot, fifoAcked)
	deleteAll(t, s, "f.fifo", at(2*sec), fgot, fifoAcked[:10])
	left, fifoLeft := acked[len(acked)/2:], fifoAcked[10:]

	// A restart on the still full disk: the same, and the deliveries were
	// kept.
	if err := s.Close(); err != nil {
		t.Fatalf("close on a full disk: %v", err)
	}
	s = open(t, dir)
	wantUnavailable(t, "health after a restart on the full disk", s.Health(ctx))
	wantUnavailable(t, "send after a restart on the full disk", sendBody(s, "q", "refused-2", at(3*sec)))
	got = claimAll(t, s, "q", at(2*time.Minute), "T2")
	sameIDs(t, "received after a restart on the full disk", got, left)
	for _, id := range left {
		if n := got[id].ReceiveCount; n != 2 {
			t.Fatalf("message %s: receive count %d after a restart, want 2", id, n)
		}
	}
	deleteAll(t, s, "q", at(2*time.Minute), got, left[:len(left)/2])
	left = left[len(left)/2:]
	fgot = claimAll(t, s, "f.fifo", at(2*time.Minute), "F2")
	sameIDs(t, "FIFO received after a restart on the full disk", fgot, fifoLeft)
	deleteAll(t, s, "f.fifo", at(2*time.Minute), fgot, fifoLeft[:10])
	fifoLeft = fifoLeft[10:]

	// Space returns: the store takes sends again by itself.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Health(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("still unhealthy 10s after the disk got room: %v", s.Health(ctx))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sendBody(s, "q", "after", at(3*time.Minute)); err != nil {
		t.Fatalf("send once the disk has room: %v", err)
	}
	left = append(left, "after")

	// A restart finds everything acknowledged and not deleted.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	if err := s.Health(ctx); err != nil {
		t.Fatalf("health after a restart with room: %v", err)
	}
	sameIDs(t, "after the last restart", claimAll(t, s, "q", at(10*time.Minute), "T3"), left)
	sameIDs(t, "FIFO after the last restart", claimAll(t, s, "f.fifo", at(10*time.Minute), "F3"), fifoLeft)
}

// TestRestartOnFullDisk fills the disk while the store is down: on restart
// the store must serve receives and deletes from the first request on, so
// that the queue can be drained, and refuse sends.
func TestRestartOnFullDisk(t *testing.T) {
	disk, dir := smallDiskDir(t)
	s := open(t, dir)
	createQueue(t, s, "q", false, t0)
	var acked []string
	for i := range 100 {
		id := fmt.Sprintf("m-%d", i)
		if err := sendBody(s, "q", id, t0); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, id)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fill(t, disk)
	s = open(t, dir)
	defer s.Close()
	// Drain it, a few messages at a time, as consumers do.
	for i := 0; len(acked) > 0; i++ {
		now := at(time.Duration(i) * sec)
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: "q", Max: 10, VisibilityTimeout: time.Minute, Token: fmt.Sprint("T", i), Now: now})
		if err != nil {
			t.Fatalf("receive %d after a restart on the full disk: %v", i, err)
		}
		if len(res.Messages) == 0 {
			t.Fatalf("receive %d: nothing, with %d messages left", i, len(acked))
		}
		got := map[string]stores.ClaimedMessage{}
		var ids []string
		for _, m := range res.Messages {
			got[m.ID] = m
			ids = append(ids, m.ID)
		}
		deleteAll(t, s, "q", now, got, ids)
		acked = slices.DeleteFunc(acked, func(id string) bool { _, ok := got[id]; return ok })
	}
	wantUnavailable(t, "send after a restart on the full disk", sendBody(s, "q", "refused", at(time.Hour)))
}

// TestDiskFillsUnderConcurrentSends sends from several goroutines until the
// disk is full, with only failing commits to tell: every acknowledged send
// is there, and what the store serves before a restart is what it serves
// after (no change that failed to commit stays in memory).
func TestDiskFillsUnderConcurrentSends(t *testing.T) {
	disk, dir := smallDiskDir(t)
	old := watchFree
	watchFree = false
	defer func() { watchFree = old }()
	s := open(t, dir)
	defer func() { s.Close() }()
	createQueue(t, s, "q", false, t0)
	createQueue(t, s, "f.fifo", true, t0)
	fill(t, disk)
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			fails := 0
			for i := 0; fails < 20; i++ {
				q, id := "q", fmt.Sprintf("w%d-%d", w, i)
				if w%2 == 1 {
					q = "f.fifo"
				}
				if err := sendBody(s, q, id, t0); err != nil {
					if !errors.Is(err, stores.ErrUnavailable) {
						t.Errorf("send: %v", err)
						return
					}
					fails++
					continue
				}
				mu.Lock()
				acked[q+"/"+id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	before := map[string]bool{}
	for _, q := range []string{"q", "f.fifo"} {
		for id := range claimAll(t, s, q, at(time.Hour), "T") {
			before[q+"/"+id] = true
		}
	}
	for k := range acked {
		if !before[k] {
			t.Fatalf("acknowledged %s not served", k)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	after := map[string]bool{}
	for _, q := range []string{"q", "f.fifo"} {
		for id := range claimAll(t, s, q, at(2*time.Hour), "T2") {
			after[q+"/"+id] = true
		}
	}
	if !maps.Equal(before, after) {
		t.Fatalf("served %d messages before the restart, %d after", len(before), len(after))
	}
	t.Logf("%d sends acknowledged on the filling disk; %d messages before and after the restart", len(acked), len(after))
}

// A store of an older build, its reserve in the meta bucket, that opens on
// a full disk gives that reserve up as the current layout's, and writes it
// into its own bucket once the disk has room.
func TestOldReserveOnFullDisk(t *testing.T) {
	disk, dir := smallDiskDir(t)
	s := open(t, dir)
	createQueue(t, s, "q", false, t0)
	for i := range 20 {
		if err := sendBody(s, "q", fmt.Sprint("m-", i), t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	oldReserveLayout(t, dir)
	filler := fill(t, disk)
	s = open(t, dir)
	defer func() { s.Close() }()
	wantUnavailable(t, "send on the full disk", sendBody(s, "q", "refused", at(sec)))
	if meta, own := reserveIn(t, s.db); meta != 0 || own != 0 {
		t.Fatalf("on the full disk: %d bytes of reserve in meta, %d in its bucket; want it given up", meta, own)
	}
	got := claimAll(t, s, "q", at(sec), "T")
	ids := slices.Collect(maps.Keys(got))
	if len(ids) != 20 {
		t.Fatalf("received %d messages on the full disk, want 20", len(ids))
	}
	deleteAll(t, s, "q", at(sec), got, ids)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for sendBody(s, "q", "again", at(2*sec)) != nil {
		if time.Now().After(deadline) {
			t.Fatal("sends still refused 10 s after the disk got room")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if meta, own := reserveIn(t, s.db); meta != 0 || own != reserveSize {
		t.Fatalf("with room again: %d bytes of reserve in meta, %d in its bucket; want 0 and %d", meta, own, reserveSize)
	}
}
