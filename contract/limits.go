package contract

import "time"

// Limits and defaults of Amazon SQS.
const (
	APIVersion = "2012-11-05"
	XMLNS      = "http://queue.amazonaws.com/doc/2012-11-05/"

	MaxBatchEntries        = 10
	MaxBatchEntryIDLength  = 80
	MaxQueueNameLength     = 80
	MaxMessageSizeLimit    = 1048576 // upper bound of MaximumMessageSize and of a batch
	MinMessageSizeLimit    = 1024
	DefaultMaxMessageSize  = 1048576
	MaxVisibilityTimeout   = 43200 // seconds; also the cap counted from the first receive
	DefaultVisibility      = 30
	MaxDelaySeconds        = 900
	MinRetentionPeriod     = 60
	MaxRetentionPeriod     = 1209600
	DefaultRetentionPeriod = 345600
	MaxWaitTimeSeconds     = 20
	MaxReceiveMessages     = 10
	MaxMessageAttributes   = 10
	MaxAttributeNameLength = 256
	MaxDedupIDLength       = 128
	MaxGroupIDLength       = 128
	MaxAttemptIDLength     = 128
	MaxTagsPerQueue        = 50
	MaxTagKeyLength        = 128
	MaxTagValueLength      = 256
	MaxListResults         = 1000
	MaxReceiveCountLimit   = 1000
	DefaultKmsReusePeriod  = 300
	MinKmsReusePeriod      = 60
	MaxKmsReusePeriod      = 86400
	MaxMoveRate            = 500  // StartMessageMoveTask MaxNumberOfMessagesPerSecond
	MaxPolicyLength        = 8192 // bytes: the SQS policy quota
)

// Request body caps, per protocol. A request carries at most
// MaxMessageSizeLimit bytes of message (bodies, attribute names, types and
// values, summed over a batch); what it may legally take on the wire is
// that payload times its protocol's worst encoding, plus an envelope.
const (
	// JSON: an encoder may write any character as \u00XX (Go's escapes <, >
	// and &; others escape all non-ASCII: 6 bytes for 2 or 3), 6 bytes per
	// byte at worst; base64 of binary values is 4/3, less.
	jsonBytesPerPayloadByte = 6
	// Query: percent-encoding triples a byte of text; a binary value is
	// base64 (4/3) and then percent-encoded (x3): 4 bytes per byte.
	queryBytesPerPayloadByte = 4
	// requestEnvelopeBytes covers what the payload does not count: member
	// or parameter names of up to 10 entries of 10 attributes each (a Query
	// name such as SendMessageBatchRequestEntry.10.MessageAttribute.10.Value.StringValue
	// is 75 bytes; 300 of them are 23 KiB), entry, group and deduplication
	// ids (336 characters an entry, escaped), the queue URL and the
	// AWSTraceHeader system attribute.
	requestEnvelopeBytes = 64 << 10

	MaxJSONRequestBytes  = jsonBytesPerPayloadByte*MaxMessageSizeLimit + requestEnvelopeBytes
	MaxQueryRequestBytes = queryBytesPerPayloadByte*MaxMessageSizeLimit + requestEnvelopeBytes
)

// Windows of time that SQS rules count in.
const (
	DedupWindow              = 5 * time.Minute
	ReceiveAttemptWindow     = 5 * time.Minute
	PurgeInterval            = 60 * time.Second
	QueueRecreateCooldown    = 60 * time.Second
	MaxVisibilityFromReceive = MaxVisibilityTimeout * time.Second // a receipt's visibility ends at most this long after its receive
)
