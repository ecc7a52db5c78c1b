package contract

import (
	"fmt"
	"net/url"
	"strings"
)

const FIFOSuffix = ".fifo"

// IsFIFOName tells whether a queue name has the .fifo suffix.
func IsFIFOName(name string) bool { return strings.HasSuffix(name, FIFOSuffix) }

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// ValidQueueName checks the characters and length of a queue name; fifo
// says whether the queue is a FIFO queue (the name must then end in .fifo).
func ValidQueueName(name string, fifo bool) *Error {
	base := name
	if fifo {
		if !IsFIFOName(name) {
			return errFIFOName()
		}
		base = strings.TrimSuffix(name, FIFOSuffix)
	}
	if len(name) == 0 || len(name) > MaxQueueNameLength || len(base) == 0 {
		if fifo {
			return errFIFOName()
		}
		return errQueueName()
	}
	for i := 0; i < len(base); i++ {
		if !isNameChar(base[i]) {
			if fifo {
				return errFIFOName()
			}
			return errQueueName()
		}
	}
	return nil
}

func errQueueName() *Error {
	return ErrInvalidParameterValue("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
}

func errFIFOName() *Error {
	return ErrInvalidParameterValue("The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.")
}

// ValidBatchEntryID checks a batch entry Id.
func ValidBatchEntryID(id string) bool {
	if len(id) == 0 || len(id) > MaxBatchEntryIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isNameChar(id[i]) {
			return false
		}
	}
	return true
}

// QueueURL forms a queue URL from a base ("https://host") and names.
func QueueURL(base, accountID, name string) string {
	return strings.TrimRight(base, "/") + "/" + accountID + "/" + name
}

// QueueARN forms a queue ARN.
func QueueARN(region, accountID, name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, accountID, name)
}

// ParseQueueURL returns the account id and queue name of a queue URL. The
// host is not checked: a deployment answers for every host it is reached by.
// A bare queue name (no scheme, no slash), which SQS accepts wherever a
// QueueUrl is expected, gives the name and an empty account id: it names
// the caller's queue.
func ParseQueueURL(raw string) (accountID, name string, ok bool) {
	if raw != "" && !strings.ContainsAny(raw, "/:") {
		return "", raw, true
	}
	path := raw
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", "", false
		}
		path = u.Path
	}
	// ACCOUNT/NAME, exactly two parts, neither empty.
	accountID, name, ok = strings.Cut(strings.Trim(path, "/"), "/")
	if !ok || accountID == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return accountID, name, true
}

// ParseQueueARN returns the region, account id and queue name of an SQS ARN.
func ParseQueueARN(arn string) (region, accountID, name string, ok bool) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[5] == "" {
		return "", "", "", false
	}
	return parts[3], parts[4], parts[5], true
}

// ValidQueueNamePrefix checks a ListQueues QueueNamePrefix: no queue name is
// longer than MaxQueueNameLength, so neither is a prefix. The value is not
// echoed: it may be as long as the request.
func ValidQueueNamePrefix(prefix string) *Error {
	if len(prefix) > MaxQueueNameLength {
		return ErrInvalidParameterValue(fmt.Sprintf("Value for parameter QueueNamePrefix is invalid. Reason: Queue name prefix must be at most %d characters.", MaxQueueNameLength))
	}
	return nil
}

// ValidAccountID says whether s is an AWS account id: 12 digits.
func ValidAccountID(s string) bool {
	return len(s) == 12 && strings.Trim(s, "0123456789") == ""
}
