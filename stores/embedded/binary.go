package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
)

// The records a queue writes all the time (messages, their deliveries and
// dedup markers) are stored in a binary layout: every field in order,
// strings and bytes length first, numbers as varints, instants as seconds
// and nanoseconds since 1970. It is exact for every string and instant,
// about a fifth of JSON's cost to write, and half its size. The first byte
// after the tag is the layout's version.
const binaryLayout = 1

// encodeBinary appends the binary form of r, if r is of a kind that has
// one; ok is false otherwise.
func encodeBinary(b []byte, r engine.Record) (_ []byte, ok bool) {
	b = append(b, binaryLayout)
	switch r := r.(type) {
	case *engine.MessageRecord:
		b = appendString(b, r.Queue)
		b = binary.AppendUvarint(b, r.Seq)
		b = appendTime(b, r.VisibleAt)
		b = appendString(b, r.Token)
		m := &r.Message
		b = appendString(b, m.ID)
		b = appendString(b, m.Body)
		b = appendAttributes(b, m.Attributes)
		b = appendAttributes(b, m.SystemAttributes)
		for _, s := range []string{m.MD5OfBody, m.MD5OfMessageAttributes, m.MD5OfSystemAttributes, m.SenderID, m.GroupID, m.DedupID, m.SequenceNumber} {
			b = appendString(b, s)
		}
		b = appendTime(b, m.SentAt)
		b = appendTime(b, m.FirstReceivedAt)
		b = binary.AppendVarint(b, int64(m.ReceiveCount))
		b = appendString(b, m.DeadLetterSource)
	case *engine.DeliveryRecord:
		b = appendString(b, r.Queue)
		b = binary.AppendUvarint(b, r.Seq)
		b = appendTime(b, r.VisibleAt)
		b = appendString(b, r.Token)
		b = binary.AppendVarint(b, int64(r.ReceiveCount))
		b = appendTime(b, r.FirstReceivedAt)
	case *engine.DedupRecord:
		for _, s := range []string{r.Queue, r.Scope, r.DedupID, r.MessageID, r.SequenceNumber} {
			b = appendString(b, s)
		}
		b = appendTime(b, r.CreatedAt)
		b = appendTime(b, r.ExpiresAt)
	default:
		return nil, false
	}
	return b, true
}

// decodeBinary fills r from p, the bytes after the tag.
func decodeBinary(p []byte, r engine.Record) error {
	d := &reader{p: p}
	if v := d.uvarint(); d.err == nil && v != binaryLayout {
		return fmt.Errorf("binary layout %d (this build reads %d)", v, binaryLayout)
	}
	switch r := r.(type) {
	case *engine.MessageRecord:
		r.Queue, r.Seq, r.VisibleAt, r.Token = d.string(), d.uvarint(), d.time(), d.string()
		m := &r.Message
		m.ID, m.Body = d.string(), d.string()
		m.Attributes, m.SystemAttributes = d.attributes(), d.attributes()
		for _, s := range []*string{&m.MD5OfBody, &m.MD5OfMessageAttributes, &m.MD5OfSystemAttributes, &m.SenderID, &m.GroupID, &m.DedupID, &m.SequenceNumber} {
			*s = d.string()
		}
		m.SentAt, m.FirstReceivedAt = d.time(), d.time()
		m.ReceiveCount = int(d.varint())
		m.DeadLetterSource = d.string()
	case *engine.DeliveryRecord:
		r.Queue, r.Seq, r.VisibleAt, r.Token = d.string(), d.uvarint(), d.time(), d.string()
		r.ReceiveCount = int(d.varint())
		r.FirstReceivedAt = d.time()
	case *engine.DedupRecord:
		for _, s := range []*string{&r.Queue, &r.Scope, &r.DedupID, &r.MessageID, &r.SequenceNumber} {
			*s = d.string()
		}
		r.CreatedAt, r.ExpiresAt = d.time(), d.time()
	default:
		return fmt.Errorf("no binary layout for %s records", r.Kind())
	}
	if d.err == nil && len(d.p) > 0 {
		d.err = fmt.Errorf("%d bytes after the record", len(d.p))
	}
	return d.err
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendTime appends t's instant; its location is not kept (decoded
// instants are in UTC), nor its monotonic reading.
func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// appendAttributes appends a count (0 for a nil map, n+1 for n entries),
// then the entries by name. Absent and empty values are one: a zero
// count, as JSON, whose omitempty they used to go through, had them.
func appendAttributes(b []byte, attrs map[string]stores.Attribute) []byte {
	if attrs == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(attrs))+1)
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a := attrs[name]
		b = appendString(b, name)
		b = appendString(b, a.DataType)
		if a.StringValue == nil {
			b = append(b, 0)
		} else {
			b = appendString(append(b, 1), *a.StringValue)
		}
		b = appendString(b, string(a.BinaryValue))
		b = binary.AppendUvarint(b, uint64(len(a.StringListValues)))
		for _, s := range a.StringListValues {
			b = appendString(b, s)
		}
		b = binary.AppendUvarint(b, uint64(len(a.BinaryListValues)))
		for _, v := range a.BinaryListValues {
			b = appendString(b, string(v))
		}
	}
	return b
}

// reader decodes the binary layout; the first error sticks, and every read
// after it returns zero values.
type reader struct {
	p   []byte
	err error
}

var errShort = errors.New("record cut short")

func (d *reader) uvarint() uint64 { return readVarint(d, binary.Uvarint) }

func (d *reader) varint() int64 { return readVarint(d, binary.Varint) }

// readVarint reads one varint with read (binary.Uvarint or binary.Varint).
func readVarint[T uint64 | int64](d *reader, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.p)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *reader) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.p)) {
		d.err = errShort
		return nil
	}
	v := d.p[:n:n]
	d.p = d.p[n:]
	return v
}

func (d *reader) string() string { return string(d.bytes()) }

// blob is a copy of the next bytes field, nil when empty.
func (d *reader) blob() []byte {
	if v := d.bytes(); len(v) > 0 {
		return slices.Clone(v)
	}
	return nil
}

func (d *reader) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if d.err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 {
		d.err = fmt.Errorf("instant with %d nanoseconds", nsec)
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *reader) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.p) == 0 {
		d.err = errShort
		return 0
	}
	v := d.p[0]
	d.p = d.p[1:]
	return v
}

// count reads a number of entries; each takes at least a byte, so a count
// beyond what is left is a corrupt record, not an allocation to make.
func (d *reader) count() uint64 {
	n := d.uvarint()
	if n > uint64(len(d.p)) {
		d.err = errShort
		return 0
	}
	return n
}

func (d *reader) attributes() map[string]stores.Attribute {
	n := d.count()
	if n == 0 {
		return nil
	}
	attrs := make(map[string]stores.Attribute, n-1)
	for range n - 1 {
		name := d.string()
		a := stores.Attribute{DataType: d.string()}
		if d.byte() == 1 {
			v := d.string()
			a.StringValue = &v
		}
		a.BinaryValue = d.blob()
		if k := d.count(); k > 0 {
			a.StringListValues = make([]string, k)
			for i := range a.StringListValues {
				a.StringListValues[i] = d.string()
			}
		}
		if k := d.count(); k > 0 {
			a.BinaryListValues = make([][]byte, k)
			for i := range a.BinaryListValues {
				a.BinaryListValues[i] = slices.Clone(d.bytes())
			}
		}
		if d.err != nil {
			return nil
		}
		attrs[name] = a
	}
	return attrs
}
