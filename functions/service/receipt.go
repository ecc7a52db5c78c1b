package service

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// A receipt handle names one delivery: the queue incarnation, the message and
// the random token of the claim that delivered it. The token makes a handle
// unguessable; the incarnation keeps a handle from a deleted queue away from
// a new queue of the same name.
type receipt struct {
	QueueID   string
	MessageID string
	Token     string
}

const receiptVersion = "s1"

func encodeReceipt(r receipt) string {
	raw := receiptVersion + "\x00" + r.QueueID + "\x00" + r.MessageID + "\x00" + r.Token
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodeReceipt parses a handle; ok is false for anything we did not issue.
func decodeReceipt(h string) (receipt, bool) {
	if len(h) == 0 || len(h) > 1024 {
		return receipt{}, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(h)
	if err != nil {
		return receipt{}, false
	}
	parts := strings.Split(string(raw), "\x00")
	if len(parts) != 4 || parts[0] != receiptVersion || parts[1] == "" || parts[2] == "" || parts[3] == "" {
		return receipt{}, false
	}
	return receipt{QueueID: parts[1], MessageID: parts[2], Token: parts[3]}, true
}

// newToken returns a random claim token.
func newToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}
