package orderedbatch

import "github.com/sluicehq/sluice/stores/docstore"

// QueueFootprint is the queries that match a queue's documents: its
// record (by name) and, in each collection that keeps documents per queue,
// those of its incarnation id (groups, manifests and messages, body
// chunks, deduplication markers, receive attempts, counters). A backend
// that bills storage by size sums what they match (stores/spanner). A
// purge's or deletion's trash record, kept until its sweep ends, is not
// among them.
func QueueFootprint(name, id string) []docstore.Query {
	qs := []docstore.Query{{Collection: colQueues, Filters: []docstore.Filter{{Field: fName, Op: docstore.Eq, Value: name}}}}
	for _, c := range []string{colGroups, colMessages, colChunks, colDedup, colAttempts, colCounters} {
		qs = append(qs, docstore.Query{Collection: c, Filters: []docstore.Filter{{Field: fInc, Op: docstore.Eq, Value: id}}})
	}
	return qs
}
