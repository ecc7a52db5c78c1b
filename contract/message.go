package contract

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Message system attribute names (ReceiveMessage AttributeNames /
// MessageSystemAttributeNames).
const (
	MsgAttrAll                      = "All"
	MsgAttrSenderID                 = "SenderId"
	MsgAttrSentTimestamp            = "SentTimestamp"
	MsgAttrApproxReceiveCount       = "ApproximateReceiveCount"
	MsgAttrApproxFirstReceive       = "ApproximateFirstReceiveTimestamp"
	MsgAttrSequenceNumber           = "SequenceNumber"
	MsgAttrMessageDeduplicationID   = "MessageDeduplicationId"
	MsgAttrMessageGroupID           = "MessageGroupId"
	MsgAttrAWSTraceHeader           = "AWSTraceHeader"
	MsgAttrDeadLetterQueueSourceArn = "DeadLetterQueueSourceArn"
)

// ValidBody reports whether every character of a body is one SQS accepts:
// #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
func ValidBody(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		if !validRune(r) {
			return false
		}
		i += size
	}
	return true
}

// Printable is s for an error message: each run of bytes or characters
// ValidBody refuses becomes one U+FFFD, so that both protocols echo the
// same text (a lone surrogate is one JSON escape but three bytes on the
// Query protocol) and no encoder has to repair it.
func Printable(s string) string {
	if ValidBody(s) {
		return s
	}
	var b strings.Builder
	bad := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size == 1 || !validRune(r) {
			if !bad {
				b.WriteRune(utf8.RuneError)
			}
			bad = true
			continue
		}
		bad = false
		b.WriteRune(r)
	}
	return b.String()
}

func validRune(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// ValidGroupOrDedupID reports whether s is 1 to 128 alphanumeric or
// punctuation characters (MessageGroupId, MessageDeduplicationId,
// ReceiveRequestAttemptId).
func ValidGroupOrDedupID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// ErrInvalidGroupID words the recorded error for a bad MessageGroupId.
func ErrInvalidGroupID(v string) *Error {
	return ErrInvalidValue(v, "MessageGroupId", "MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
}

// ErrInvalidDedupID words the recorded error for a bad MessageDeduplicationId.
func ErrInvalidDedupID(v string) *Error {
	return ErrInvalidValue(v, "MessageDeduplicationId", "MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length.")
}

// ValidateMessageAttributes checks user (system=false) or system message
// attributes and returns their size as counted against MaximumMessageSize.
func ValidateMessageAttributes(attrs map[string]MessageAttributeValue, system bool) (int, *Error) {
	kind := "user"
	if system {
		kind = "system"
	}
	if !system && len(attrs) > MaxMessageAttributes {
		return 0, ErrInvalidParameterValue(fmt.Sprintf("Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), MaxMessageAttributes))
	}
	size := 0
	for name, v := range attrs {
		if system {
			if name != MsgAttrAWSTraceHeader {
				return 0, ErrInvalidParameterValue("Message system attribute name '" + Printable(name) + "' is invalid.")
			}
			if v.DataType != "String" {
				return 0, ErrInvalidParameterValue("Message (system) attribute 'AWSTraceHeader' must have DataType String.")
			}
		} else if e := validAttributeName(name); e != nil {
			return 0, e
		}
		if v.DataType == "" {
			return 0, ErrInvalidParameterValue("The message attribute '" + name + "' must contain non-empty message attribute type.")
		}
		base := BaseDataType(v.DataType)
		// The data type has the body's character rules (a custom label is
		// free text): a digest over bytes that are not text could not be
		// delivered unchanged.
		if base != "String" && base != "Number" && base != "Binary" || len(v.DataType) > MaxAttributeNameLength || !ValidBody(v.DataType) {
			return 0, ErrInvalidParameterValue("The message attribute '" + name + "' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.")
		}
		if len(v.StringListValues) > 0 || len(v.BinaryListValues) > 0 {
			return 0, ErrInvalidParameterValue("Message (" + kind + ") attribute '" + name + "' uses list values, which are not supported.")
		}
		switch base {
		case "String", "Number":
			if v.StringValue == nil || *v.StringValue == "" {
				return 0, ErrInvalidParameterValue(fmt.Sprintf("Message (%s) attribute '%s' must contain a non-empty value of type '%s'.", kind, name, base))
			}
			if !ValidBody(*v.StringValue) {
				return 0, ErrInvalidParameterValue(fmt.Sprintf("Message (%s) attribute '%s' contains invalid characters.", kind, name))
			}
			if base == "Number" {
				if !validNumber(*v.StringValue) {
					return 0, ErrInvalidParameterValue(fmt.Sprintf("Can't cast the value of message (%s) attribute '%s' to a number.", kind, name))
				}
			}
			size += len(*v.StringValue)
		case "Binary":
			if len(v.BinaryValue) == 0 {
				return 0, ErrInvalidParameterValue(fmt.Sprintf("Message (%s) attribute '%s' must contain a non-empty value of type 'Binary'.", kind, name))
			}
			size += len(v.BinaryValue)
		}
		size += len(name) + len(v.DataType)
	}
	return size, nil
}

func validAttributeName(name string) *Error {
	bad := func(reason string) *Error {
		return ErrInvalidParameterValue("Message (user) attribute name '" + Printable(name) + "' is invalid. " + reason)
	}
	if name == "" || len(name) > MaxAttributeNameLength {
		return bad("The attribute name must be between 1 and 256 characters long.")
	}
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") {
		return bad("The attribute name can't start with AWS-reserved prefixes 'AWS.' or 'Amazon.' (or any casing variations).")
	}
	if name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return bad("The attribute name can't start or end with a period or have two successive periods.")
	}
	for _, r := range name {
		if !attrNameRune(r) {
			return bad("The attribute name can contain only letters, digits, underscore (_), hyphen (-), and period (.).")
		}
	}
	// Beyond ASCII a name must still be text: bytes that are not UTF-8 would
	// be digested raw and delivered repaired, under a digest that no longer
	// matches.
	if !ValidBody(name) {
		return bad("The attribute name can contain only A-Z, a-z, 0-9, underscore (_), hyphen (-), and period (.).")
	}
	return nil
}

// attrNameRune says whether r may appear in a message attribute name. The
// docs' "alphanumeric characters" are letters and digits of any script:
// AWS accepts "attr.1øßä" and refuses "§", "€", "!", "(", "?" and quotes
// (LocalStack's AWS-validated test_send_message_with_invalid_string_attributes).
func attrNameRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isNameChar(byte(r)) || r == '.'
	}
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// decimalNumber is the syntax SQS reads a Number attribute in: a decimal,
// optionally signed, with an optional exponent (no NaN, infinities, hex or
// digit separators, which Go's float parser would take).
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// validNumber says whether s is a Number attribute's value SQS accepts: a
// decimal between 10^-128 and 10^+126 in magnitude, or zero.
func validNumber(s string) bool {
	if !decimalNumber.MatchString(s) {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return false
	}
	f = math.Abs(f)
	return f == 0 && !nonZeroDigit(s) || f >= 1e-128 && f <= 1e126
}

// nonZeroDigit says whether the mantissa of the decimal s has a digit
// other than 0 (a value too small for a float64 reads as zero).
func nonZeroDigit(s string) bool {
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	return strings.ContainsAny(mantissa, "123456789")
}
