package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
	"github.com/sluicehq/sluice/stores/rules"
)

// snapshot copies the store's files as a crash would leave them: the
// database as of its last commit, the journal as written so far. Call it
// while nothing commits.
func snapshot(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range append([]string{FileName}, journalNames[:]...) {
		b, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// storedIDs claims every message of queue at now.
func storedIDs(t *testing.T, s *Store, queue string, now time.Time) []string {
	t.Helper()
	ids := claimedIDs(claim(t, s, queue, now, 100, "check", ""))
	slices.Sort(ids)
	return ids
}

// A store reopened on a journal goes on writing in the block its last
// record ended in; a direct write rewrites that block whole, so it must
// hold the records before it as they are: after a second crash all are
// replayed. (Where the file system refuses direct writes, this holds for
// the plain writes instead.)
func TestJournalGoesOnInItsLastBlock(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	createQueue(t, s, "q", false, t0)
	send(t, s, "q", t0, "", "m1")
	send(t, s, "q", t0, "", "m2")
	if s.c.j.cur.off%directBlock == 0 {
		t.Fatalf("the last record ends at a block's end (%d): make the messages another size", s.c.j.cur.off)
	}
	t.Logf("direct writes: %v", s.c.j.cur.direct != nil)
	crashed := snapshot(t, dir)

	r := open(t, crashed)
	defer r.Close()
	send(t, r, "q", at(sec), "", "m3")
	again := snapshot(t, crashed)
	a := open(t, again)
	defer a.Close()
	if got := storedIDs(t, a, "q", at(100*sec)); !slices.Equal(got, []string{"m1", "m2", "m3"}) {
		t.Fatalf("after a restart, a commit and a second crash: %q, want m1 m2 m3", got)
	}
}

// A torn record at the journal's end (a commit the crash cut short, which
// nobody was told of) is not replayed, nor anything after it; the records
// before it are, and the next commit writes over it.
func TestJournalStopsAtATornRecord(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	createQueue(t, s, "q", false, t0)
	for _, id := range []string{"m1", "m2", "m3"} {
		send(t, s, "q", t0, "", id)
	}
	lastStart := s.c.j.cur.off // the next record: m4's
	send(t, s, "q", t0, "", "m4")
	lastEnd := s.c.j.cur.off
	crashed := snapshot(t, dir)

	f, err := os.OpenFile(filepath.Join(crashed, journalNames[1]), os.O_RDWR, 0) // generation 1's
	if err != nil {
		t.Fatal(err)
	}
	mid := lastStart + (lastEnd-lastStart)/2
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, mid); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, mid); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r := open(t, crashed)
	if r.c.j.cur.off != lastStart {
		t.Fatalf("the next record goes at %d, want %d (over the torn one)", r.c.j.cur.off, lastStart)
	}
	if got := storedIDs(t, r, "q", at(100*sec)); !slices.Equal(got, []string{"m1", "m2", "m3"}) {
		t.Fatalf("after a torn last record: %q, want m1 m2 m3", got)
	}
	send(t, r, "q", at(200*sec), "", "m5")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = open(t, crashed)
	defer r.Close()
	if got := storedIDs(t, r, "q", at(300*sec)); !slices.Equal(got, []string{"m1", "m2", "m3", "m5"}) {
		t.Fatalf("after a commit over the torn record and a restart: %q", got)
	}
}

// A generation is written from its file's start, over the records of the
// generation two before it, which a fold put in the database: a restart
// replays only the current generation's records, over the database, and
// none of the older ones left behind them.
func TestJournalReplaysOnlyItsGeneration(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for g := range 2 { // generation 1 in file 1, generation 2 in file 0
		s := open(t, dir)
		if g == 0 {
			createQueue(t, s, "q", false, t0)
		}
		for i := range 30 {
			id := fmt.Sprintf("m%d-%02d", g, i)
			send(t, s, "q", t0, "", id)
			want = append(want, id)
		}
		if err := s.Close(); err != nil { // folds
			t.Fatal(err)
		}
	}
	s := open(t, dir)
	defer s.Close()
	if s.c.j.cur.gen != 3 || s.c.j.cur.off != 0 || s.c.j.folding != nil {
		t.Fatalf("after two folds: generation %d at offset %d (one folding: %v); want 3 at 0", s.c.j.cur.gen, s.c.j.cur.off, s.c.j.folding != nil)
	}
	// Generation 3 writes over the start of generation 1's records in file
	// 1: a delete of a message a fold put in the database, and a send.
	c := claim(t, s, "q", at(sec), 1, "T", "")
	outs := must(s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: "q",
		Receipts: []stores.Receipt{{MessageID: c.Messages[0].ID, Token: "T"}}, Now: at(sec)}))
	if outs.Outcomes[0] != stores.ReceiptCurrent {
		t.Fatalf("delete: %v", outs.Outcomes[0])
	}
	send(t, s, "q", at(sec), "", "new")
	want = append(slices.DeleteFunc(want, func(id string) bool { return id == c.Messages[0].ID }), "new")
	slices.Sort(want)
	r := open(t, snapshot(t, dir))
	defer r.Close()
	if r.c.j.cur.gen != 3 || r.c.j.cur.off != s.c.j.cur.off {
		t.Fatalf("replayed generation %d to offset %d, want 3 to %d", r.c.j.cur.gen, r.c.j.cur.off, s.c.j.cur.off)
	}
	if got := storedIDs(t, r, "q", at(100*sec)); !slices.Equal(got, want) {
		t.Fatalf("after a crash: %q, want %q", got, want)
	}
}

// A fold that keeps failing (for another reason than space) fails no
// operation, and the store says so in Health until a fold succeeds; what
// was acknowledged meanwhile survives a restart.
func TestFailingFoldShowsInHealth(t *testing.T) {
	failing := failingFolds(t)
	dir := t.TempDir()
	s := open(t, dir)
	createQueue(t, s, "q", false, t0)
	n := 0
	sendUntil := func(what string, done func(error) bool) error {
		t.Helper()
		for range 2000 {
			send(t, s, "q", at(sec), "", fmt.Sprint("m", n))
			n++
			if err := s.Health(ctx); done(err) {
				return err
			}
		}
		t.Fatalf("%s: not after %d sends", what, n)
		return nil
	}
	err := sendUntil("health reports the failing folds", func(err error) bool { return err != nil })
	if !errors.Is(err, stores.ErrUnavailable) || !strings.Contains(err.Error(), "could not be folded") || !strings.Contains(err.Error(), "injected fold failure") {
		t.Fatalf("health while folds fail: %v; want ErrUnavailable naming the fold and its cause", err)
	}
	failing.Store(false)
	sendUntil("health recovers once a fold succeeds", func(err error) bool { return err == nil })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	if st := must(s.QueueStats(ctx, &stores.QueueStatsParams{Name: "q", Now: at(2 * sec)})); st.Visible != int64(n) {
		t.Fatalf("after a restart: %d visible, want the %d sent", st.Visible, n)
	}
}

// A fold writes each record's latest change, and deletes what the
// database holds; a delete of a record the database never held (sent and
// deleted within the generation) writes nothing and takes no room in a
// transaction: with two writes a transaction, two puts and one real delete
// among five such deletes take two transactions, not five.
func TestFoldSkipsDeletesOfRecordsNeverFolded(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "fold.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bucket := bucketName(engine.KindMessage)
	if err := db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(metaBucket); err != nil {
			return err
		}
		b, err := tx.CreateBucket(bucket)
		if err != nil {
			return err
		}
		return b.Put([]byte("folded-before"), []byte("old"))
	}); err != nil {
		t.Fatal(err)
	}
	g := &generation{gen: 7, latest: map[recordKey][]byte{
		{engine.KindMessage, "folded-before"}: nil,
		{engine.KindMessage, "new-1"}:         []byte("v1"),
		{engine.KindMessage, "new-2"}:         []byte("v2"),
	}}
	for i := range 5 {
		g.latest[recordKey{engine.KindMessage, fmt.Sprintf("gone-%d", i)}] = nil
	}
	commits, err := fold(db, g, 2)
	if err != nil {
		t.Fatal(err)
	}
	if commits != 2 {
		t.Errorf("fold committed %d transactions, want 2 (three writes, two a transaction)", commits)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		var got []string
		if err := tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			got = append(got, string(k)+"="+string(v))
			return nil
		}); err != nil {
			return err
		}
		if want := []string{"new-1=v1", "new-2=v2"}; !slices.Equal(got, want) {
			t.Errorf("after the fold the bucket holds %v, want %v", got, want)
		}
		if f := folded(tx); f != 7 {
			t.Errorf("folded generation %d, want 7", f)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A message sent and deleted within one generation leaves nothing for the
// fold to do, but a queue deleted and created again gives out its sequence
// numbers again: the new message takes the key of one the database holds,
// and that one's delete must still reach the database. Checked after a
// fold (Close) and after a crash (the journal replayed).
func TestReusedMessageKeyKeepsTheEarlierDelete(t *testing.T) {
	for _, crash := range []bool{false, true} {
		dir := t.TempDir()
		s := open(t, dir)
		createQueue(t, s, "q", false, t0)
		send(t, s, "q", t0, "", "old")
		if err := s.Close(); err != nil { // folds: the database holds "old"
			t.Fatal(err)
		}
		s = open(t, dir)
		must(0, s.QueueDelete(ctx, &stores.QueueDeleteParams{Name: "q", Now: at(sec)}))
		createQueue(t, s, "q", false, at(2*sec))
		send(t, s, "q", at(2*sec), "", "new")
		c := claim(t, s, "q", at(3*sec), 10, "T", "")
		if ids := claimedIDs(c); !slices.Equal(ids, []string{"new"}) {
			t.Fatalf("claimed %q, want [new]", ids)
		}
		outs := must(s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: "q",
			Receipts: []stores.Receipt{{MessageID: "new", Token: "T"}}, Now: at(3 * sec)}))
		if outs.Outcomes[0] != stores.ReceiptCurrent {
			t.Fatalf("delete: %v", outs.Outcomes[0])
		}
		// The new message took the old one's number, and its key's account
		// is the delete.
		key := recordKey{engine.KindMessage, string((&engine.MessageRecord{Queue: "q", Seq: rules.FirstSequence}).Key())}
		if v, ok := s.c.j.cur.latest[key]; !ok || v != nil {
			t.Fatalf("the generation's account of the reused key: %q (held: %v), want a delete", v, ok)
		}
		var r *Store
		if crash {
			r = open(t, snapshot(t, dir))
			s.Close()
		} else {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			r = open(t, dir)
		}
		if got := storedIDs(t, r, "q", at(100*sec)); len(got) != 0 {
			t.Errorf("crash %v: the queue holds %q after its only message was deleted", crash, got)
		}
		r.Close()
	}
}

// Messages sent, received and deleted within one generation leave nothing
// in its account (neither their records nor their deliveries), so that its
// fold has nothing to sort or look up for them; a message still stored
// keeps both.
func TestSentAndDeletedMessagesLeaveNoAccount(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	createQueue(t, s, "q", false, t0)
	for i := range 20 {
		send(t, s, "q", t0, "", fmt.Sprint("m", i))
	}
	c := claim(t, s, "q", at(sec), 20, "T", "")
	var receipts []stores.Receipt
	for _, m := range c.Messages[:19] {
		receipts = append(receipts, stores.Receipt{MessageID: m.ID, Token: "T"})
	}
	must(s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: "q", Receipts: receipts, Now: at(sec)}))
	kinds := map[engine.Kind]int{}
	for k := range s.c.j.cur.latest {
		kinds[k.kind]++
	}
	if kinds[engine.KindMessage] != 1 || kinds[engine.KindDelivery] != 1 {
		t.Fatalf("the generation accounts for %d messages and %d deliveries, want the one message left and its delivery", kinds[engine.KindMessage], kinds[engine.KindDelivery])
	}
	if len(s.c.j.cur.born) != 1 {
		t.Fatalf("%d messages born in the generation and not deleted, want 1", len(s.c.j.cur.born))
	}
}

// A commit whose record was written but not made durable (its fdatasync
// failed) fails its callers, and the store goes on as if the record had
// never been written: it does not serve the record's changes (the file,
// read back through the page cache, may hold it whole), and it writes the
// next record where the failed one began. Written after it instead, an
// acknowledged record would be lost in a crash that found the failed
// one's pages never written back, since replay ends at the first record
// that is not whole.
func TestFailedCommitIsNeitherServedNorBuiltOn(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer func() { s.Close() }()
	createQueue(t, s, "q", false, t0)
	send(t, s, "q", t0, "", "m1")

	s.c.j.cur.direct = nil // written, then synced: the path where a sync can fail after the write
	off := s.c.j.cur.off   // where the failed record goes (the committer is idle)
	var fail atomic.Bool
	fail.Store(true)
	t.Cleanup(func() { syncData = fdatasync })
	syncData = func(f *os.File) error {
		if fail.Swap(false) {
			return fmt.Errorf("fdatasync: %w", os.ErrDeadlineExceeded) // any error: an EIO, say
		}
		return fdatasync(f)
	}
	big := strings.Repeat("x", 16<<10)
	_, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: "q", Now: t0,
		Messages: []stores.NewMessage{{ID: "m2", Body: big}}})
	if err == nil {
		t.Fatal("a send whose record was not synced succeeded")
	}
	send(t, s, "q", t0, "", "m3") // acknowledged: after the rebuild (it waits for the engine)
	if grew := s.c.j.cur.off - off; grew >= int64(len(big)) {
		t.Errorf("the journal grew by %d bytes for m3: it was written after the failed record, not over it", grew)
	}
	crashed := snapshot(t, dir)
	if got := storedIDs(t, s, "q", at(time.Hour)); !slices.Equal(got, []string{"m1", "m3"}) {
		t.Errorf("served after the failed commit: %q, want [m1 m3]", got)
	}
	r := open(t, crashed)
	defer r.Close()
	if got := storedIDs(t, r, "q", at(time.Hour)); !slices.Equal(got, []string{"m1", "m3"}) {
		t.Errorf("replayed after a crash: %q, want [m1 m3]", got)
	}
}

// A journal file made by Open goes by its own name, not the temporary one
// it was written under: errors name a file that exists.
func TestNewJournalKeepsItsName(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	for i, f := range s.c.j.files {
		if want := filepath.Join(dir, journalNames[i]); f.Name() != want {
			t.Errorf("journal file %d is named %s, want %s", i, f.Name(), want)
		}
	}
}

// failingFolds makes generations small (4 KiB) and every fold fail while
// the returned flag is set (it starts set), until the test ends.
func failingFolds(t *testing.T) *atomic.Bool {
	oldF, oldU := foldBytes, foldUpdate
	t.Cleanup(func() { foldBytes, foldUpdate = oldF, oldU })
	foldBytes = 4 << 10
	failing := new(atomic.Bool)
	failing.Store(true)
	foldUpdate = func(db *bolt.DB, fn func(*bolt.Tx) error) error {
		if failing.Load() {
			return errors.New("injected fold failure")
		}
		return oldU(db, fn)
	}
	return failing
}
