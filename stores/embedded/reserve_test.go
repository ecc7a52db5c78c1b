package embedded

import (
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A fold allocates pages for the records it writes and its mark of the
// generation, and none for the reserve: before the reserve had a bucket of
// its own, the mark (a key beside it in the meta bucket) rewrote its leaf,
// the reserve's 4 MiB with it, at every fold.
func TestFoldLeavesTheReserveAlone(t *testing.T) {
	oldF, oldU := foldBytes, foldUpdate
	t.Cleanup(func() { foldBytes, foldUpdate = oldF, oldU })
	foldBytes = 16 << 10
	parts := make(chan int64, 1000) // bytes of pages each fold transaction allocated
	foldUpdate = func(db *bolt.DB, fn func(*bolt.Tx) error) error {
		before := db.Stats()
		err := oldU(db, fn)
		after := db.Stats()
		parts <- after.TxStats.GetPageAlloc() - before.TxStats.GetPageAlloc()
		return err
	}
	s := open(t, t.TempDir())
	defer s.Close()
	createQueue(t, s, "q", false, t0)
	for i := 0; len(parts) < 3; i++ {
		if i == 5000 {
			t.Fatalf("%d sends folded %d times, want 3", i, len(parts))
		}
		send(t, s, "q", at(sec), "", fmt.Sprint("m", i))
	}
	for range 3 {
		if allocated := <-parts; allocated >= int64(reserveSize)/4 {
			t.Fatalf("a fold of a %d-byte generation allocated %d bytes of pages; the reserve is %d", foldBytes, allocated, reserveSize)
		}
	}
}

// oldReserveLayout moves the reserve of the store in dir, closed, where
// builds before its bucket kept it: among the meta bucket's keys.
func oldReserveLayout(t *testing.T, dir string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(reserveBucket); err != nil {
			return err
		}
		return tx.Bucket(metaBucket).Put(reserveKey, make([]byte, reserveSize))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reserveIn says how many bytes of reserve db holds in the meta bucket and
// in the reserve's own.
func reserveIn(t *testing.T, db *bolt.DB) (meta, own int) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		meta = len(tx.Bucket(metaBucket).Get(reserveKey))
		if b := tx.Bucket(reserveBucket); b != nil {
			own = len(b.Get(reserveKey))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return meta, own
}

// A store written by an older build, its reserve in the meta bucket, has
// it moved to its own bucket when it opens with room to write it.
func TestReserveMovesOutOfTheMetaBucket(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	createQueue(t, s, "q", false, t0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	oldReserveLayout(t, dir)
	s = open(t, dir)
	defer s.Close()
	send(t, s, "q", at(sec), "", "m")
	if meta, own := reserveIn(t, s.db); meta != 0 || own != reserveSize {
		t.Fatalf("reopened: %d bytes of reserve in meta, %d in its bucket; want 0 and %d", meta, own, reserveSize)
	}
}
