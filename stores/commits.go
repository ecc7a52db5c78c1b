package stores

// CommitCounter is what a store that makes its own writes durable offers
// (embedded: bbolt on local disk): how many durable commits it made since
// it opened. A commit is the unit of its durable work (embedded: one
// transaction, two fdatasyncs), shared by every operation in it, so
// commits per message say how well concurrent operations share them.
type CommitCounter interface {
	Commits() uint64
}
