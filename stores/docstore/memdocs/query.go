package memdocs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/stores/docstore"
)

// maxIn is how many values an In filter may list (Firestore's bound).
const maxIn = 30

// filter is a query filter with its values checked and kept as documents
// keep them.
type filter struct {
	field  string
	op     docstore.Op
	value  any   // all ops but In
	values []any // In
}

// plan is a checked query.
type plan struct {
	q       docstore.Query
	filters []filter
}

// compile checks that q has the shape the contract allows (equality and In
// on any fields, range filters on at most one field, ordering that starts
// with that field) so that a query Firestore or Spanner could not serve
// from an index fails here too. A Count query may have no Limit or
// StartAfter, and needs no ordering for its range filter.
func compile(q docstore.Query, count bool) (*plan, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: query on %q: %s", ErrInvalid, q.Collection, fmt.Sprintf(format, a...))
	}
	if err := checkKeyPart(q.Collection); err != nil {
		return nil, bad("collection: %s", err)
	}
	if q.Limit < 0 {
		return nil, bad("negative Limit %d", q.Limit)
	}
	if count && (q.Limit != 0 || q.StartAfter != "") {
		return nil, bad("Count takes no Limit or StartAfter")
	}
	p := &plan{q: q}
	rangeField := ""
	for _, f := range q.Filters {
		if f.Field == "" {
			return nil, bad("filter on an empty field name")
		}
		cf := filter{field: f.Field, op: f.Op}
		switch f.Op {
		case docstore.Eq:
			v, err := cleanValue(f.Value)
			if err != nil {
				return nil, bad("filter on %q: %s", f.Field, err)
			}
			cf.value = v
		case docstore.Lt, docstore.Le, docstore.Gt, docstore.Ge:
			if f.Value == nil {
				return nil, bad("range filter on %q compares with nil", f.Field)
			}
			v, err := cleanValue(f.Value)
			if err != nil {
				return nil, bad("filter on %q: %s", f.Field, err)
			}
			cf.value = v
			if rangeField != "" && rangeField != f.Field {
				return nil, bad("range filters on two fields, %q and %q", rangeField, f.Field)
			}
			rangeField = f.Field
		case docstore.In:
			list, ok := f.Value.([]any)
			if !ok || len(list) == 0 || len(list) > maxIn {
				return nil, bad("In on %q needs a []any of 1 to %d values, got %T of %d", f.Field, maxIn, f.Value, len(list))
			}
			for _, e := range list {
				v, err := cleanValue(e)
				if err != nil {
					return nil, bad("In on %q: %s", f.Field, err)
				}
				cf.values = append(cf.values, v)
			}
		default:
			return nil, bad("unknown filter op %d on %q", f.Op, f.Field)
		}
		p.filters = append(p.filters, cf)
	}
	for _, o := range q.Order {
		if o.Field == "" {
			return nil, bad("order on an empty field name")
		}
	}
	// A count has no order to serve, so it may leave the ordering out.
	if rangeField != "" && (len(q.Order) == 0 && !count || len(q.Order) > 0 && q.Order[0].Field != rangeField) {
		return nil, bad("a range filter on %q needs the ordering to start with %q", rangeField, rangeField)
	}
	return p, nil
}

func (f filter) match(v any) bool {
	if f.op == docstore.In {
		for _, w := range f.values {
			if docstore.Kind(v) == docstore.Kind(w) && docstore.Compare(v, w) == 0 {
				return true
			}
		}
		return false
	}
	if docstore.Kind(v) != docstore.Kind(f.value) {
		return false // values of another type never match
	}
	c := docstore.Compare(v, f.value)
	switch f.op {
	case docstore.Eq:
		return c == 0
	case docstore.Lt:
		return c < 0
	case docstore.Le:
		return c <= 0
	case docstore.Gt:
		return c > 0
	default: // Ge
		return c >= 0
	}
}

// matches says whether a live document is in the query's answer, before
// Limit: after StartAfter, every filter holding and every ordered field
// present.
func (p *plan) matches(id string, f docstore.Fields) bool {
	if p.q.StartAfter != "" && id <= p.q.StartAfter {
		return false
	}
	for _, fl := range p.filters {
		v, ok := f[fl.field]
		if !ok || !fl.match(v) {
			return false
		}
	}
	for _, o := range p.q.Order {
		if _, ok := f[o.Field]; !ok {
			return false
		}
	}
	return true
}

// sort orders matched documents by the query's ordering, ties by key id
// (ascending, whatever the direction of the orders).
func (p *plan) sort(docs []*docstore.Doc) {
	slices.SortFunc(docs, func(a, b *docstore.Doc) int {
		for _, o := range p.q.Order {
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
}
