package docstore

import (
	"bytes"
	"cmp"
	"strings"
	"time"
)

// Kind ranks a value's type in Firestore's order across types: nil, bool,
// int64, time.Time, string, []byte (0 to 5), and 6 for a type Fields may
// not hold. Filters match values of their own kind only; the rank makes an
// ordering total when an ordered field holds values of several kinds. For
// backends that evaluate queries themselves (in memory, or over documents
// kept without a schema).
func Kind(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case bool:
		return 1
	case int64:
		return 2
	case time.Time:
		return 3
	case string:
		return 4
	case []byte:
		return 5
	default:
		return 6
	}
}

// Compare orders two values: by Kind, then by value (false before true;
// times as they are, so callers compare kept times, see Micro).
func Compare(a, b any) int {
	if ka, kb := Kind(a), Kind(b); ka != kb {
		return cmp.Compare(ka, kb)
	}
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		default:
			return 1
		}
	case int64:
		return cmp.Compare(x, b.(int64))
	case time.Time:
		return x.Compare(b.(time.Time))
	case string:
		return strings.Compare(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	default: // nil, or a kind Fields may not hold
		return 0
	}
}
