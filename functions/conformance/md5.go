package conformance

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/contract"
)

// This file is the suite's own implementation of SQS's digests, written
// from the published algorithm and deliberately independent of contract's,
// so that a shared mistake cannot pass unnoticed. md5_test.go checks it
// against digests recorded from real SQS.

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// md5OfBody is MD5OfMessageBody: the hex MD5 of the body's UTF-8 bytes.
func md5OfBody(body string) string { return md5Hex([]byte(body)) }

// md5OfAttributes is MD5OfMessageAttributes (and, over system attributes,
// MD5OfMessageSystemAttributes): for each attribute in name order, the
// name, the data type and the value, each as a 4-byte big-endian length and
// its bytes, with one transport byte before the value: 1 for String and
// Number (the value is StringValue), 2 for Binary (the value is
// BinaryValue). Custom type suffixes ("Number.int") keep the base type's
// transport. No attributes: "".
func md5OfAttributes(attrs map[string]contract.MessageAttributeValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf []byte
	field := func(b []byte) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
		buf = append(buf, b...)
	}
	for _, n := range names {
		a := attrs[n]
		field([]byte(n))
		field([]byte(a.DataType))
		if strings.HasPrefix(a.DataType, "Binary") {
			buf = append(buf, 2)
			field(a.BinaryValue)
		} else {
			buf = append(buf, 1)
			v := ""
			if a.StringValue != nil {
				v = *a.StringValue
			}
			field([]byte(v))
		}
	}
	return md5Hex(buf)
}
