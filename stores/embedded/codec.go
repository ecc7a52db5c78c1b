package embedded

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/stores/memstore/engine"
)

// A stored value is one tag byte and the record.
//
// Messages, deliveries and dedup markers, which a queue writes all the
// time, are stored in a binary layout of their own (binary.go). The other
// records are JSON: several times faster than gob (gob sends a type
// description with every independently decodable value) and smaller. JSON
// cannot hold every Go string, though: encoding/json replaces invalid UTF-8
// with U+FFFD, and refuses times outside years 0-9999. The service only
// stores valid Unicode, but a store must return exactly what it was given,
// so a record that JSON would not round-trip is stored with gob, which is
// exact. Records written in JSON or gob before the binary layout existed
// are read as they are.
const (
	tagBinary = 'b'
	tagJSON   = 'j'
	tagGob    = 'g'
)

// replaced is what encoding/json writes for a byte of invalid UTF-8. (A
// literal backslash-u-fffd in a string is written with the backslash
// escaped, which also contains it: a harmless false alarm.)
var replaced = []byte(`\ufffd`)

func encode(r engine.Record) ([]byte, error) { return appendEncoded(nil, r) }

// appendEncoded appends r's stored value to dst: the committer encodes
// each record in a buffer it keeps, rather than in a buffer of its own
// grown from a byte (a message record of 1 KiB grew through a dozen
// allocations).
func appendEncoded(dst []byte, r engine.Record) ([]byte, error) {
	if b, ok := encodeBinary(append(dst, tagBinary), r); ok {
		return b, nil
	}
	var buf bytes.Buffer
	buf.WriteByte(tagJSON)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err == nil && !bytes.Contains(buf.Bytes(), replaced) {
		return append(dst, buf.Bytes()...), nil
	}
	buf.Reset()
	buf.WriteByte(tagGob)
	if err := gob.NewEncoder(&buf).Encode(r); err != nil {
		return dst, err
	}
	return append(dst, buf.Bytes()...), nil
}

func decode(v []byte, r engine.Record) error {
	if len(v) == 0 {
		return fmt.Errorf("empty value")
	}
	switch v[0] {
	case tagBinary:
		return decodeBinary(v[1:], r)
	case tagJSON:
		return json.Unmarshal(v[1:], r)
	case tagGob:
		return gob.NewDecoder(bytes.NewReader(v[1:])).Decode(r)
	}
	return fmt.Errorf("unknown encoding %q", v[0])
}
