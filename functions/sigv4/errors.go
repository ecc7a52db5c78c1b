package sigv4

import (
	"net/http"

	"github.com/sluicehq/sluice/contract"
)

// The errors a verification ends with; the package doc says where each
// wording comes from. Type is the code: awsQueryCompatible SDKs take the
// code from the x-amzn-query-error header.

func authError(code string, status int, msg string) *contract.Error {
	return &contract.Error{Code: code, Type: code, Status: status, Sender: true, Message: msg}
}

// MessageSignatureDoesNotMatch is AWS's answer to a signature that is not
// the one the server computes.
const MessageSignatureDoesNotMatch = "The request signature we calculated does not match the signature you provided. " +
	"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."

// MessageInvalidClientTokenID is AWS's answer to an unknown access key.
const MessageInvalidClientTokenID = "The security token included in the request is invalid."

func errSignatureDoesNotMatch() *contract.Error { return errSignature(MessageSignatureDoesNotMatch) }

// errSignature is SignatureDoesNotMatch with a message of its own (scope,
// time).
func errSignature(msg string) *contract.Error {
	return authError("SignatureDoesNotMatch", http.StatusForbidden, msg)
}

func errInvalidClientTokenID() *contract.Error {
	return authError("InvalidClientTokenId", http.StatusForbidden, MessageInvalidClientTokenID)
}

func errIncomplete(msg string) *contract.Error {
	return authError("IncompleteSignature", http.StatusBadRequest, msg)
}

func errHostNotSigned() *contract.Error {
	return errIncomplete("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.")
}

func errTargetNotSigned() *contract.Error {
	return errIncomplete("'X-Amz-Target' must be a 'SignedHeader' in the AWS Authorization.")
}

// errAccessDenied answers a request without a signature: an anonymous
// request, which no queue's policy allows here.
func errAccessDenied(r *http.Request) *contract.Error {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return authError("AccessDenied", http.StatusForbidden,
		"Access to the resource "+printable(scheme+"://"+r.Host+r.URL.EscapedPath())+" is denied.")
}
