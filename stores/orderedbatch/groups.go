package orderedbatch

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
	"github.com/sluicehq/sluice/stores/rules"
)

// group is a FIFO group record as a transaction works on it.
type group struct {
	key  docstore.Key
	inc  string
	gk   string
	rec  groupRec
	gen  int64
	seen bool // it exists in the queue's current generation
	// retention is the queue's: a member in flight past it is gone, so
	// the group is ready again by then.
	retention time.Duration
	// dirty: write it back at the end.
	dirty bool
}

func loadGroup(d *docstore.Doc, k docstore.Key, gk string, q *queueRec) (*group, error) {
	g := &group{key: k, inc: q.Queue.ID, gk: gk, gen: q.Gen, retention: q.Queue.Retention}
	if d == nil {
		return g, nil
	}
	if err := decode(d, &g.rec); err != nil {
		return nil, err
	}
	g.seen = true
	if fieldInt(d, fGen) > q.Gen {
		return nil, errStaleQueue // q is a cached record older than a purge
	}
	if fieldInt(d, fGen) != q.Gen {
		// Written before a purge: what it held is gone. Positions and the
		// sequence-number base carry on, so sequence numbers keep
		// increasing within the group.
		g.rec.Head, g.rec.HeadStart, g.rec.Members, g.rec.Ahead = g.rec.Tail, g.rec.Tail, nil, nil
		g.rec.Ready, g.rec.Rank = time.Time{}, 0
		g.dirty = true
	}
	return g, nil
}

func (g *group) empty() bool { return g.rec.Head == g.rec.Tail }

// member returns the member at pos, or nil.
func (g *group) member(pos int64) *member {
	i := pos - g.rec.Head
	if i < 0 || i >= int64(len(g.rec.Members)) {
		return nil
	}
	return &g.rec.Members[i]
}

// pass moves the head over deleted members at the front and returns the
// manifests it passed entirely (to delete, with their chunks).
func (g *group) pass() (gone []member) {
	for len(g.rec.Members) > 0 && g.rec.Members[0].Del {
		m := g.rec.Members[0]
		g.rec.Members = g.rec.Members[1:]
		g.rec.Head = m.Pos + 1
		if g.rec.Head >= m.End {
			g.rec.HeadStart = m.End
			gone = append(gone, m)
		} else {
			g.rec.HeadStart = m.Start
		}
	}
	if len(g.rec.Members) == 0 {
		g.rec.Members = nil
	}
	i := 0
	for i < len(g.rec.Ahead) && g.rec.Ahead[i].Start < g.rec.HeadStart {
		i++
	}
	g.rec.Ahead = g.rec.Ahead[i:]
	if len(g.rec.Ahead) == 0 {
		g.rec.Ahead = nil
	}
	return gone
}

// noteAhead remembers when the manifest at start becomes receivable, if
// there is room.
func (g *group) noteAhead(start int64, vis time.Time) {
	if len(g.rec.Ahead) < aheadMax {
		g.rec.Ahead = append(g.rec.Ahead, ahead{Start: start, Vis: vis})
	}
}

// aheadVis is when the manifest at start becomes receivable, if the group
// remembers it.
func (g *group) aheadVis(start int64) (time.Time, bool) {
	for _, a := range g.rec.Ahead {
		if a.Start == start {
			return a.Vis, true
		}
	}
	return time.Time{}, false
}

// counts are the group's remaining and in-flight messages at now.
// counts are the group's remaining messages, its members (received, not
// deleted), how many of them are in flight at now, and whether their
// visibility deadlines differ (split: then which are in flight changes
// over time, and counting reads the group).
func (g *group) counts(now time.Time) (pend, members, infl int64, split bool) {
	pend = g.rec.Tail - g.rec.Head
	var first time.Time
	for _, m := range g.rec.Members {
		if m.Del {
			pend--
			continue
		}
		if members == 0 {
			first = m.Vis
		} else if !m.Vis.Equal(first) {
			split = true
		}
		members++
		if m.Vis.After(now) {
			infl++
		}
	}
	return pend, members, infl, split
}

// settle recomputes when the group may next be claimable: when its head's
// delivery lapses, when its head's delay ends (hint, when the manifest was
// read: headVis), or now. The claim re-reads and decides; ready only
// orders and filters candidates.
func (g *group) settle(now, headVis time.Time) {
	g.dirty = true
	if g.empty() {
		g.rec.Ready, g.rec.Rank = time.Time{}, 0
		if g.rec.Idle.IsZero() {
			g.rec.Idle = now
		}
		return
	}
	g.rec.Idle = time.Time{}
	ready := headVis
	switch {
	case len(g.rec.Members) > 0:
		ready = g.rec.Members[0].Vis
		if exp, ok := rules.Expiry(g.rec.Members[0].SentAt, g.retention); ok && exp.Before(ready) {
			ready = exp
		}
	case ready.IsZero():
		ready = now
	}
	if !ready.Equal(g.rec.Ready) || g.rec.Rank == 0 {
		g.rec.Ready, g.rec.Rank = ready, rank(g.inc, ready)
	}
}

// manifestVis reads, in one get, the manifests that hold the heads of gs
// and returns their Vis: when a head never received became receivable.
// A group whose manifest is missing gets none (settle then uses now).
func (t *txn) manifestVis(inc string, gs []*group) (map[*group]time.Time, error) {
	if len(gs) == 0 {
		return nil, nil
	}
	keys := make([]docstore.Key, len(gs))
	for i, g := range gs {
		keys[i] = manifestKey(inc, g.gk, g.rec.HeadStart)
	}
	ds, err := t.get(keys...)
	if err != nil {
		return nil, err
	}
	out := make(map[*group]time.Time, len(gs))
	for i, d := range ds {
		if d == nil {
			continue
		}
		var m manifestRec
		if err := decode(d, &m); err != nil {
			return nil, err
		}
		out[gs[i]] = m.Vis
	}
	return out, nil
}

// rank orders groups by when they became ready and, within one
// microsecond, by when this process made them ready: candidates come
// oldest first, and the groups of a queue that became ready in one instant
// (a fake clock, a fast batch) come in the order they did, as on SQS.
// (Across processes, ties within a microsecond are broken by key.)
func rank(inc string, t time.Time) int64 {
	us := t.UnixMicro()
	rankMu.Lock()
	defer rankMu.Unlock()
	if len(rankSeqs) > maxRankSeqs {
		clear(rankSeqs)
	}
	k := rankKey{inc, us}
	n := rankSeqs[k]
	rankSeqs[k] = min(n+1, 1<<rankBits-1)
	return us<<rankBits | n
}

// rankUntil is the largest rank of a time: ranks at or below it are ready
// by t.
func rankUntil(t time.Time) int64 { return t.UnixMicro()<<rankBits | (1<<rankBits - 1) }

func rankTime(r int64) time.Time { return time.UnixMicro(r >> rankBits).UTC() }

const (
	rankBits    = 12
	maxRankSeqs = 4096
)

type rankKey struct {
	inc string
	us  int64
}

var (
	rankMu   sync.Mutex
	rankSeqs = map[rankKey]int64{}
)

func (g *group) fields(inc string, now time.Time) docstore.Fields {
	pend, members, _, split := g.counts(now)
	f := docstore.Fields{
		fInc: inc, fGen: g.gen, fShard: shardOf(g.gk), fPend: pend, fInfl: members, fData: encode(&g.rec),
	}
	if split {
		f[fSplit] = true
	}
	if g.rec.Rank != 0 {
		f[fReady] = g.rec.Rank
	}
	if !g.rec.Idle.IsZero() {
		f[fIdle] = g.rec.Idle
	}
	return f
}

// seq is the SequenceNumber of position pos: 20 digits, unique in the
// queue (Num is) and increasing within the group (positions are, and a
// group's next Num is larger than its last: see txn.number).
func (g *group) seq(pos int64) string {
	return fmt.Sprintf("%014d%06d", g.rec.Num, pos-g.rec.Base)
}

// seqSpan: positions one Num numbers before the group takes a new one.
const seqSpan = 1_000_000

// parseLocator reads a FIFO locator: the group key and position.
func parseLocator(l string) (gk string, pos int64, ok bool) {
	if len(l) < 34 || l[32] != '.' {
		return "", 0, false
	}
	for _, c := range []byte(l[:32]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", 0, false // not a group key we made (hashID)
		}
	}
	digits := l[33:]
	if digits[0] < '0' || digits[0] > '9' {
		return "", 0, false // no sign: locator writes none
	}
	pos, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return l[:32], pos, true
}

func locator(gk string, pos int64) string { return fmt.Sprintf("%s.%d", gk, pos) }
