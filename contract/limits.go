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
	MaxMoveRate            = 500 // StartMessageMoveTask MaxNumberOfMessagesPerSecond
	MaxPolicyLength        = 20480
)

// Windows of time that SQS rules count in.
const (
	DedupWindow            = 5 * time.Minute
	ReceiveAttemptWindow   = 5 * time.Minute
	PurgeInterval          = 60 * time.Second
	QueueRecreateCooldown  = 60 * time.Second
	MaxVisibilityFromFirst = MaxVisibilityTimeout * time.Second
)
