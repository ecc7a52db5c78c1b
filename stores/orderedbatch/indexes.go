package orderedbatch

import "github.com/sluicehq/sluice/stores/docstore"

// Indexes are the composite indexes the protocol's queries need (a test
// runs every query the store makes against this list). A sum aggregation
// needs the summed field last. Backends that need
// indexes declared deploy them: stores/firestore writes them as
// firestore.indexes.json.
func Indexes() []docstore.Index {
	asc := func(fs ...string) []docstore.Order {
		out := make([]docstore.Order, len(fs))
		for i, f := range fs {
			out[i] = docstore.Order{Field: f}
		}
		return out
	}
	desc := func(f string) docstore.Order { return docstore.Order{Field: f, Desc: true} }
	return []docstore.Index{
		{Collection: colQueues, Fields: asc(fLive, fName)},                      // QueueList, retention rounds
		{Collection: colGroups, Fields: asc(fInc, fGen, fShard, fReady)},        // FIFO candidates, in-flight counts
		{Collection: colGroups, Fields: asc(fInc, fGen, fShard, fReady, fInfl)}, // FIFO in-flight sums
		{Collection: colGroups, Fields: asc(fInc, fGen, fPend)},                 // FIFO remaining sums
		{Collection: colMessages, Fields: asc(fInc, fGen, fShard, fVis, fN)},    // FIFO delayed sums
		{Collection: colGroups, Fields: asc(fInc, fGen)},                        // FIFO counts, purge cleanup
		{Collection: colGroups, Fields: asc(fInc, fGen, fSplit)},                // FIFO in-flight counts
		{Collection: colGroups, Fields: asc(fShard, fIdle)},                     // idle groups
		{Collection: colMessages, Fields: asc(fInc, fGen, fShard, fVis)},        // Standard candidates, delayed counts
		{Collection: colMessages, Fields: asc(fInc, fGen, fRecv, fShard, fVis)}, // Standard counts
		{Collection: colMessages, Fields: asc(fInc, fGen, fShard, fSent)},       // retention sweeps
		{Collection: colMessages, Fields: asc(fInc, fGen)},                      // counts, purge cleanup
		{Collection: colChunks, Fields: asc(fInc, fGen)},                        // purge cleanup
		{Collection: colDedup, Fields: asc(fInc, fGen)},                         // purge cleanup
		{Collection: colDedup, Fields: asc(fShard, fExp)},                       // expiry
		{Collection: colAttempts, Fields: asc(fInc, fGen)},                      // purge cleanup
		{Collection: colAttempts, Fields: asc(fShard, fExp)},                    // expiry
		{Collection: colTasks, Fields: []docstore.Order{{Field: fSrc}, {Field: fStat}, desc(fStart)}},
		{Collection: colTasks, Fields: []docstore.Order{{Field: fSrc}, desc(fStart)}},
		{Collection: colTasks, Fields: []docstore.Order{{Field: fStat}, desc(fStart)}},
	}
}

// Unindexed are the fields that need no single-field index: records and
// bodies (large, never queried) and the times that every send or claim
// writes in sequence (an index on one of them alone would be a hot range
// across all queues; the composite indexes above spread them by queue and
// shard).
func Unindexed() []Field {
	var out []Field
	for _, col := range []string{colQueues, colGroups, colMessages, colChunks, colDedup, colAttempts, colCounters, colTasks, colTaskGuards, colTrash} {
		out = append(out, Field{Collection: col, Name: fData})
	}
	return append(out,
		Field{Collection: colMessages, Name: fVis},
		Field{Collection: colMessages, Name: fSent},
		Field{Collection: colGroups, Name: fReady},
		Field{Collection: colGroups, Name: fIdle},
		Field{Collection: colDedup, Name: fExp},
		Field{Collection: colAttempts, Name: fExp},
	)
}

// Expiring are the time fields past which a document is of no use: dedup
// markers and receive attempts after their window. Maintain removes such
// documents, unless Options.ExpiredByBackend (a TTL policy on each field).
func Expiring() []Field {
	return []Field{{Collection: colDedup, Name: fExp}, {Collection: colAttempts, Name: fExp}}
}

// Field names a field of a collection.
type Field struct{ Collection, Name string }

// Schema declares every collection's fields with their types, for backends
// with typed tables (stores/spanner); a test checks that every document the
// protocol writes keeps to it.
func Schema() []docstore.Table {
	col := func(name string, t docstore.Type) docstore.Column { return docstore.Column{Name: name, Type: t} }
	var (
		data  = col(fData, docstore.Bytes)
		inc   = col(fInc, docstore.String)
		gen   = col(fGen, docstore.Int64)
		shard = col(fShard, docstore.Int64)
		exp   = col(fExp, docstore.Time)
	)
	return []docstore.Table{
		{Collection: colQueues, Fields: []docstore.Column{col(fLive, docstore.Bool), col(fName, docstore.String), data}},
		{Collection: colGroups, Fields: []docstore.Column{inc, gen, shard, col(fPend, docstore.Int64), col(fInfl, docstore.Int64),
			col(fSplit, docstore.Bool), col(fReady, docstore.Int64), col(fIdle, docstore.Time), data}},
		{Collection: colMessages, Fields: []docstore.Column{inc, gen, shard, col(fVis, docstore.Time), col(fSent, docstore.Time),
			col(fRecv, docstore.Bool), col(fN, docstore.Int64), data}},
		{Collection: colChunks, Fields: []docstore.Column{inc, gen, data}},
		{Collection: colDedup, Fields: []docstore.Column{inc, gen, shard, exp, data}},
		{Collection: colAttempts, Fields: []docstore.Column{inc, gen, shard, exp, data}},
		{Collection: colCounters, Fields: []docstore.Column{inc, col("next", docstore.Int64)}},
		{Collection: colTasks, Fields: []docstore.Column{col(fSrc, docstore.String), col(fStat, docstore.String), col(fStart, docstore.Time), data}},
		{Collection: colTaskGuards, Fields: []docstore.Column{col("handle", docstore.String)}},
		{Collection: colTrash, Fields: []docstore.Column{col("below", docstore.Int64), col("since", docstore.Time), data}},
	}
}
