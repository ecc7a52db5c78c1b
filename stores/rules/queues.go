package rules

import (
	"maps"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// UpdateQueue applies a QueueUpdate to q, the stored queue, at now, as
// stores.QueueUpdateParams defines it: SetAttributes are stored over the
// existing ones and an empty value removes one; SetTags are set, then
// RemoveTags removed; a Retention other than 0 replaces q.Retention;
// ModifiedAt moves to now only when attributes or retention change (SQS's
// LastModifiedTimestamp is about attributes, not tags); Version goes up by
// one. When p.IfVersion is not 0 and is not q.Version it changes nothing
// and returns stores.ErrVersionConflict. The store checks the name and
// incarnation, and stores q after.
func UpdateQueue(q *stores.Queue, p *stores.QueueUpdateParams, now time.Time) error {
	if p.IfVersion != 0 && p.IfVersion != q.Version {
		return stores.ErrVersionConflict
	}
	q.Attributes = maps.Clone(q.Attributes)
	if q.Attributes == nil {
		q.Attributes = map[string]string{}
	}
	for k, v := range p.SetAttributes {
		if v == "" {
			delete(q.Attributes, k)
		} else {
			q.Attributes[k] = v
		}
	}
	q.Tags = maps.Clone(q.Tags)
	if q.Tags == nil {
		q.Tags = map[string]string{}
	}
	maps.Copy(q.Tags, p.SetTags)
	for _, k := range p.RemoveTags {
		delete(q.Tags, k)
	}
	if p.Retention != 0 {
		q.Retention = p.Retention
	}
	if len(p.SetAttributes) > 0 || p.Retention != 0 {
		q.ModifiedAt = now
	}
	q.Version++
	return nil
}
