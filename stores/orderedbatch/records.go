package orderedbatch

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
)

// The records. Each document keeps its record as JSON in fData and copies
// into other fields only what queries filter or order on.

// queueRec is a queue (or, with Live false, the tombstone of a deleted one).
type queueRec struct {
	Queue     stores.Queue
	Live      bool
	Gen       int64     // purge generation: documents of an older one are gone
	LastPurge time.Time // for the purge interval
	DeletedAt time.Time // on a tombstone
}

// meta is a message's immutable metadata.
type meta struct {
	ID       string
	MD5Body  string `json:",omitempty"`
	MD5Attrs string `json:",omitempty"`
	MD5Sys   string `json:",omitempty"`
	Sender   string `json:",omitempty"`
	Group    string `json:",omitempty"`
	DedupID  string `json:",omitempty"`
	Seq      string `json:",omitempty"`
	SentAt   time.Time
	DLSource string `json:",omitempty"`
	// RC and FirstRecv are the receives a message brings along when it is
	// redriven to a dead-letter queue (SQS keeps its receive count there).
	RC        int       `json:",omitempty"`
	FirstRecv time.Time `json:",omitempty"`
}

// body is what a message carries besides its metadata.
type body struct {
	Body  string
	Attrs map[string]stores.Attribute
	Sys   map[string]stores.Attribute
}

// manifestRec is a run of a FIFO group's messages that one send stored, at
// positions [Start, End).
type manifestRec struct {
	Group   string
	Start   int64
	End     int64
	Vis     time.Time // when the delay of its messages ends
	Members []meta
	Chunks  int    // payload in this many chunk documents; 0: inline
	Payload []byte `json:",omitempty"`
}

// member is the delivery state of a received FIFO message that is still in
// its group. A group's members are at positions Head, Head+1, ... in order.
type member struct {
	Pos    int64
	Start  int64 // its manifest's first position
	End    int64 // its manifest's end
	Chunks int   // its manifest's chunk count
	ID     string
	Token  string
	Vis    time.Time // the latest delivery's visibility deadline
	RC     int
	First  time.Time
	SentAt time.Time
	Del    bool // deleted (or moved, or expired) ahead of the head
}

// groupRec is a FIFO message group.
type groupRec struct {
	Group string
	// Num and Base make sequence numbers: Num is unique in the queue
	// (from the counters) and Base the position where it began, so
	// SequenceNumber is Num followed by Pos-Base, 14 and 6 digits.
	Num       int64
	Base      int64
	Head      int64 // first remaining position
	HeadStart int64 // first position of the manifest that holds Head
	Tail      int64 // next position to assign
	Members   []member
	Ready     time.Time // see group.settle
	Rank      int64     // Ready with a tie-break (see rank); the fReady field
	Idle      time.Time // when it became empty
	// Ahead remembers, for up to aheadMax manifests not yet passed (in
	// position order, gaps where it was full), when each becomes
	// receivable, so that a delete that leaves a never-received head ranks
	// the group from it without reading its manifest.
	Ahead []ahead `json:",omitempty"`
}

// ahead is a manifest's start and when it becomes receivable (its Vis).
type ahead struct {
	Start int64
	Vis   time.Time
}

// aheadMax bounds groupRec.Ahead.
const aheadMax = 16

// stdRec is a Standard queue's message with its delivery state.
type stdRec struct {
	Meta    meta
	Vis     time.Time
	RC      int
	First   time.Time
	Token   string `json:",omitempty"`
	Chunks  int
	Payload []byte `json:",omitempty"`
}

// dedupRec remembers a FIFO send's dedup key for the dedup window.
type dedupRec struct {
	ID     string
	Seq    string
	SentAt time.Time
}

// attemptRec is a FIFO receive attempt: what the claim returned.
type attemptRec struct {
	Token string
	At    time.Time
	// Until is where the claim, or its last replay, set the messages'
	// visibility (zero in records written before it was kept).
	Until   time.Time `json:",omitzero"`
	Members []attemptMember
}

type attemptMember struct {
	GK  string
	Pos int64
	ID  string
}

// trashRec names documents to remove in pages: those of the incarnation
// with a generation below Below (all of them when the queue is deleted).
type trashRec struct {
	Inc   string
	Below int64
	Since time.Time
}

// ---- encoding

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("orderedbatch: encode %T: %v", v, err)) // our own types always encode
	}
	return b
}

func decode(d *docstore.Doc, v any) error {
	b, _ := d.Fields[fData].([]byte)
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("orderedbatch: decode %v: %w", d.Key, err)
	}
	return nil
}

func fieldString(d *docstore.Doc, f string) string {
	v, _ := d.Fields[f].(string)
	return v
}

func fieldInt(d *docstore.Doc, f string) int64 {
	v, _ := d.Fields[f].(int64)
	return v
}

// encodePayload frames the bodies of messages in order: for each, its body,
// attributes and system attributes, each length-prefixed.
func encodePayload(bs []body) []byte {
	var out []byte
	for _, b := range bs {
		out = binary.AppendUvarint(out, uint64(len(b.Body)))
		out = append(out, b.Body...)
		for _, a := range []map[string]stores.Attribute{b.Attrs, b.Sys} {
			var j []byte
			if len(a) > 0 {
				j = encode(a)
			}
			out = binary.AppendUvarint(out, uint64(len(j)))
			out = append(out, j...)
		}
	}
	return out
}

var errPayload = errors.New("orderedbatch: corrupt payload")

func decodePayload(p []byte, n int) ([]body, error) {
	out := make([]body, 0, n)
	next := func() ([]byte, error) {
		l, k := binary.Uvarint(p)
		if k <= 0 || uint64(len(p)-k) < l {
			return nil, errPayload
		}
		v := p[k : k+int(l)]
		p = p[k+int(l):]
		return v, nil
	}
	for range n {
		var b body
		v, err := next()
		if err != nil {
			return nil, err
		}
		b.Body = string(v)
		for _, dst := range []*map[string]stores.Attribute{&b.Attrs, &b.Sys} {
			v, err := next()
			if err != nil {
				return nil, err
			}
			if len(v) > 0 {
				if err := json.Unmarshal(v, dst); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// chunksOf is how many chunk documents a payload of n bytes takes.
func chunksOf(n int) int {
	if n <= inlineMax {
		return 0
	}
	return (n + chunkSize - 1) / chunkSize
}

// splitPayload returns what stays inline and the chunks.
func splitPayload(p []byte) (inline []byte, chunks [][]byte) {
	if len(p) <= inlineMax {
		return p, nil
	}
	for len(p) > 0 {
		n := min(chunkSize, len(p))
		chunks = append(chunks, p[:n])
		p = p[n:]
	}
	return nil, chunks
}

func newMeta(m *stores.NewMessage, now time.Time) meta {
	return meta{
		ID: m.ID, MD5Body: m.MD5OfBody, MD5Attrs: m.MD5OfMessageAttributes, MD5Sys: m.MD5OfSystemAttributes,
		Sender: m.SenderID, Group: m.GroupID, DedupID: m.DedupID, SentAt: now,
	}
}

func newBody(m *stores.NewMessage) body {
	return body{Body: m.Body, Attrs: m.Attributes, Sys: m.SystemAttributes}
}

// stored builds the seam's message from its parts.
func stored(m meta, b body, rc int, first time.Time) stores.StoredMessage {
	return stores.StoredMessage{
		ID: m.ID, Body: b.Body, Attributes: b.Attrs, SystemAttributes: b.Sys,
		MD5OfBody: m.MD5Body, MD5OfMessageAttributes: m.MD5Attrs, MD5OfSystemAttributes: m.MD5Sys,
		SenderID: m.Sender, GroupID: m.Group, DedupID: m.DedupID, SequenceNumber: m.Seq,
		SentAt: m.SentAt, FirstReceivedAt: first, ReceiveCount: rc, DeadLetterSource: m.DLSource,
	}
}

func fieldTime(d *docstore.Doc, f string) (time.Time, bool) {
	if d == nil {
		return time.Time{}, false
	}
	t, ok := d.Fields[f].(time.Time)
	return t, ok
}

// payloadSize is what a message's payload takes when written.
func payloadSize(b body) int { return len(encodePayload([]body{b})) }
