package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// snapshot copies the store's files as a crash would leave them: the
// database as of its last commit, the journal as written so far. Call it
// while nothing commits.
func snapshot(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{FileName, journalName} {
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
	lastStart := s.c.j.off // the next record: m4's
	send(t, s, "q", t0, "", "m4")
	lastEnd := s.c.j.off
	crashed := snapshot(t, dir)

	f, err := os.OpenFile(filepath.Join(crashed, journalName), os.O_RDWR, 0)
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
	if r.c.j.off != lastStart {
		t.Fatalf("the next record goes at %d, want %d (over the torn one)", r.c.j.off, lastStart)
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

// After a fold the journal is written again from its start, over the
// records of the generation it folded: a restart replays only the new
// generation's records, over the database, and none of the older ones left
// behind them.
func TestJournalReplaysOnlyItsGeneration(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	createQueue(t, s, "q", false, t0)
	var want []string
	for i := range 40 {
		id := fmt.Sprintf("m%02d", i)
		send(t, s, "q", t0, "", id)
		want = append(want, id)
	}
	if err := s.Close(); err != nil { // folds: generation 1 is in the database
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	if s.c.j.gen != 2 || s.c.j.off != 0 {
		t.Fatalf("after a fold: generation %d, offset %d; want 2, 0", s.c.j.gen, s.c.j.off)
	}
	// Generation 2 writes over the start of generation 1's records: a
	// delete of a message the fold put in the database, and a send.
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
	if r.c.j.gen != 2 {
		t.Fatalf("replayed generation %d, want 2", r.c.j.gen)
	}
	if got := storedIDs(t, r, "q", at(100*sec)); !slices.Equal(got, want) {
		t.Fatalf("after a crash: %q, want %q", got, want)
	}
}
