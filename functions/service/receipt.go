package service

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A receipt handle names one delivery: the queue incarnation, the message and
// the random token of the claim that delivered it, and the store's locator
// of the message when it has one. The token makes a handle unguessable; the
// incarnation keeps a handle from a deleted queue away from a new queue of
// the same name.
type receipt struct {
	QueueID   string
	MessageID string
	Token     string
	Locator   string
}

// Version s1 had no locator; s2 adds it as a fifth part. Both decode, so
// handles issued before stay valid.
const (
	receiptVersion1 = "s1"
	receiptVersion  = "s2"
)

func encodeReceipt(r receipt) string {
	raw := receiptVersion + "\x00" + r.QueueID + "\x00" + r.MessageID + "\x00" + r.Token + "\x00" + r.Locator
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
	switch {
	case len(parts) == 4 && parts[0] == receiptVersion1:
		parts = append(parts, "")
	case len(parts) == 5 && parts[0] == receiptVersion:
	default:
		return receipt{}, false
	}
	if parts[1] == "" || parts[2] == "" || parts[3] == "" {
		return receipt{}, false
	}
	// Every part we issue is text. A handle altered into other bytes is
	// not ours, and must not reach a store as text: PostgreSQL refuses
	// such a parameter, and with it every operation that shares its
	// transaction.
	for _, part := range parts[1:] {
		if !utf8.ValidString(part) {
			return receipt{}, false
		}
	}
	return receipt{QueueID: parts[1], MessageID: parts[2], Token: parts[3], Locator: parts[4]}, true
}

// newQueueID names a new queue incarnation: 80 random bits in 16
// lowercase base32 characters. Stores key every message, group, marker and
// index entry of the queue by it (and every receipt carries it), so it is
// kept short: a UUID's 36 characters cost PostgreSQL about 20 bytes more
// per row and index entry. Incarnations made with UUIDs stay valid: stores
// compare ids, never parse them.
func newQueueID() string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
}

// newToken returns a random claim token.
func newToken(receivedAt time.Time) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return strconv.FormatInt(receivedAt.UnixMilli(), 36) + "." + hex.EncodeToString(b[:])
}

// tokenTime is the receive time a claim token carries (newToken), to the
// millisecond: SQS caps a receipt's visibility at 12 hours from its
// receive, and the receive is known by its token. Zero for a token without
// one (made before tokens carried it).
func tokenTime(token string) time.Time {
	head, _, ok := strings.Cut(token, ".")
	if !ok {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(head, 36, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
