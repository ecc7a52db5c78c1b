package engine

import (
	"bytes"
	"maps"
	"slices"

	"github.com/sluicehq/sluice/stores"
)

// Everything the engine returns is a deep copy; everything it keeps from a
// caller is a deep copy too. Empty maps and slices of messages are kept as
// nil, so that a store that persists records returns the same shapes after a
// restart; queue attribute and tag maps are always non-nil.

func copyStrings(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}

func copyQueue(q *stores.Queue) *stores.Queue {
	c := *q
	c.Attributes = copyStrings(q.Attributes)
	c.Tags = copyStrings(q.Tags)
	return &c
}

func copyAttrs(m map[string]stores.Attribute) map[string]stores.Attribute {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]stores.Attribute, len(m))
	for k, v := range m {
		out[k] = copyAttr(v)
	}
	return out
}

func copyAttr(v stores.Attribute) stores.Attribute {
	if v.StringValue != nil {
		s := *v.StringValue
		v.StringValue = &s
	}
	v.BinaryValue = cloneBytes(v.BinaryValue)
	if len(v.StringListValues) == 0 {
		v.StringListValues = nil
	} else {
		v.StringListValues = slices.Clone(v.StringListValues)
	}
	if len(v.BinaryListValues) == 0 {
		v.BinaryListValues = nil
	} else {
		l := make([][]byte, len(v.BinaryListValues))
		for i, b := range v.BinaryListValues {
			l[i] = cloneBytes(b)
		}
		v.BinaryListValues = l
	}
	return v
}

func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

func copyMessage(m *stores.StoredMessage) stores.StoredMessage {
	c := *m
	c.Attributes = copyAttrs(m.Attributes)
	c.SystemAttributes = copyAttrs(m.SystemAttributes)
	return c
}

func copyTask(t *stores.MoveTask) *stores.MoveTask {
	c := *t
	return &c
}
