package contract

import (
	"fmt"
	"net/http"
)

// Error is an SQS error as both protocols report it.
//
// Code is the legacy (Query) error code, which the Query protocol puts in
// <Code> and the JSON protocol in the x-amzn-query-error header; Type is the
// JSON protocol's shape name (the part after "#" in __type).
type Error struct {
	Code    string
	Type    string
	Status  int
	Sender  bool
	Message string
	// QueryMessage, when set, replaces Message on the Query protocol: AWS
	// words a few errors differently there.
	QueryMessage string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// MessageFor returns the message to send on the Query protocol (query=true)
// or the JSON protocol.
func (e *Error) MessageFor(query bool) string {
	if query && e.QueryMessage != "" {
		return e.QueryMessage
	}
	return e.Message
}

func sender(code, typ string, status int, msg string) *Error {
	return &Error{Code: code, Type: typ, Status: status, Sender: true, Message: msg}
}

// Errors of the catalogue. Codes, shapes and statuses are AWS's, as recorded
// against real SQS and listed in botocore's service model.

func ErrQueueDoesNotExist() *Error {
	e := sender("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", http.StatusBadRequest,
		"The specified queue does not exist.")
	e.QueryMessage = "The specified queue does not exist for this wsdl version."
	return e
}

func ErrQueueNameExists(attr string) *Error {
	return sender("QueueAlreadyExists", "QueueNameExists", http.StatusBadRequest,
		"A queue already exists with the same name and a different value for attribute "+attr)
}

func ErrQueueDeletedRecently(name string) *Error {
	return sender("AWS.SimpleQueueService.QueueDeletedRecently", "QueueDeletedRecently", http.StatusBadRequest,
		"You must wait 60 seconds after deleting a queue before you can create another with the same name.")
}

func ErrPurgeQueueInProgress(name string) *Error {
	return sender("AWS.SimpleQueueService.PurgeQueueInProgress", "PurgeQueueInProgress", http.StatusForbidden,
		"Only one PurgeQueue operation on "+name+" is allowed every 60 seconds.")
}

// ErrInvalidParameterValue is AWS's generic bad-value error with a free text.
func ErrInvalidParameterValue(msg string) *Error {
	return sender("InvalidParameterValue", "InvalidParameterValueException", http.StatusBadRequest, msg)
}

// ErrInvalidValue words the common "Value X for parameter P is invalid. Reason: R" form.
func ErrInvalidValue(value any, param, reason string) *Error {
	return ErrInvalidParameterValue(fmt.Sprintf("Value %v for parameter %s is invalid. Reason: %s", value, param, reason))
}

func ErrMissingParameter(param string) *Error {
	return sender("MissingParameter", "MissingRequiredParameterException", http.StatusBadRequest,
		"The request must contain the parameter "+param+".")
}

func ErrInvalidAttributeName(msg string) *Error {
	return sender("InvalidAttributeName", "InvalidAttributeName", http.StatusBadRequest, msg)
}

func ErrUnknownAttribute(name string) *Error {
	return ErrInvalidAttributeName("Unknown Attribute " + name + ".")
}

func ErrInvalidAttributeValue(msg string) *Error {
	return sender("InvalidAttributeValue", "InvalidAttributeValue", http.StatusBadRequest, msg)
}

// ErrInvalidAttributeValueFor words "Invalid value for the parameter P. Reason: R".
func ErrInvalidAttributeValueFor(param, reason string) *Error {
	return ErrInvalidAttributeValue("Invalid value for the parameter " + param + ". Reason: " + reason)
}

func ErrReceiptHandleIsInvalid(handle string) *Error {
	return sender("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", http.StatusBadRequest,
		fmt.Sprintf("The input receipt handle \"%s\" is not a valid receipt handle.", handle))
}

func ErrReceiptHandleExpired(handle string) *Error {
	return ErrInvalidValue(handle, "ReceiptHandle", "The receipt handle has expired.")
}

func ErrMessageNotInflight() *Error {
	return sender("AWS.SimpleQueueService.MessageNotInflight", "MessageNotInflight", http.StatusBadRequest,
		"Message does not exist or is not available for visibility timeout change.")
}

func ErrBatchEntryIdsNotDistinct(id string) *Error {
	return sender("AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "BatchEntryIdsNotDistinct", http.StatusBadRequest,
		"Id "+id+" repeated.")
}

func ErrBatchRequestTooLong(size int) *Error {
	return sender("AWS.SimpleQueueService.BatchRequestTooLong", "BatchRequestTooLong", http.StatusBadRequest,
		fmt.Sprintf("Batch requests cannot be longer than %d bytes. You have sent %d bytes.", MaxMessageSizeLimit, size))
}

// ErrEmptyBatchRequest names the entry type of the batch action, for example
// SendMessageBatchRequestEntry.
func ErrEmptyBatchRequest(entryType string) *Error {
	return sender("AWS.SimpleQueueService.EmptyBatchRequest", "EmptyBatchRequest", http.StatusBadRequest,
		"There should be at least one "+entryType+" in the request.")
}

func ErrInvalidBatchEntryId() *Error {
	return sender("AWS.SimpleQueueService.InvalidBatchEntryId", "InvalidBatchEntryId", http.StatusBadRequest,
		"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.")
}

func ErrTooManyEntriesInBatchRequest(n int) *Error {
	return sender("AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "TooManyEntriesInBatchRequest", http.StatusBadRequest,
		fmt.Sprintf("Maximum number of entries per request are %d. You have sent %d.", MaxBatchEntries, n))
}

func ErrInvalidMessageContents() *Error {
	return sender("InvalidMessageContents", "InvalidMessageContents", http.StatusBadRequest,
		"Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF")
}

// ErrRequestThrottled is SQS's throttling error (code and shape
// RequestThrottled, 400, sender fault); the SDKs retry it with backoff.
func ErrRequestThrottled(msg string) *Error {
	return sender("RequestThrottled", "RequestThrottled", http.StatusBadRequest, msg)
}

func ErrOverLimit(msg string) *Error {
	return sender("OverLimit", "OverLimit", http.StatusForbidden, msg)
}

func ErrUnsupportedOperation(msg string) *Error {
	return sender("AWS.SimpleQueueService.UnsupportedOperation", "UnsupportedOperation", http.StatusBadRequest, msg)
}

func ErrResourceNotFound(msg string) *Error {
	return sender("ResourceNotFoundException", "ResourceNotFoundException", http.StatusNotFound, msg)
}

func ErrInvalidAddress(msg string) *Error {
	return sender("InvalidAddress", "InvalidAddress", http.StatusNotFound, msg)
}

// ErrUnknownOperation is the JSON protocol's answer to an unknown X-Amz-Target.
func ErrUnknownOperation() *Error {
	return sender("UnknownOperationException", "UnknownOperationException", http.StatusBadRequest,
		"An unknown operation was requested.")
}

// ErrInvalidAction is the Query protocol's answer to an unknown Action.
func ErrInvalidAction(action string) *Error {
	if action == "" {
		return sender("InvalidAction", "InvalidAction", http.StatusBadRequest, "The request must contain the parameter Action.")
	}
	return sender("InvalidAction", "InvalidAction", http.StatusBadRequest,
		"The action "+action+" is not valid for this endpoint.")
}

// ErrSerialization is what AWS JSON services answer to a body that is not
// JSON or does not fit the operation's input shape.
func ErrSerialization(msg string) *Error {
	return sender("SerializationException", "SerializationException", http.StatusBadRequest, msg)
}

// ErrMalformedRequest answers a body that cannot be decoded at all.
func ErrMalformedRequest(msg string) *Error {
	return sender("InvalidParameterValue", "InvalidParameterValueException", http.StatusBadRequest, msg)
}

// ErrServiceUnavailable answers a request the service cannot take for now
// but expects to later (the embedded store's disk is full); nothing was
// changed. It is AWS's common error for a temporary failure of the server;
// SDKs retry it.
func ErrServiceUnavailable() *Error {
	return &Error{Code: "ServiceUnavailable", Type: "ServiceUnavailable", Status: http.StatusServiceUnavailable,
		Message: "The request has failed due to a temporary failure of the server."}
}

// ErrInternal answers a failure of ours (a store that cannot be reached);
// SDKs retry it.
func ErrInternal() *Error {
	return &Error{Code: "InternalError", Type: "InternalError", Status: http.StatusInternalServerError,
		Message: "We encountered an internal error. Please try again."}
}
