package contract

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sort"
	"strings"
	"unsafe"
)

// MD5OfBody is the hex MD5 of a message body (MD5OfMessageBody, MD5OfBody).
func MD5OfBody(body string) string {
	sum := md5.Sum(bytesOf(body))
	return hex.EncodeToString(sum[:])
}

// ContentDeduplicationID is the deduplication ID SQS gives a message sent
// without one to a FIFO queue with ContentBasedDeduplication: the hex
// SHA-256 of its body.
func ContentDeduplicationID(body string) string {
	sum := sha256.Sum256(bytesOf(body))
	return hex.EncodeToString(sum[:])
}

// bytesOf is s's bytes in place, for a hash to read: []byte(s) would copy
// a body (up to 1 MiB) on every send only to hash it, and the hashes
// neither keep nor change what they are given.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// MD5OfAttributes digests message attributes the way SQS does for
// MD5OfMessageAttributes and MD5OfMessageSystemAttributes: attributes sorted
// by name, each as length-prefixed name, length-prefixed data type, a
// transport byte (1 string, 2 binary, 3 string list, 4 binary list) and the
// length-prefixed value(s). Empty when there are no attributes.
func MD5OfAttributes(attrs map[string]MessageAttributeValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	for _, n := range names {
		v := attrs[n]
		writeLenPrefixed(h, []byte(n))
		writeLenPrefixed(h, []byte(v.DataType))
		switch {
		case v.StringValue != nil:
			h.Write([]byte{1})
			writeLenPrefixed(h, []byte(*v.StringValue))
		case v.BinaryValue != nil:
			h.Write([]byte{2})
			writeLenPrefixed(h, v.BinaryValue)
		case len(v.StringListValues) > 0:
			h.Write([]byte{3})
			for _, s := range v.StringListValues {
				writeLenPrefixed(h, []byte(s))
			}
		case len(v.BinaryListValues) > 0:
			h.Write([]byte{4})
			for _, b := range v.BinaryListValues {
				writeLenPrefixed(h, b)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeLenPrefixed(h hash.Hash, b []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// BaseDataType is the part of a DataType before any custom ".label" suffix.
func BaseDataType(dataType string) string {
	if i := strings.IndexByte(dataType, '.'); i >= 0 {
		return dataType[:i]
	}
	return dataType
}
