package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/stores/memstore/engine"
)

// The journal.
//
// A bbolt commit syncs the file twice (its pages, then its meta page) and
// rewrites every page it touches, wherever in a bucket its record lies: a
// delete or a delivery rewrites 4 KiB to change a few bytes. So a commit
// does not go to bbolt. It is one record appended to the journal, a file
// beside the database, and one fdatasync: what the operations of the
// commit changed, each record put (its encoded value) or deleted. The
// database holds the state as of the last fold; the journal holds every
// commit since, in order, and Open replays it over the database.
//
// The journal is numbered in generations, and has two files: generation g
// is written in file g%2, from its start, over whatever an older
// generation left there. Each record carries its generation. Open replays
// the generation after the database's folded one, then the one after that,
// each record only if it is whole (its CRC-32C holds) and of the
// generation being read: a replay ends at the first torn record (a commit
// that was never acknowledged) and at the older records a generation has
// not yet written over.
//
// Once a generation holds foldBytes, the committer starts the next one in
// the other file and folds the full one in the background: in a bbolt
// transaction it writes the latest change of each record the generation
// holds into that record's bucket, and the generation as folded. Commits
// go on meanwhile. A message that was sent, received and deleted within a
// generation never reaches the database at all. A fold changes no state
// (the journal replayed over the database gives the same records before
// and after it), so a fold that fails fails no operation; it is tried
// again, and the generation after it is not folded, nor its file written
// over, before it. On a full disk a fold writes its records a few at a
// time, each part a transaction, so that the database's reserve (see
// space.go) carries it; the mark goes with the last part.
//
// A file is made 1 MiB of zeros long (its blocks allocated) and grows,
// while its first generation runs, to about foldBytes: from then on a
// commit allocates nothing on disk and its fdatasync writes data only. On
// a full disk the journal still takes receives and deletes, whose records
// fit in what the files have.

// journalNames are the journal's files inside the store's directory.
var journalNames = [2]string{"sluice.journal.0", "sluice.journal.1"}

// journalReserve is a journal file's least size (see above): room for
// thousands of deliveries and deletes.
func journalReserve() int64 { return int64(reserveSize) / 4 }

// foldBytes is how much a generation holds before it is folded. Larger
// folds write fewer records (more of them sent and deleted in between) and
// fewer pages per record; it bounds the replay on open and the journal's
// files on disk. Tests shrink it.
var foldBytes int64 = 8 << 20

// A fold writes its records foldPart at a time, each part a bbolt
// transaction, and lets the other goroutines run every foldYield records:
// on a server with one CPU, one long transaction held up the requests
// behind it (the long-poll pickup's p99 went from 3 to 20 ms). Every
// foldPauseEvery records it sleeps for foldPause instead: a goroutine that
// only yields stays runnable, and the scheduler looks for network events
// only when nothing is runnable (or every 10 ms, from sysmon), so requests
// that arrived during a fold waited for it. On a full disk a part is
// foldPartOnFullDisk records.
const (
	foldPart           = 512
	foldPartOnFullDisk = 32
	foldYield          = 16
	foldPauseEvery     = 256
	foldPause          = 50 * time.Microsecond
)

// foldRetryCommits is how many commits pass before a failed fold is tried
// again (the next generation grows past foldBytes meanwhile, if it must).
const foldRetryCommits = 100

// recordHeader: payload length (4), CRC-32C of generation and payload (4),
// generation (8), little-endian.
const recordHeader = 16

var (
	foldedKey  = []byte("folded") // in the meta bucket: the last folded generation
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// recordKey names a record across kinds.
type recordKey struct {
	kind engine.Kind
	key  string
}

// sortedKeys are the keys of m by kind (in the order of engine.Kinds, which
// is the kinds' numeric order), then bytewise: the order of the database's
// buckets.
func sortedKeys[V any](m map[recordKey]V) []recordKey {
	keys := make([]recordKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b recordKey) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return strings.Compare(a.key, b.key)
	})
	return keys
}

// generation is the account of one generation of the journal: its file,
// where its next record goes, and each record's last change in it (its
// encoded value, or nil for a delete), but for the messages it stored new
// and deleted again (account).
type generation struct {
	f      *os.File
	gen    uint64
	off    int64
	size   int64 // the file's size
	latest map[recordKey][]byte
	// born are the keys of the messages stored new in this generation
	// (their key's first change in it) and not deleted before the record
	// being accounted (account). A replayed generation has none.
	born map[string]struct{}
	// direct is f opened for direct writes (direct.go), nil where the file
	// system cannot; tail is what the block off falls in holds before off,
	// and buf the aligned buffer direct writes are made in.
	direct    *os.File
	tail, buf []byte
	scratch   []byte // where commit builds a record, reused
}

// journal is the committer's account of the journal: the generation being
// written and, until its fold commits, the one before it. It is rebuilt
// from disk on open and after a failed commit, and kept by the committer's
// goroutine alone (a fold running in the background reads its generation,
// which nobody writes meanwhile).
type journal struct {
	files   [2]*os.File
	directs [2]*os.File // the files opened for direct writes, or nil
	cur     *generation
	folding *generation // nil once folded
}

func (j *journal) close() error {
	errs := []error{j.files[0].Close(), j.files[1].Close()}
	for _, f := range j.directs {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// rotate starts the generation after cur in the other file; cur is to be
// folded. Call it only when the generation before cur is folded.
func (j *journal) rotate() {
	next := j.cur.gen + 1
	f := j.files[next%2]
	size := int64(0)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	var direct *os.File
	if j.cur.direct != nil { // not once a direct write was refused
		direct = j.directs[next%2]
	}
	j.folding = j.cur
	// Sized for as many records as the one before held: the map grows to
	// thousands within a generation, and its growth was about a quarter of
	// what its inserts cost (perf, Standard batches of 10).
	latest := make(map[recordKey][]byte, len(j.cur.latest))
	j.cur = &generation{f: f, gen: next, size: size, latest: latest, direct: direct}
}

// appendEntry appends one change of a record: its kind, its key and its
// encoded value (empty for a delete), each length first.
func appendEntry(b []byte, kind engine.Kind, key, value []byte) []byte {
	b = append(b, byte(kind))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

// nextEntry decodes the change at the start of p and returns the rest.
func nextEntry(p []byte) (kind engine.Kind, key, value, rest []byte, err error) {
	if len(p) < 1 {
		return 0, nil, nil, nil, io.ErrUnexpectedEOF
	}
	kind, p = engine.Kind(p[0]), p[1:]
	field := func() ([]byte, error) {
		n, w := binary.Uvarint(p)
		if w <= 0 || uint64(len(p)-w) < n {
			return nil, io.ErrUnexpectedEOF
		}
		f := p[w : w+int(n)]
		p = p[w+int(n):]
		return f, nil
	}
	if key, err = field(); err != nil {
		return 0, nil, nil, nil, err
	}
	if value, err = field(); err != nil {
		return 0, nil, nil, nil, err
	}
	return kind, key, value, p, nil
}

// checkKey refuses now what bbolt would refuse when a fold wrote the
// record: a fold that failed on it would fail every time after.
func checkKey(ch engine.Change) error {
	switch {
	case len(ch.Key) == 0:
		return fmt.Errorf("%s record: %w", ch.Kind, bolterrors.ErrKeyRequired)
	case len(ch.Key) > bolt.MaxKeySize:
		return fmt.Errorf("%s record %.40q…: %w", ch.Kind, ch.Key, bolterrors.ErrKeyTooLarge)
	}
	return nil
}

// commit appends one record of changes (values[i] is the encoded record of
// changes[i], nil for a delete; keys[i] its key) and syncs it. The account
// moves on only once the record is durable; after an error the file may
// hold a torn record past j.off, which the next record writes over.
func (j *generation) commit(changes []engine.Change, keys []recordKey, values [][]byte) error {
	rec := append(j.scratch[:0], make([]byte, recordHeader)...)
	for i, ch := range changes {
		if err := checkKey(ch); err != nil {
			return err
		}
		rec = appendEntry(rec, ch.Kind, ch.Key, values[i])
	}
	j.scratch = rec[:0] // the record is copied out by the write
	binary.LittleEndian.PutUint32(rec[0:], uint32(len(rec)-recordHeader))
	binary.LittleEndian.PutUint64(rec[8:], j.gen)
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(rec[8:], castagnoli))
	if err := j.write(rec); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.off += int64(len(rec))
	j.size = max(j.size, j.off)
	j.account(changes, keys, values)
	return nil
}

// account records a durable record's changes as the generation's latest.
// A message born in this generation (its first change here stores it new)
// and deleted again in it never reaches the database, nor does its
// delivery record: both are dropped from the account, so that a fold
// neither sorts them nor looks them up to delete. Under a steady load that
// is nearly every message. A record changed here before it was stored new
// (a queue deleted and created again reuses its numbers) keeps its delete.
func (j *generation) account(changes []engine.Change, keys []recordKey, values [][]byte) {
	if j.born == nil {
		j.born = map[string]struct{}{}
	}
	var gone []string
	for i, k := range keys {
		_, seen := j.latest[k]
		switch {
		case values[i] != nil:
			if changes[i].New && !seen && k.kind == engine.KindMessage {
				j.born[k.key] = struct{}{}
			}
			j.latest[k] = values[i]
		case k.kind == engine.KindMessage && (changes[i].New && !seen || j.isBorn(k.key)):
			// Born and deleted within this record, or born earlier.
			delete(j.latest, k)
			j.born[k.key] = struct{}{} // until the end: its delivery's delete may follow
			gone = append(gone, k.key)
		case k.kind == engine.KindDelivery && j.isBorn(k.key):
			delete(j.latest, k)
		default:
			j.latest[k] = nil
		}
	}
	for _, key := range gone {
		delete(j.born, key)
	}
}

func (j *generation) isBorn(messageKey string) bool {
	_, ok := j.born[messageKey]
	return ok
}

// write writes rec at j.off and makes it durable: one direct write where
// the file system takes them, else a write and an fdatasync. A direct
// write skips the page cache and the write-back an fdatasync runs in the
// server's time.
func (j *generation) write(rec []byte) error {
	if j.direct != nil {
		err := j.writeDirect(rec)
		if !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		j.direct = nil
	}
	if _, err := j.f.WriteAt(rec, j.off); err != nil {
		return err
	}
	return syncData(j.f)
}

// syncData is fdatasync; tests make it fail.
var syncData = fdatasync

// fits reports whether the record of these changes fits in the file after
// what the journal holds, without growing it.
func (j *generation) fits(changes []engine.Change, values [][]byte) bool {
	end := j.off + recordHeader
	for i, ch := range changes {
		end += 1 + 2*binary.MaxVarintLen64 + int64(len(ch.Key)+len(values[i]))
	}
	if j.direct != nil {
		end = (end + directBlock - 1) &^ (directBlock - 1)
	}
	return end <= j.size
}

// due reports whether the generation holds enough to be folded.
func (j *generation) due() bool { return j.off >= foldBytes }

// fold writes the generation's latest changes into the records' buckets
// and marks it folded, in transactions of up to part writes each, the last
// of which marks it. A delete of a record the database does not hold
// writes nothing and does not count (most messages stored and deleted
// within the generation are not in its account: see account). It returns how many
// transactions it committed. It only reads g.
func fold(db *bolt.DB, g *generation, part int) (commits uint64, err error) {
	keys := sortedKeys(g.latest)
	next := 0 // the first key the next transaction writes
	for {
		last := false
		err := foldUpdate(db, func(tx *bolt.Tx) error {
			for wrote, seen := 0, 0; next < len(keys) && wrote < part; next++ {
				k := keys[next]
				changed, err := writeRecord(tx, k, g.latest[k])
				if err != nil {
					return err
				}
				if changed {
					wrote++
				}
				switch seen++; {
				case seen%foldPauseEvery == 0:
					time.Sleep(foldPause)
				case seen%foldYield == 0:
					runtime.Gosched()
				}
			}
			if last = next == len(keys); !last {
				return nil
			}
			return tx.Bucket(metaBucket).Put(foldedKey, binary.BigEndian.AppendUint64(nil, g.gen))
		})
		if err != nil {
			return commits, err
		}
		commits++
		if last {
			return commits, nil
		}
	}
}

// foldUpdate runs a fold's transaction; tests make it fail.
var foldUpdate = (*bolt.DB).Update

// writeRecord puts value under k in its kind's bucket, or deletes k there
// when value is nil. It reports whether it changed the database: not for
// the delete of a key the bucket does not hold.
func writeRecord(tx *bolt.Tx, k recordKey, value []byte) (changed bool, err error) {
	name := bucketName(k.kind)
	b := tx.Bucket(name)
	if b == nil {
		if value == nil {
			return false, nil // nothing to delete
		}
		if b, err = tx.CreateBucket(name); err != nil {
			return false, err
		}
	}
	b.FillPercent = fillPercent(k.kind)
	if value == nil {
		// One seek: the cursor finds the key or shows it is not there.
		c := b.Cursor()
		if found, _ := c.Seek([]byte(k.key)); !bytes.Equal(found, []byte(k.key)) {
			return false, nil
		}
		err = c.Delete()
	} else {
		err = b.Put([]byte(k.key), value)
	}
	if err != nil {
		return false, fmt.Errorf("%s record %q: %w", k.kind, k.key, err)
	}
	return true, nil
}

// fillPercent is how full bbolt fills the pages it splits in the bucket of
// kind k. Messages, their deliveries and dedup markers are keyed in the
// order they are written, so new ones land at the end of their range, and
// pages split there are not written again: filled to 90 % rather than
// bbolt's half, a fold writes about half as many pages.
func fillPercent(k engine.Kind) float64 {
	switch k {
	case engine.KindMessage, engine.KindDelivery, engine.KindDedup:
		return 0.9
	}
	return bolt.DefaultFillPercent
}

// folded is the database's last folded generation (0: none).
func folded(tx *bolt.Tx) uint64 {
	if v := tx.Bucket(metaBucket).Get(foldedKey); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// openJournal opens (creating if needed) the journal's files in dir and
// replays, through apply (value empty for a delete), the generations after
// folded, the database's last folded one. A new file is made whole (zeros
// to journalReserve, synced, and its directory entry synced) before it is
// used.
// journalEnd is where the journal's durable records end, when the
// committer knows it better than the files do (after a failed commit):
// replay reads generation gen up to off and no later generation.
type journalEnd struct {
	gen uint64
	off int64
	set bool
}

// bound is how far replay may read generation gen: up to e.off in e.gen,
// nothing in a later one, all of it (-1) when e is not set.
func (e journalEnd) bound(gen uint64) int64 {
	switch {
	case !e.set || gen < e.gen:
		return -1
	case gen == e.gen:
		return e.off
	}
	return 0
}

func openJournal(dir string, folded uint64, end journalEnd, apply func(k recordKey, value []byte) error) (*journal, error) {
	j := &journal{}
	for i, name := range journalNames {
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			f, err = createJournal(dir, path)
		}
		if err != nil {
			if i == 1 {
				j.files[0].Close()
				if j.directs[0] != nil {
					j.directs[0].Close()
				}
			}
			return nil, fmt.Errorf("journal: %w", err)
		}
		j.files[i] = f
		j.directs[i] = openDirect(path)
	}
	var gens [2]*generation
	for i := range gens {
		gen := folded + 1 + uint64(i)
		g := &generation{f: j.files[gen%2], gen: gen, latest: map[recordKey][]byte{}, direct: j.directs[gen%2]}
		if err := g.replay(end.bound(gen), apply); err != nil {
			j.close()
			return nil, fmt.Errorf("journal %s: %w", g.f.Name(), err)
		}
		if err := g.loadTail(); err != nil {
			j.close()
			return nil, fmt.Errorf("journal %s: %w", g.f.Name(), err)
		}
		gens[i] = g
	}
	if gens[1].off > 0 || end.set && end.gen == gens[1].gen {
		// A crash during the fold of the first: fold it again. Or a
		// commit failed as the second's first record: the next one goes
		// over it there, since a record left whole at the start of the
		// second would be replayed after everything written in the first
		// meanwhile.
		j.folding, j.cur = gens[0], gens[1]
	} else {
		j.cur = gens[0]
	}
	return j, nil
}

func createJournal(dir, path string) (*os.File, error) {
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < journalReserve(); off += int64(len(zeros)) {
		n := min(int64(len(zeros)), journalReserve()-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			f.Close()
			os.Remove(tmp)
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	// Opened again under its name, which errors then give (f's is tmp's).
	f.Close()
	return os.OpenFile(path, os.O_RDWR, 0)
}

// replay reads the records of j.gen from the file's start and applies
// them, and sets where the next record goes and what the generation holds.
// It reads no record that ends past bound, unless bound is negative.
func (j *generation) replay(bound int64, apply func(k recordKey, value []byte) error) error {
	st, err := j.f.Stat()
	if err != nil {
		return err
	}
	j.size = st.Size()
	var hdr [recordHeader]byte
	for {
		if _, err := j.f.ReadAt(hdr[:], j.off); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[0:]))
		if binary.LittleEndian.Uint64(hdr[8:]) != j.gen || n == 0 {
			return nil // older records, or none yet
		}
		if n > j.size-j.off-recordHeader {
			return nil // a torn header
		}
		if bound >= 0 && j.off+recordHeader+n > bound {
			return nil // past the last durable record
		}
		rec := make([]byte, 8+n)
		copy(rec, hdr[8:])
		if _, err := j.f.ReadAt(rec[8:], j.off+recordHeader); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // torn at the end of the file
			}
			return err
		}
		if crc32.Checksum(rec, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
			return nil // torn: never acknowledged
		}
		for p := rec[8:]; len(p) > 0; {
			kind, key, value, rest, err := nextEntry(p)
			if err != nil {
				return fmt.Errorf("record at %d: %w", j.off, err)
			}
			k := recordKey{kind, string(key)}
			if err := apply(k, value); err != nil {
				return fmt.Errorf("record at %d: %w", j.off, err)
			}
			if len(value) == 0 {
				j.latest[k] = nil
			} else {
				j.latest[k] = bytes.Clone(value)
			}
			p = rest
		}
		j.off += recordHeader + n
	}
}
