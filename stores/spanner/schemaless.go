package spanner

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/stores/docstore"
)

// The Schemaless table keeps collections no table declares: a row per
// document, keyed by (collection, id), its fields in one column as JSON,
// each value tagged with its type so that it reads back as written. Its
// queries read the whole collection (a key-range scan) and filter, order
// and limit here: such collections are small (tests, tools), and the
// protocol's own never land here.
const schemaless = "Schemaless"

type tagged struct {
	T string `json:"t"` // s, i, b, t, y, n
	V string `json:"v,omitempty"`
}

func encodeFields(f docstore.Fields) ([]byte, error) {
	m := make(map[string]tagged, len(f))
	for name, v := range f {
		switch x := v.(type) {
		case nil:
			m[name] = tagged{T: "n"}
		case string:
			m[name] = tagged{T: "s", V: x}
		case int64:
			m[name] = tagged{T: "i", V: strconv.FormatInt(x, 10)}
		case bool:
			m[name] = tagged{T: "b", V: strconv.FormatBool(x)}
		case time.Time:
			m[name] = tagged{T: "t", V: docstore.Micro(x).Format(time.RFC3339Nano)}
		case []byte:
			m[name] = tagged{T: "y", V: base64.StdEncoding.EncodeToString(x)}
		default:
			return nil, fmt.Errorf("spanner: field %q holds a %T", name, v)
		}
	}
	return json.Marshal(m)
}

func decodeFields(b []byte) (docstore.Fields, error) {
	var m map[string]tagged
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("spanner: schemaless fields: %w", err)
	}
	f := make(docstore.Fields, len(m))
	for name, t := range m {
		var err error
		switch t.T {
		case "n":
			f[name] = nil
		case "s":
			f[name] = t.V
		case "i":
			f[name], err = strconv.ParseInt(t.V, 10, 64)
		case "b":
			f[name], err = strconv.ParseBool(t.V)
		case "t":
			var tm time.Time
			tm, err = time.Parse(time.RFC3339Nano, t.V)
			f[name] = tm.UTC()
		case "y":
			f[name], err = base64.StdEncoding.DecodeString(t.V)
		default:
			err = fmt.Errorf("unknown tag %q", t.T)
		}
		if err != nil {
			return nil, fmt.Errorf("spanner: schemaless field %q: %w", name, err)
		}
	}
	return f, nil
}

// matchFilter says whether value v (present) meets fl.
func matchFilter(fl docstore.Filter, v any) (bool, error) {
	if fl.Op == docstore.In {
		list, ok := fl.Value.([]any)
		if !ok || len(list) == 0 || len(list) > 30 {
			return false, fmt.Errorf("spanner: In on %q needs a []any of 1 to 30 values, got %T", fl.Field, fl.Value)
		}
		for _, w := range list {
			if docstore.Kind(w) == docstore.Kind(v) && docstore.Compare(normal(v), normal(w)) == 0 {
				return true, nil
			}
		}
		return false, nil
	}
	w := fl.Value
	if fl.Op != docstore.Eq && w == nil {
		return false, fmt.Errorf("spanner: range filter on %q compares with nil", fl.Field)
	}
	if docstore.Kind(w) == 6 {
		return false, fmt.Errorf("spanner: filter on %q with a %T", fl.Field, w)
	}
	if docstore.Kind(w) != docstore.Kind(v) {
		return false, nil
	}
	c := docstore.Compare(normal(v), normal(w))
	switch fl.Op {
	case docstore.Eq:
		return c == 0, nil
	case docstore.Lt:
		return c < 0, nil
	case docstore.Le:
		return c <= 0, nil
	case docstore.Gt:
		return c > 0, nil
	case docstore.Ge:
		return c >= 0, nil
	}
	return false, fmt.Errorf("spanner: unknown filter op %d", fl.Op)
}

func normal(v any) any {
	if t, ok := v.(time.Time); ok {
		return docstore.Micro(t)
	}
	return v
}

// evaluate answers q over a collection's documents (in key order).
func evaluate(q docstore.Query, docs []*docstore.Doc, paged bool) ([]*docstore.Doc, error) {
	rangeField := ""
	for _, fl := range q.Filters {
		if fl.Op != docstore.Eq && fl.Op != docstore.In {
			if rangeField != "" && rangeField != fl.Field {
				return nil, fmt.Errorf("spanner: range filters on %q and %q", rangeField, fl.Field)
			}
			rangeField = fl.Field
		}
	}
	order := q.Order
	if rangeField != "" && len(order) > 0 && order[0].Field != rangeField {
		return nil, fmt.Errorf("spanner: a range filter on %q needs the ordering to start with it", rangeField)
	}
	if len(order) == 0 && rangeField != "" {
		order = []docstore.Order{{Field: rangeField}}
	}
	var out []*docstore.Doc
next:
	for _, d := range docs {
		if paged && q.StartAfter != "" && d.Key.ID <= q.StartAfter {
			continue
		}
		for _, fl := range q.Filters {
			v, ok := d.Fields[fl.Field]
			if !ok {
				continue next
			}
			m, err := matchFilter(fl, v)
			if err != nil {
				return nil, err
			}
			if !m {
				continue next
			}
		}
		for _, o := range order {
			if _, ok := d.Fields[o.Field]; !ok {
				continue next
			}
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b *docstore.Doc) int {
		for _, o := range order {
			c := docstore.Compare(a.Fields[o.Field], b.Fields[o.Field])
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return strings.Compare(a.Key.ID, b.Key.ID)
	})
	if paged && q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}
