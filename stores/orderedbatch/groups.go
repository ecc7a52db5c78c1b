package orderedbatch

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

// group is a FIFO group record as a transaction works on it.
type group struct {
	key  docstore.Key
	gk   string
	rec  groupRec
	gen  int64
	seen bool // it exists in the queue's current generation
	// dirty: write it back at the end.
	dirty bool
}

func loadGroup(d *docstore.Doc, k docstore.Key, gk string, q *queueRec) (*group, error) {
	g := &group{key: k, gk: gk, gen: q.Gen}
	if d == nil {
		return g, nil
	}
	if err := decode(d, &g.rec); err != nil {
		return nil, err
	}
	g.seen = true
	if fieldInt(d, fGen) != q.Gen {
		// Written before a purge: what it held is gone. Positions and the
		// sequence-number base carry on, so sequence numbers keep
		// increasing within the group.
		g.rec.Head, g.rec.HeadStart, g.rec.Members = g.rec.Tail, g.rec.Tail, nil
		g.rec.Ready = time.Time{}
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
	return gone
}

// counts are the group's remaining and in-flight messages at now.
func (g *group) counts(now time.Time) (pend, infl int64) {
	pend = g.rec.Tail - g.rec.Head
	for _, m := range g.rec.Members {
		if m.Del {
			pend--
		} else if m.Vis.After(now) {
			infl++
		}
	}
	return pend, infl
}

// settle recomputes when the group may next be claimable: when its head's
// delivery lapses, when its head's delay ends (hint, when the manifest was
// read: headVis), or now. The claim re-reads and decides; ready only
// orders and filters candidates.
func (g *group) settle(now, headVis time.Time) {
	g.dirty = true
	if g.empty() {
		g.rec.Ready = time.Time{}
		if g.rec.Idle.IsZero() {
			g.rec.Idle = now
		}
		return
	}
	g.rec.Idle = time.Time{}
	if len(g.rec.Members) > 0 {
		g.rec.Ready = g.rec.Members[0].Vis
		return
	}
	if headVis.IsZero() {
		headVis = now
	}
	g.rec.Ready = headVis
}

func (g *group) fields(inc string, now time.Time) docstore.Fields {
	pend, infl := g.counts(now)
	f := docstore.Fields{
		fInc: inc, fGen: g.gen, fShard: shardOf(g.gk), fPend: pend, fInfl: infl, fData: encode(&g.rec),
	}
	if !g.rec.Ready.IsZero() {
		f[fReady] = g.rec.Ready
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
	if _, err := fmt.Sscanf(l[33:], "%d", &pos); err != nil || pos < 0 {
		return "", 0, false
	}
	return l[:32], pos, true
}

func locator(gk string, pos int64) string { return fmt.Sprintf("%s.%d", gk, pos) }
