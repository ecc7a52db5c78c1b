package spanner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	sp "cloud.google.com/go/spanner"

	"github.com/sluicehq/sluice/stores/docstore"
)

// table is a declared collection's table: its columns and indexes.
type table struct {
	name    string
	cols    []docstore.Column
	types   map[string]docstore.Type
	indexes []docstore.Index
	columns []string // DocId, then the fields, as read
}

// keyCol is the primary key column of every typed table.
const keyCol = "DocId"

func newTables(decl []docstore.Table, indexes []docstore.Index) (map[string]*table, error) {
	out := map[string]*table{}
	for _, d := range decl {
		if err := checkName(d.Collection); err != nil {
			return nil, fmt.Errorf("spanner: table %q: %w", d.Collection, err)
		}
		t := &table{name: d.Collection, cols: d.Fields, types: map[string]docstore.Type{}, columns: []string{keyCol}}
		for _, c := range d.Fields {
			if err := checkName(c.Name); err != nil || strings.EqualFold(c.Name, keyCol) {
				return nil, fmt.Errorf("spanner: column %s.%q: not a usable column name", d.Collection, c.Name)
			}
			t.types[c.Name] = c.Type
			t.columns = append(t.columns, c.Name)
		}
		out[d.Collection] = t
	}
	for _, ix := range indexes {
		if t := out[ix.Collection]; t != nil {
			t.indexes = append(t.indexes, ix)
		}
	}
	return out, nil
}

// checkName: Spanner identifiers are a letter, then letters, digits and
// underscores.
func checkName(s string) error {
	if s == "" || len(s) > 128 {
		return fmt.Errorf("name of %d bytes", len(s))
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c != '_' && (c < '0' || c > '9')) {
			return fmt.Errorf("%q is not a Spanner identifier", s)
		}
	}
	return nil
}

func spannerType(t docstore.Type) string {
	switch t {
	case docstore.String:
		return "STRING(MAX)"
	case docstore.Int64:
		return "INT64"
	case docstore.Bool:
		return "BOOL"
	case docstore.Time:
		return "TIMESTAMP"
	case docstore.Bytes:
		return "BYTES(MAX)"
	}
	return "?"
}

// typeOf is the docstore type of a value (0 for nil or others).
func typeOf(v any) docstore.Type {
	switch v.(type) {
	case string:
		return docstore.String
	case int64:
		return docstore.Int64
	case bool:
		return docstore.Bool
	case time.Time:
		return docstore.Time
	case []byte:
		return docstore.Bytes
	}
	return 0
}

// putMutations counts a Replace or Insert of a row as Spanner does (its
// "mutations per commit" rule): every column of the row (a Replace
// affects them all, writing NULL to those it does not name), and for each
// secondary index the index entry's columns and the key.
func (t *table) putMutations() int64 {
	n := int64(len(t.columns))
	for _, ix := range t.indexes {
		n += int64(len(ix.Fields)) + 1
	}
	return n
}

// cellBytes is what Spanner stores for a value, by its "storage size for
// data types": 8 bytes for every value, and 1 more for a BOOL, 8 for an
// INT64, 12 for a TIMESTAMP, a STRING's UTF-8 bytes or a BYTES' bytes. A
// NULL (nil) counts nothing: the sizes are of values.
func cellBytes(v any) int64 {
	switch x := v.(type) {
	case bool:
		return 8 + 1
	case int64:
		return 8 + 8
	case time.Time:
		return 8 + 12
	case string:
		return 8 + int64(len(x))
	case []byte:
		return 8 + int64(len(x))
	}
	return 0
}

// putBytes is what writing a row stores: its key and values, and for
// each secondary index an entry of the indexed values and the key (the
// indexes are not NULL_FILTERED: every row has an entry in each).
func (t *table) putBytes(id string, f docstore.Fields) int64 {
	key := cellBytes(id)
	n := key
	for _, c := range t.cols {
		n += cellBytes(f[c.Name])
	}
	for _, ix := range t.indexes {
		n += key
		for _, c := range ix.Fields {
			n += cellBytes(f[c.Field])
		}
	}
	return n
}

// sizeSQL is putBytes as a SQL expression over a row of t, for summing
// what rows hold.
func (t *table) sizeSQL() string {
	cell := func(name string) string {
		switch t.types[name] {
		case docstore.Bool:
			return "IF(" + quote(name) + " IS NULL, 0, 9)"
		case docstore.Int64:
			return "IF(" + quote(name) + " IS NULL, 0, 16)"
		case docstore.Time:
			return "IF(" + quote(name) + " IS NULL, 0, 20)"
		}
		return "IFNULL(8 + BYTE_LENGTH(" + quote(name) + "), 0)"
	}
	key := "(8 + BYTE_LENGTH(" + keyCol + "))"
	parts := []string{key}
	for _, c := range t.cols {
		parts = append(parts, cell(c.Name))
	}
	for _, ix := range t.indexes {
		parts = append(parts, key)
		for _, c := range ix.Fields {
			parts = append(parts, cell(c.Field))
		}
	}
	return strings.Join(parts, " + ")
}

// deleteMutations counts a row's deletion: one for the row, one for each
// index entry it removes.
func (t *table) deleteMutations() int64 { return 1 + int64(len(t.indexes)) }

// mutation writes a document to its table: Replace, so that fields the
// document lacks become NULL; insert for a Create.
func (t *table) mutation(id string, f docstore.Fields, create bool) (*sp.Mutation, error) {
	cols := []string{keyCol}
	vals := []any{id}
	for name, v := range f {
		want, ok := t.types[name]
		if !ok {
			return nil, fmt.Errorf("spanner: %s has no column %q (declare it in the table and add a migration)", t.name, name)
		}
		if v == nil {
			continue // absent
		}
		if got := typeOf(v); got != want {
			return nil, fmt.Errorf("spanner: %s.%s is %v, got %T", t.name, name, want, v)
		}
		switch x := v.(type) {
		case time.Time:
			v = docstore.Micro(x)
		case []byte:
			if x == nil {
				v = []byte{} // the client writes a nil slice as NULL: the field would read back absent
			}
		}
		cols = append(cols, name)
		vals = append(vals, v)
	}
	if create {
		return sp.Insert(t.name, cols, vals), nil
	}
	return sp.Replace(t.name, cols, vals), nil
}

// decode reads a row of t.columns.
func (t *table) decode(r *sp.Row) (string, docstore.Fields, error) {
	var id string
	if err := r.Column(0, &id); err != nil {
		return "", nil, err
	}
	f := docstore.Fields{}
	for i, c := range t.cols {
		var err error
		switch c.Type {
		case docstore.String:
			var v sp.NullString
			if err = r.Column(i+1, &v); err == nil && v.Valid {
				f[c.Name] = v.StringVal
			}
		case docstore.Int64:
			var v sp.NullInt64
			if err = r.Column(i+1, &v); err == nil && v.Valid {
				f[c.Name] = v.Int64
			}
		case docstore.Bool:
			var v sp.NullBool
			if err = r.Column(i+1, &v); err == nil && v.Valid {
				f[c.Name] = v.Bool
			}
		case docstore.Time:
			var v sp.NullTime
			if err = r.Column(i+1, &v); err == nil && v.Valid {
				f[c.Name] = docstore.Micro(v.Time)
			}
		case docstore.Bytes:
			var v []byte
			if err = r.Column(i+1, &v); err == nil && v != nil {
				f[c.Name] = v
			}
		}
		if err != nil {
			return "", nil, fmt.Errorf("spanner: %s.%s: %w", t.name, c.Name, err)
		}
	}
	return id, f, nil
}

var sqlOps = map[docstore.Op]string{docstore.Eq: "=", docstore.Lt: "<", docstore.Le: "<=", docstore.Gt: ">", docstore.Ge: ">="}

// sql builds q as a statement on t selecting what (the row's columns, or
// an aggregate). ok is false when a filter compares a column with a value
// of another type, which matches nothing. paged adds StartAfter, the
// tie-break by key and Limit.
func (t *table) sql(q docstore.Query, what string, paged bool, sum string) (st sp.Statement, ok bool, err error) {
	st.Params = map[string]any{}
	var where []string
	rangeField := ""
	for i, fl := range q.Filters {
		want, known := t.types[fl.Field]
		if !known {
			return st, false, nil // a field no document has matches nothing
		}
		p := fmt.Sprintf("p%d", i)
		col := quote(fl.Field)
		if fl.Op == docstore.In {
			list, isList := fl.Value.([]any)
			if !isList || len(list) == 0 || len(list) > 30 {
				return st, false, fmt.Errorf("spanner: In on %q needs a []any of 1 to 30 values, got %T", fl.Field, fl.Value)
			}
			vals, err := sameTyped(list, want)
			if err != nil {
				return st, false, err
			}
			if vals == nil {
				return st, false, nil
			}
			st.Params[p] = vals
			where = append(where, fmt.Sprintf("%s IN UNNEST(@%s)", col, p))
			continue
		}
		op, known := sqlOps[fl.Op]
		if !known {
			return st, false, fmt.Errorf("spanner: unknown filter op %d", fl.Op)
		}
		if fl.Value == nil {
			if fl.Op != docstore.Eq {
				return st, false, fmt.Errorf("spanner: range filter on %q compares with nil", fl.Field)
			}
			return st, false, nil // a declared field never holds nil
		}
		if fl.Op != docstore.Eq {
			if rangeField != "" && rangeField != fl.Field {
				return st, false, fmt.Errorf("spanner: range filters on %q and %q", rangeField, fl.Field)
			}
			rangeField = fl.Field
		}
		if typeOf(fl.Value) != want {
			return st, false, nil
		}
		st.Params[p] = param(fl.Value)
		where = append(where, fmt.Sprintf("%s %s @%s", col, op, p))
	}
	order := q.Order
	if len(order) == 0 && rangeField != "" && paged {
		order = []docstore.Order{{Field: rangeField}}
	}
	if rangeField != "" && len(q.Order) > 0 && q.Order[0].Field != rangeField {
		return st, false, fmt.Errorf("spanner: a range filter on %q needs the ordering to start with it", rangeField)
	}
	var by []string
	for _, o := range order {
		if _, known := t.types[o.Field]; !known {
			return st, false, nil
		}
		where = append(where, quote(o.Field)+" IS NOT NULL")
		dir := ""
		if o.Desc {
			dir = " DESC"
		}
		by = append(by, quote(o.Field)+dir)
	}
	if paged && q.StartAfter != "" {
		st.Params["after"] = q.StartAfter
		where = append(where, keyCol+" > @after")
	}
	hint := ""
	if ix := t.index(q, order, sum); ix != "" {
		hint = "@{FORCE_INDEX=" + ix + "}"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s FROM %s%s", what, quote(t.name), hint)
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	if paged {
		by = append(by, keyCol)
		b.WriteString(" ORDER BY " + strings.Join(by, ", "))
		if q.Limit > 0 {
			fmt.Fprintf(&b, " LIMIT %d", q.Limit)
		}
	}
	st.SQL = b.String()
	return st, true, nil
}

// index names the declared index that serves q: its equality fields (in
// any order), then its ordering (or range field), then the summed field.
// Spanner's optimizer may pick a base-table scan for a query it cannot
// cost well; the hint keeps each query on the index it was written for.
func (t *table) index(q docstore.Query, order []docstore.Order, sum string) string {
	var eq []string
	for _, f := range q.Filters {
		if (f.Op == docstore.Eq || f.Op == docstore.In) && !slices.Contains(eq, f.Field) {
			eq = append(eq, f.Field)
		}
	}
	tail := slices.Clone(order)
	if len(tail) == 0 {
		for _, f := range q.Filters {
			if f.Op != docstore.Eq && f.Op != docstore.In {
				tail = []docstore.Order{{Field: f.Field}}
				break
			}
		}
	}
	if sum != "" {
		tail = append(tail, docstore.Order{Field: sum})
	}
	if len(eq)+len(tail) == 0 {
		return ""
	}
next:
	for _, ix := range t.indexes {
		if len(ix.Fields) != len(eq)+len(tail) {
			continue
		}
		for i, f := range ix.Fields {
			if i < len(eq) {
				if !slices.Contains(eq, f.Field) {
					continue next
				}
			} else if tail[i-len(eq)].Field != f.Field || (i-len(eq) < len(order) && tail[i-len(eq)].Desc != f.Desc) {
				continue next
			}
		}
		return indexName(ix)
	}
	return ""
}

// indexName is the name the migrations give ix: the table, "By", and
// each field capitalized.
func indexName(ix docstore.Index) string {
	var b strings.Builder
	b.WriteString(strings.ToUpper(ix.Collection[:1]) + ix.Collection[1:])
	b.WriteString("By")
	for _, f := range ix.Fields {
		b.WriteString(strings.ToUpper(f.Field[:1]) + f.Field[1:])
	}
	return b.String()
}

// sameTyped keeps the values of an In list that have the column's type
// (nil when none has), as a typed slice for UNNEST.
func sameTyped(list []any, want docstore.Type) (any, error) {
	var ss []string
	var is []int64
	var bs []bool
	var ts []time.Time
	var ys [][]byte
	for _, v := range list {
		if typeOf(v) != want {
			if v != nil && typeOf(v) == 0 {
				return nil, fmt.Errorf("spanner: In value of type %T", v)
			}
			continue
		}
		switch x := v.(type) {
		case string:
			ss = append(ss, x)
		case int64:
			is = append(is, x)
		case bool:
			bs = append(bs, x)
		case time.Time:
			ts = append(ts, docstore.Micro(x))
		case []byte:
			ys = append(ys, x)
		}
	}
	switch {
	case ss != nil:
		return ss, nil
	case is != nil:
		return is, nil
	case bs != nil:
		return bs, nil
	case ts != nil:
		return ts, nil
	case ys != nil:
		return ys, nil
	}
	return nil, nil
}

func param(v any) any {
	if tm, ok := v.(time.Time); ok {
		return docstore.Micro(tm)
	}
	return v
}

// quote quotes a column name (some field names, like status, may be
// keywords in some dialects).
func quote(name string) string { return "`" + name + "`" }
