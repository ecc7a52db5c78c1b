package memdocs

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/stores/docstore"
)

// maxKeyPart is the longest collection or id, in bytes.
const maxKeyPart = 700

// Firestore keeps timestamps from year 1 to year 9999; so does this store,
// so that a protocol writing a time Firestore refuses fails here first.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

func checkKey(k docstore.Key) error {
	if err := checkKeyPart(k.Collection); err != nil {
		return fmt.Errorf("%w: collection of key %q/%q: %s", ErrInvalid, k.Collection, k.ID, err)
	}
	if err := checkKeyPart(k.ID); err != nil {
		return fmt.Errorf("%w: id of key %q/%q: %s", ErrInvalid, k.Collection, k.ID, err)
	}
	return nil
}

// checkKeyPart applies the contract's rule for ids (printable ASCII but
// '/', at most 700 bytes) and refuses the empty id; collections follow the
// same rule.
func checkKeyPart(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if len(s) > maxKeyPart {
		return fmt.Errorf("%d bytes, over %d", len(s), maxKeyPart)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '/' {
			return fmt.Errorf("byte %#x at %d is not printable ASCII other than '/'", c, i)
		}
	}
	return nil
}

// cleanFields checks every field and returns a copy holding the values as
// kept, so that the caller's map and byte slices are never aliased.
func cleanFields(f docstore.Fields) (docstore.Fields, error) {
	out := make(docstore.Fields, len(f))
	for name, v := range f {
		if name == "" || !utf8.ValidString(name) {
			return nil, fmt.Errorf("%w: field name %q is empty or not UTF-8", ErrInvalid, name)
		}
		cv, err := cleanValue(v)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", name, err)
		}
		out[name] = cv
	}
	return out, nil
}

// cleanValue checks that v is a document value and returns it as kept:
// times to the microsecond in UTC, byte slices copied.
func cleanValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, int64:
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, fmt.Errorf("%w: string is not UTF-8", ErrInvalid)
		}
		return x, nil
	case time.Time:
		t := docstore.Micro(x).UTC()
		if t.Before(minTime) || t.After(maxTime) {
			return nil, fmt.Errorf("%w: time %v is outside years 1 to 9999", ErrInvalid, t)
		}
		return t, nil
	case []byte:
		return cloneBytes(x), nil
	default:
		return nil, fmt.Errorf("%w: value of type %T (a document holds string, int64, bool, time.Time, []byte or nil)", ErrInvalid, v)
	}
}

// cloneBytes copies b, keeping an empty slice a []byte of length 0.
func cloneBytes(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// copyOut copies kept fields for a caller. Only byte slices are mutable;
// the rest are values.
func copyOut(f docstore.Fields) docstore.Fields {
	out := make(docstore.Fields, len(f))
	for name, v := range f {
		if b, ok := v.([]byte); ok {
			v = cloneBytes(b)
		}
		out[name] = v
	}
	return out
}

// DocSize is this store's estimate of a document's encoded size, which
// Limits.MaxDocBytes and MaxTxBytes bound: the length of the key id, plus
// 32, plus for each field the length of its name and the size of its value
// (a string or []byte its length, an int64 or time.Time 8, a bool or nil
// 1). Firestore counts a little differently (names of parent documents, a
// byte more per string); the estimate is close enough for a protocol that
// keeps well below the limit.
func DocSize(key docstore.Key, f docstore.Fields) int {
	n := len(key.ID) + 32
	for name, v := range f {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case int64, time.Time:
		return 8
	default: // bool, nil
		return 1
	}
}
