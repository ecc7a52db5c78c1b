package contract

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Queue attribute names.
const (
	AttrAll                       = "All"
	AttrApproxMessages            = "ApproximateNumberOfMessages"
	AttrApproxNotVisible          = "ApproximateNumberOfMessagesNotVisible"
	AttrApproxDelayed             = "ApproximateNumberOfMessagesDelayed"
	AttrCreatedTimestamp          = "CreatedTimestamp"
	AttrLastModifiedTimestamp     = "LastModifiedTimestamp"
	AttrQueueArn                  = "QueueArn"
	AttrDelaySeconds              = "DelaySeconds"
	AttrMaximumMessageSize        = "MaximumMessageSize"
	AttrMessageRetentionPeriod    = "MessageRetentionPeriod"
	AttrPolicy                    = "Policy"
	AttrReceiveWaitTime           = "ReceiveMessageWaitTimeSeconds"
	AttrVisibilityTimeout         = "VisibilityTimeout"
	AttrRedrivePolicy             = "RedrivePolicy"
	AttrRedriveAllowPolicy        = "RedriveAllowPolicy"
	AttrKmsMasterKeyID            = "KmsMasterKeyId"
	AttrKmsDataKeyReusePeriod     = "KmsDataKeyReusePeriodSeconds"
	AttrSqsManagedSseEnabled      = "SqsManagedSseEnabled"
	AttrFifoQueue                 = "FifoQueue"
	AttrContentBasedDeduplication = "ContentBasedDeduplication"
	AttrDeduplicationScope        = "DeduplicationScope"
	AttrFifoThroughputLimit       = "FifoThroughputLimit"
)

// ReadOnlyQueueAttributes are computed, never set.
var ReadOnlyQueueAttributes = []string{AttrApproxMessages, AttrApproxNotVisible, AttrApproxDelayed,
	AttrCreatedTimestamp, AttrLastModifiedTimestamp, AttrQueueArn}

var settableQueueAttributes = map[string]bool{
	AttrDelaySeconds: true, AttrMaximumMessageSize: true, AttrMessageRetentionPeriod: true, AttrPolicy: true,
	AttrReceiveWaitTime: true, AttrVisibilityTimeout: true, AttrRedrivePolicy: true, AttrRedriveAllowPolicy: true,
	AttrKmsMasterKeyID: true, AttrKmsDataKeyReusePeriod: true, AttrSqsManagedSseEnabled: true,
}

var fifoOnlyQueueAttributes = map[string]bool{
	AttrFifoQueue: true, AttrContentBasedDeduplication: true, AttrDeduplicationScope: true, AttrFifoThroughputLimit: true,
}

// IsQueueAttributeName tells whether name is a queue attribute GetQueueAttributes knows.
func IsQueueAttributeName(name string) bool {
	if name == AttrAll || settableQueueAttributes[name] || fifoOnlyQueueAttributes[name] {
		return true
	}
	for _, n := range ReadOnlyQueueAttributes {
		if n == name {
			return true
		}
	}
	return false
}

// DefaultQueueAttributes are the stored attributes of a new queue.
func DefaultQueueAttributes(fifo bool) map[string]string {
	a := map[string]string{
		AttrDelaySeconds:           "0",
		AttrMaximumMessageSize:     strconv.Itoa(DefaultMaxMessageSize),
		AttrMessageRetentionPeriod: strconv.Itoa(DefaultRetentionPeriod),
		AttrReceiveWaitTime:        "0",
		AttrVisibilityTimeout:      strconv.Itoa(DefaultVisibility),
		AttrSqsManagedSseEnabled:   "true",
	}
	if fifo {
		a[AttrFifoQueue] = "true"
		a[AttrContentBasedDeduplication] = "false"
		a[AttrDeduplicationScope] = "queue"
		a[AttrFifoThroughputLimit] = "perQueue"
	}
	return a
}

type intRange struct{ min, max int }

var intQueueAttributes = map[string]intRange{
	AttrDelaySeconds:           {0, MaxDelaySeconds},
	AttrMaximumMessageSize:     {MinMessageSizeLimit, MaxMessageSizeLimit},
	AttrMessageRetentionPeriod: {MinRetentionPeriod, MaxRetentionPeriod},
	AttrReceiveWaitTime:        {0, MaxWaitTimeSeconds},
	AttrVisibilityTimeout:      {0, MaxVisibilityTimeout},
	AttrKmsDataKeyReusePeriod:  {MinKmsReusePeriod, MaxKmsReusePeriod},
}

func invalidAttr(name string) *Error {
	return ErrInvalidAttributeValue("Invalid value for the parameter " + name + ".")
}

// NormalizeQueueAttributes validates attributes given to CreateQueue
// (creating) or SetQueueAttributes and returns them normalised (booleans
// lower-case, integers canonical). It checks everything that needs no other
// queue; dead-letter targets are checked by the service. An empty value of
// Policy, RedrivePolicy, RedriveAllowPolicy or KmsMasterKeyId means "remove".
func NormalizeQueueAttributes(given map[string]string, fifo, creating bool) (map[string]string, *Error) {
	out := make(map[string]string, len(given))
	for name, v := range given {
		switch {
		case name == AttrFifoQueue:
			if !fifo {
				return nil, ErrUnknownAttribute(name)
			}
			if b, ok := parseBool(v); !ok || !b {
				if creating {
					return nil, errFIFOName()
				}
				return nil, ErrInvalidAttributeValueFor(AttrFifoQueue, "Modifying queue type is not supported.")
			}
			out[name] = "true"
		case fifoOnlyQueueAttributes[name]:
			if !fifo {
				if creating && name != AttrContentBasedDeduplication {
					return nil, ErrInvalidAttributeName("You can specify the " + name + " only when FifoQueue is set to true.")
				}
				return nil, ErrUnknownAttribute(name)
			}
			switch name {
			case AttrContentBasedDeduplication:
				b, ok := parseBool(v)
				if !ok {
					return nil, invalidAttr(name)
				}
				out[name] = strconv.FormatBool(b)
			case AttrDeduplicationScope:
				if v != "queue" && v != "messageGroup" {
					return nil, invalidAttr(name)
				}
				out[name] = v
			case AttrFifoThroughputLimit:
				if v != "perQueue" && v != "perMessageGroupId" {
					return nil, invalidAttr(name)
				}
				out[name] = v
			}
		case intQueueAttributes[name] != (intRange{}):
			r := intQueueAttributes[name]
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < r.min || n > r.max {
				return nil, invalidAttr(name)
			}
			out[name] = strconv.Itoa(n)
		case name == AttrSqsManagedSseEnabled:
			b, ok := parseBool(v)
			if !ok {
				return nil, invalidAttr(name)
			}
			out[name] = strconv.FormatBool(b)
		case name == AttrPolicy:
			if v != "" && !json.Valid([]byte(v)) {
				return nil, invalidAttr(name)
			}
			if len(v) > MaxPolicyLength {
				return nil, invalidAttr(name)
			}
			if e := CheckPolicyQuotas(v); e != nil {
				return nil, e
			}
			out[name] = v
		case name == AttrRedrivePolicy:
			if v != "" {
				p, err := ParseRedrivePolicy(v)
				if err != nil {
					return nil, err
				}
				v = p.String()
			}
			out[name] = v
		case name == AttrRedriveAllowPolicy:
			if v != "" {
				if _, err := ParseRedriveAllowPolicy(v); err != nil {
					return nil, err
				}
			}
			out[name] = v
		case name == AttrKmsMasterKeyID:
			out[name] = v
		default:
			return nil, ErrUnknownAttribute(name)
		}
	}
	if b, ok := out[AttrSqsManagedSseEnabled]; ok && b == "true" && out[AttrKmsMasterKeyID] != "" {
		return nil, ErrInvalidAttributeName("You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.")
	}
	return out, nil
}

// CheckQueueAttributeCombination checks rules that span attributes, on the
// attributes a queue would have.
func CheckQueueAttributeCombination(attrs map[string]string) *Error {
	if attrs[AttrFifoThroughputLimit] == "perMessageGroupId" && attrs[AttrDeduplicationScope] != "messageGroup" {
		return ErrInvalidAttributeValueFor(AttrFifoThroughputLimit, "The perMessageGroupId value is allowed only when the value for DeduplicationScope is messageGroup.")
	}
	return nil
}

// MergeQueueAttributes applies normalised changes to stored attributes and
// returns the result, keeping the SSE settings consistent (KMS and
// SQS-managed encryption exclude each other).
func MergeQueueAttributes(stored, changes map[string]string) map[string]string {
	out := make(map[string]string, len(stored)+len(changes))
	for k, v := range stored {
		out[k] = v
	}
	for k, v := range changes {
		if v == "" {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	if changes[AttrKmsMasterKeyID] != "" {
		out[AttrSqsManagedSseEnabled] = "false"
		if out[AttrKmsDataKeyReusePeriod] == "" {
			out[AttrKmsDataKeyReusePeriod] = strconv.Itoa(DefaultKmsReusePeriod)
		}
	}
	if changes[AttrSqsManagedSseEnabled] == "true" {
		delete(out, AttrKmsMasterKeyID)
		delete(out, AttrKmsDataKeyReusePeriod)
	}
	if v, ok := changes[AttrKmsMasterKeyID]; ok && v == "" {
		delete(out, AttrKmsDataKeyReusePeriod)
	}
	return out
}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// RedrivePolicy is the parsed RedrivePolicy attribute.
type RedrivePolicy struct {
	DeadLetterTargetArn string
	MaxReceiveCount     int
}

// String is the policy as SQS returns it: compact JSON, the target first,
// the count a number.
func (p *RedrivePolicy) String() string {
	arn, _ := json.Marshal(p.DeadLetterTargetArn)
	return `{"deadLetterTargetArn":` + string(arn) + `,"maxReceiveCount":` + strconv.Itoa(p.MaxReceiveCount) + `}`
}

// SameQueueAttributeValue says whether two normalised values of the queue
// attribute name mean the same, as CreateQueue compares them for an
// existing queue: a RedrivePolicy by its content (one stored before
// policies were normalised may be spelled differently), the others as
// strings.
func SameQueueAttributeValue(name, a, b string) bool {
	if a == b {
		return true
	}
	if name != AttrRedrivePolicy || a == "" || b == "" {
		return false
	}
	pa, ea := ParseRedrivePolicy(a)
	pb, eb := ParseRedrivePolicy(b)
	return ea == nil && eb == nil && *pa == *pb
}

func redriveErr(raw, reason string) *Error {
	return ErrInvalidValue(raw, AttrRedrivePolicy, reason)
}

// ParseRedrivePolicy parses and checks a RedrivePolicy value.
func ParseRedrivePolicy(raw string) (*RedrivePolicy, *Error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, ErrInvalidAttributeValueFor(AttrRedrivePolicy, "Redrive policy is not a valid JSON map.")
	}
	// AWS names a missing maxReceiveCount first: {} is refused for it.
	if m["maxReceiveCount"] == nil {
		return nil, redriveErr(raw, "Redrive policy does not contain mandatory attribute: maxReceiveCount.")
	}
	arn, _ := m["deadLetterTargetArn"].(string)
	if arn == "" {
		return nil, redriveErr(raw, "Redrive policy does not contain mandatory attribute: deadLetterTargetArn.")
	}
	if _, _, _, ok := ParseQueueARN(arn); !ok {
		return nil, redriveErr(raw, "Invalid value for deadLetterTargetArn.")
	}
	var n int
	switch v := m["maxReceiveCount"].(type) {
	case float64:
		n = int(v)
		if float64(n) != v {
			return nil, redriveErr(raw, fmt.Sprintf("Invalid value for maxReceiveCount: %v, valid values are from 1 to %d both inclusive.", v, MaxReceiveCountLimit))
		}
	case string:
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			return nil, redriveErr(raw, fmt.Sprintf("Invalid value for maxReceiveCount: %s, valid values are from 1 to %d both inclusive.", v, MaxReceiveCountLimit))
		}
	case nil:
		return nil, redriveErr(raw, "Redrive policy does not contain mandatory attribute: maxReceiveCount.")
	default:
		return nil, redriveErr(raw, fmt.Sprintf("Invalid value for maxReceiveCount: %v, valid values are from 1 to %d both inclusive.", v, MaxReceiveCountLimit))
	}
	if n < 1 || n > MaxReceiveCountLimit {
		return nil, redriveErr(raw, fmt.Sprintf("Invalid value for maxReceiveCount: %d, valid values are from 1 to %d both inclusive.", n, MaxReceiveCountLimit))
	}
	for k := range m {
		if k != "deadLetterTargetArn" && k != "maxReceiveCount" {
			return nil, redriveErr(raw, "Only following attributes are supported: [deadLetterTargetArn, maxReceiveCount].")
		}
	}
	return &RedrivePolicy{DeadLetterTargetArn: arn, MaxReceiveCount: n}, nil
}

// RedriveAllowPolicy is the parsed RedriveAllowPolicy attribute.
type RedriveAllowPolicy struct {
	Permission      string // allowAll, denyAll, byQueue
	SourceQueueArns []string
}

// ParseRedriveAllowPolicy parses and checks a RedriveAllowPolicy value.
func ParseRedriveAllowPolicy(raw string) (*RedriveAllowPolicy, *Error) {
	var p struct {
		RedrivePermission string   `json:"redrivePermission"`
		SourceQueueArns   []string `json:"sourceQueueArns"`
	}
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, ErrInvalidAttributeValueFor(AttrRedriveAllowPolicy, "Redrive allow policy is not a valid JSON map.")
	}
	reason := ""
	switch p.RedrivePermission {
	case "allowAll", "denyAll":
		if len(p.SourceQueueArns) > 0 {
			reason = "Only byQueue redrivePermission supports sourceQueueArns."
		}
	case "byQueue":
		if len(p.SourceQueueArns) == 0 || len(p.SourceQueueArns) > 10 {
			reason = "byQueue redrivePermission requires 1 to 10 sourceQueueArns."
		}
	default:
		reason = "Invalid value for redrivePermission."
	}
	if reason != "" {
		return nil, ErrInvalidValue(raw, AttrRedriveAllowPolicy, reason)
	}
	return &RedriveAllowPolicy{Permission: p.RedrivePermission, SourceQueueArns: p.SourceQueueArns}, nil
}

// Allows tells whether the policy lets sourceArn use the queue as its
// dead-letter queue.
func (p *RedriveAllowPolicy) Allows(sourceArn string) bool {
	switch p.Permission {
	case "denyAll":
		return false
	case "byQueue":
		for _, a := range p.SourceQueueArns {
			if a == sourceArn {
				return true
			}
		}
		return false
	}
	return true
}

// QueueConfig is the typed view of a queue's stored attributes.
type QueueConfig struct {
	FIFO              bool
	DelaySeconds      int
	MaxMessageSize    int
	RetentionSeconds  int
	WaitTimeSeconds   int
	VisibilityTimeout int
	ContentBasedDedup bool
	DedupPerGroup     bool
	Redrive           *RedrivePolicy
	RedriveAllow      *RedriveAllowPolicy
}

// ParseQueueConfig reads stored (already normalised) attributes.
func ParseQueueConfig(attrs map[string]string) QueueConfig {
	num := func(name string, def int) int {
		if n, err := strconv.Atoi(attrs[name]); err == nil {
			return n
		}
		return def
	}
	c := QueueConfig{
		FIFO:              attrs[AttrFifoQueue] == "true",
		DelaySeconds:      num(AttrDelaySeconds, 0),
		MaxMessageSize:    num(AttrMaximumMessageSize, DefaultMaxMessageSize),
		RetentionSeconds:  num(AttrMessageRetentionPeriod, DefaultRetentionPeriod),
		WaitTimeSeconds:   num(AttrReceiveWaitTime, 0),
		VisibilityTimeout: num(AttrVisibilityTimeout, DefaultVisibility),
		ContentBasedDedup: attrs[AttrContentBasedDeduplication] == "true",
		DedupPerGroup:     attrs[AttrDeduplicationScope] == "messageGroup",
	}
	if raw := attrs[AttrRedrivePolicy]; raw != "" {
		c.Redrive, _ = ParseRedrivePolicy(raw)
	}
	if raw := attrs[AttrRedriveAllowPolicy]; raw != "" {
		c.RedriveAllow, _ = ParseRedriveAllowPolicy(raw)
	}
	return c
}
