// Package fslisten is a wake.Transport over Firestore snapshot listeners:
// the default for the Firestore store, whose instances already share a
// database. Any store can use it when a Firestore database is at hand.
//
// Firestore bills a document write per publish and a document read for
// every document change each listener receives, so the transport keeps
// both at one: a publish is one write of one document, and every instance
// listens to one small collection of a fixed number of "shard" documents.
// Each shard document holds, per instance that wrote it, that instance's
// latest batch of events (a map field keyed by instance id), replaced by a
// merge write that leaves the other instances' entries alone. An instance
// picks the next shard for each publish, in turn, so its consecutive
// publishes land on different documents (a listener that only sees a
// document's latest version still sees each of them) and the write rate
// per document is the deployment's publish rate divided by the shards.
//
// A listener delivers an entry when its sequence number differs from the
// one it last saw for that instance in that document, and skips its own
// instance's entries, which its hub delivered locally. Firestore still
// bills the read of an own write, and the transport puts it to use: a
// publish whose echo does not arrive within EchoTimeout means the listener
// has gone deaf (the client library retries a broken stream silently), so
// the transport reports itself degraded and opens a fresh listener.
package fslisten

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	fs "cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
)

// Defaults of Options.
const (
	DefaultCollection  = "sluice_wake"
	DefaultShards      = 16
	DefaultEchoTimeout = 10 * time.Second
)

// maxEvents bounds the events of one entry, so that a document holding the
// entries of many instances stays far below Firestore's 1 MiB: queue names
// are at most 80 characters, so an entry is at most about 25 KB. A larger
// batch goes out as several publishes.
const maxEvents = 256

// staleAfter is how old another instance's entry must be before a publish
// to its document removes it (in the same write): instances that stopped
// leave nothing behind for long.
const staleAfter = 10 * time.Minute

// firstWait is how long a new listener may take to its first snapshot
// before the transport reports itself degraded (and NewHub goes on).
const firstWait = 3 * time.Second

// Options configure a Transport.
type Options struct {
	// Database is the Firestore database in the project; empty means
	// "(default)".
	Database string
	// Collection holds the shard documents (default DefaultCollection).
	// Instances that should wake each other use the same one; deployments
	// sharing a database are kept apart with different ones.
	Collection string
	// Shards is the number of shard documents (default DefaultShards). All
	// instances of a deployment must agree only loosely: a listener watches
	// the whole collection, whatever documents it holds.
	Shards int
	// EchoTimeout is how long a publish may wait for its own echo before
	// the listener is taken for deaf (default DefaultEchoTimeout).
	EchoTimeout time.Duration
	// ClientOptions go to the Firestore clients (credentials, endpoint...).
	// Without them: the emulator when FIRESTORE_EMULATOR_HOST is set,
	// otherwise Application Default Credentials.
	ClientOptions []option.ClientOption
	Logger        *slog.Logger
}

// Transport is a wake.Transport on one Firestore database.
type Transport struct {
	project, database string
	clientOpts        []option.ClientOption
	pub               *fs.Client // publishes; the listener has a client of its own
	coll              string
	shards            int
	echoTimeout       time.Duration
	instance          string // the map key of this instance's entries
	start             int    // the shard of seq 0, so instances start apart
	log               *slog.Logger

	mu        sync.Mutex
	seq       int64
	known     map[string]map[string]entryMeta // shard -> instance -> its entry, as the listener last saw it
	listening bool                            // the current listener has had its first snapshot
	echoes    map[int64]echo                  // own publishes whose echo has not arrived
	suspect   bool                            // a publish could not reach Firestore
	listener  *fs.Client                      // the current listener's client

	reads, writes atomic.Int64
}

type entryMeta struct {
	seq int64
	at  time.Time
}

type echo struct {
	shard string
	sent  time.Time
}

var _ wake.Transport = (*Transport)(nil)

// Open returns a Transport on the project's database. The clients connect
// lazily: an unreachable Firestore shows as a degraded transport.
func Open(ctx context.Context, project string, opts Options) (*Transport, error) {
	if project == "" {
		return nil, errors.New("fslisten: a project is required")
	}
	if opts.Database == "" {
		opts.Database = fs.DefaultDatabaseID
	}
	if opts.Collection == "" {
		opts.Collection = DefaultCollection
	}
	if opts.Shards <= 0 {
		opts.Shards = DefaultShards
	}
	if opts.EchoTimeout <= 0 {
		opts.EchoTimeout = DefaultEchoTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	pub, err := fs.NewClientWithDatabase(ctx, project, opts.Database, opts.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("fslisten: %w", err)
	}
	b := make([]byte, 8)
	_, _ = crand.Read(b)
	return &Transport{
		project: project, database: opts.Database, clientOpts: opts.ClientOptions,
		pub: pub, coll: opts.Collection, shards: opts.Shards, echoTimeout: opts.EchoTimeout,
		instance: hex.EncodeToString(b), start: int(b[0]) % opts.Shards, log: opts.Logger,
		known: map[string]map[string]entryMeta{}, echoes: map[int64]echo{},
	}, nil
}

// BilledOps is what Firestore billed this transport since it opened, by
// its pricing rules: a write per publish, and for the listener a read per
// document of each initial snapshot (at least one) and one per document
// change it received.
func (t *Transport) BilledOps() stores.BilledOps {
	return stores.BilledOps{Reads: t.reads.Load(), Writes: t.writes.Load()}
}

// Publish writes the events into the next shard document, one write per
// maxEvents events.
func (t *Transport) Publish(ctx context.Context, events []wake.Event) error {
	queues := make([]string, 0, len(events))
	counts := make([]int64, 0, len(events))
	for _, ev := range events {
		if ev.Queue != "" {
			queues = append(queues, ev.Queue)
			counts = append(counts, int64(max(ev.Count, 0)))
		}
	}
	for len(queues) > 0 {
		n := min(len(queues), maxEvents)
		if err := t.write(ctx, queues[:n], counts[:n]); err != nil {
			return err
		}
		queues, counts = queues[n:], counts[n:]
	}
	return nil
}

func (t *Transport) write(ctx context.Context, queues []string, counts []int64) error {
	now := time.Now()
	t.mu.Lock()
	t.seq++
	seq := t.seq
	shard := shardID((t.start + int(seq)) % t.shards)
	entries := map[string]any{t.instance: map[string]any{"seq": seq, "at": now, "q": queues, "n": counts}}
	paths := []fs.FieldPath{{"i", t.instance}}
	for inst, m := range t.known[shard] {
		if inst != t.instance && now.Sub(m.at) > staleAfter {
			entries[inst] = fs.Delete
			paths = append(paths, fs.FieldPath{"i", inst})
		}
	}
	// Expected before the write: the listener may hear it before Set
	// returns.
	if t.listening {
		t.echoes[seq] = echo{shard: shard, sent: now}
	}
	t.mu.Unlock()
	_, err := t.pub.Collection(t.coll).Doc(shard).Set(ctx, map[string]any{"i": entries}, fs.Merge(paths...))
	if err != nil {
		t.mu.Lock()
		delete(t.echoes, seq)
		if status.Code(err) == codes.Unavailable {
			// Firestore cannot be reached: the listener most likely
			// cannot either, and its client would retry without a word.
			t.suspect = t.listening
		}
		t.mu.Unlock()
		return fmt.Errorf("fslisten: publish: %w", err)
	}
	t.writes.Add(1)
	return nil
}

func shardID(i int) string { return "s" + strconv.Itoa(i) }

// errDeaf: a publish's echo did not arrive in time, or a publish found
// Firestore unreachable.
var errDeaf = errors.New("fslisten: own publish not heard back; reopening the listener")

// Listen runs listeners on the collection, one after the other: when one
// fails or goes deaf the transport reports itself degraded and opens the
// next, with backoff; each reports the transport healthy at its first
// snapshot (after which the hub wakes every waiter once).
func (t *Transport) Listen(ctx context.Context, r wake.Receiver) error {
	backoff := 100 * time.Millisecond
	for {
		heard, err := t.listenOnce(ctx, r)
		if ctx.Err() != nil {
			return nil
		}
		if heard {
			backoff = 100 * time.Millisecond
		}
		r.Degraded(true)
		t.log.Warn("fslisten: listener lost; reopening", "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// Close closes the publishing client.
func (t *Transport) Close() error { return t.pub.Close() }

// listenOnce runs one listener, on a client of its own, until it fails,
// goes deaf or ctx ends; heard says whether it had its first snapshot.
func (t *Transport) listenOnce(ctx context.Context, r wake.Receiver) (heard bool, err error) {
	client, err := fs.NewClientWithDatabase(ctx, t.project, t.database, t.clientOpts...)
	if err != nil {
		return false, err
	}
	defer client.Close()
	t.mu.Lock()
	t.listener = client
	t.listening = false
	t.suspect = false
	clear(t.known)
	clear(t.echoes)
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.listener = nil
		t.listening = false
		t.mu.Unlock()
	}()

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rep reporter
	slow := time.AfterFunc(firstWait, func() { rep.slow(r) })
	defer slow.Stop()
	done := make(chan error, 1)
	go func() {
		it := client.Collection(t.coll).Snapshots(lctx)
		err := t.receive(it, r, &rep)
		it.Stop()
		done <- err
	}()
	tick := time.NewTicker(max(t.echoTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return rep.wasHeard(), err
		case <-tick.C:
			if t.deaf() {
				cancel()
				<-done
				return rep.wasHeard(), errDeaf
			}
		}
	}
}

// receive reads snapshots until the iterator fails.
func (t *Transport) receive(it *fs.QuerySnapshotIterator, r wake.Receiver, rep *reporter) error {
	for {
		snap, err := it.Next()
		if err != nil {
			return err
		}
		first := !rep.wasHeard()
		if first {
			t.reads.Add(int64(max(snap.Size, 1)))
		} else {
			t.reads.Add(int64(len(snap.Changes)))
		}
		var events []wake.Event
		for _, ch := range snap.Changes {
			var entries map[string]entry
			if ch.Kind != fs.DocumentRemoved {
				entries = parseEntries(ch.Doc.Data())
			}
			events = t.absorb(ch.Doc.Ref.ID, entries, first, events)
		}
		if len(events) > 0 {
			r.Deliver(events)
		}
		if first {
			t.mu.Lock()
			t.listening = true
			t.mu.Unlock()
			rep.hear(r)
		}
	}
}

// absorb records a shard document's entries and appends the events of
// other instances' entries that changed since the listener last saw the
// document (none from the first snapshot: the hub wakes every waiter
// then). An own entry confirms the echoes of that document up to its seq.
func (t *Transport) absorb(shard string, entries map[string]entry, first bool, events []wake.Event) []wake.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.known[shard]
	next := make(map[string]entryMeta, len(entries))
	for inst, e := range entries {
		next[inst] = entryMeta{seq: e.seq, at: e.at}
		if inst == t.instance {
			for seq, ec := range t.echoes {
				if ec.shard == shard && seq <= e.seq {
					delete(t.echoes, seq)
				}
			}
			continue
		}
		if first {
			continue
		}
		if p, ok := prev[inst]; ok && p.seq == e.seq {
			continue
		}
		events = append(events, e.events...)
	}
	if len(next) == 0 {
		delete(t.known, shard)
	} else {
		t.known[shard] = next
	}
	return events
}

// deaf reports (once) whether an own publish has waited past EchoTimeout,
// or one could not reach Firestore.
func (t *Transport) deaf() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.suspect {
		t.suspect = false
		clear(t.echoes)
		return true
	}
	for _, ec := range t.echoes {
		if time.Since(ec.sent) > t.echoTimeout {
			clear(t.echoes)
			return true
		}
	}
	return false
}

// closeListener closes the current listener's client, as a lost connection
// would end it; for tests.
func (t *Transport) closeListener() bool {
	t.mu.Lock()
	c := t.listener
	t.mu.Unlock()
	if c == nil {
		return false
	}
	_ = c.Close()
	return true
}

// reporter makes one listener's first report: healthy at its first
// snapshot, or degraded if that takes longer than firstWait, never the
// second after the first.
type reporter struct {
	mu          sync.Mutex
	heard, told bool
}

func (p *reporter) slow(r wake.Receiver) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.heard && !p.told {
		p.told = true
		r.Degraded(true)
	}
}

func (p *reporter) hear(r wake.Receiver) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heard = true
	r.Degraded(false)
}

func (p *reporter) wasHeard() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heard
}

// entry is one instance's latest batch in a shard document:
// i.<instance> = {seq, at, q: [queue...], n: [count...]}.
type entry struct {
	seq    int64
	at     time.Time
	events []wake.Event
}

// parseEntries reads a shard document, skipping what it cannot read (a
// stray write costs nothing but that entry).
func parseEntries(data map[string]any) map[string]entry {
	byInst, _ := data["i"].(map[string]any)
	out := make(map[string]entry, len(byInst))
	for inst, v := range byInst {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		seq, ok := m["seq"].(int64)
		if !ok {
			continue
		}
		at, _ := m["at"].(time.Time)
		qs, _ := m["q"].([]any)
		ns, _ := m["n"].([]any)
		e := entry{seq: seq, at: at}
		for i, q := range qs {
			name, ok := q.(string)
			if !ok || name == "" {
				continue
			}
			var n int64
			if i < len(ns) {
				n, _ = ns[i].(int64)
			}
			e.events = append(e.events, wake.Event{Queue: name, Count: int(max(n, 0))})
		}
		out[inst] = e
	}
	return out
}
