package rules

import "strconv"

// FirstSequence is the first FIFO SequenceNumber a store hands out: 10^19,
// so that every SequenceNumber has 20 decimal digits, as SQS's have, and
// their text sorts as their numbers do.
const FirstSequence uint64 = 10000000000000000000

// SequenceNumber is the SequenceNumber of a store's n-th number (counting
// from 0): FirstSequence + n, in decimal.
func SequenceNumber(n uint64) string {
	return strconv.FormatUint(FirstSequence+n, 10)
}
