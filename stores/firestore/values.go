package firestore

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/stores/docstore"
)

// toValue checks that v is one of docstore's value types and puts it in the
// form the client encodes as the matching Firestore type: int64 as
// integerValue, string, bool, time.Time as timestampValue (cut to the
// microsecond first, as docstore keeps it and Firestore stores it), []byte
// as bytesValue, nil as nullValue.
func toValue(v any) (any, error) {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			// Firestore stores UTF-8 only; the request could not even be
			// encoded, and the client would resend it until its deadline.
			return nil, fmt.Errorf("firestore: a string that is not UTF-8 (Firestore stores UTF-8 only)")
		}
		return x, nil
	case nil, int64, bool:
		return x, nil
	case []byte:
		if x == nil {
			// Encoded as bytes either way; read back as empty bytes.
			return []byte{}, nil
		}
		return x, nil
	case time.Time:
		return docstore.Micro(x), nil
	default:
		return nil, fmt.Errorf("firestore: value of type %T (want string, int64, bool, time.Time, []byte or nil)", v)
	}
}

func toData(f docstore.Fields) (map[string]any, error) {
	m := make(map[string]any, len(f))
	for name, v := range f {
		if name == "" {
			return nil, fmt.Errorf("firestore: empty field name")
		}
		x, err := toValue(v)
		if err != nil {
			return nil, fmt.Errorf("%w (field %q)", err, name)
		}
		m[name] = x
	}
	return m, nil
}

// fromData turns the client's decoding of a document back into Fields. The
// client gives int64 for integers and UTC times; bytes come back non-nil.
func fromData(m map[string]any) (docstore.Fields, error) {
	f := make(docstore.Fields, len(m))
	for name, v := range m {
		switch x := v.(type) {
		case nil, int64, string, bool:
			f[name] = x
		case []byte:
			if x == nil {
				x = []byte{}
			}
			f[name] = x
		case time.Time:
			f[name] = docstore.Micro(x)
		default:
			// Written by something else than this backend.
			return nil, fmt.Errorf("firestore: field %q holds a %T, not a docstore value", name, v)
		}
	}
	return f, nil
}
