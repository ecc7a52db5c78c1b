package service

import (
	"strings"
	"testing"
	"time"
)

func TestReceiptRoundTrip(t *testing.T) {
	r := receipt{QueueID: "q1", MessageID: "m-1", Token: newToken(time.Now())}
	got, ok := decodeReceipt(encodeReceipt(r))
	if !ok || got != r {
		t.Fatalf("round trip: got %+v ok=%v, want %+v", got, ok, r)
	}
	notText := []string{ // a handle of ours altered into bytes that are not text, in each part
		encodeReceipt(receipt{QueueID: "q\xff", MessageID: "m", Token: "t"}),
		encodeReceipt(receipt{QueueID: "q", MessageID: "m\xff", Token: "t"}),
		encodeReceipt(receipt{QueueID: "q", MessageID: "m", Token: "t\xc3"}),
		encodeReceipt(receipt{QueueID: "q", MessageID: "m", Token: "t", Locator: "\xfe"}),
	}
	for _, bad := range append([]string{"", "abc", "!!!", encodeReceipt(receipt{QueueID: "q"})}, notText...) {
		if _, ok := decodeReceipt(bad); ok {
			t.Errorf("decodeReceipt(%q) accepted a handle we never issued", bad)
		}
	}
}

func FuzzDecodeReceipt(f *testing.F) {
	f.Add(encodeReceipt(receipt{QueueID: "q", MessageID: "m", Token: "t"}))
	f.Add("")
	f.Add("czEAcQBtAHQ")
	f.Fuzz(func(t *testing.T, h string) {
		r, ok := decodeReceipt(h)
		if !ok {
			return
		}
		if again, ok2 := decodeReceipt(encodeReceipt(r)); !ok2 || again != r {
			t.Fatalf("decoded %q to %+v but it does not re-encode", h, r)
		}
	})
}

// Queue ids are short (stores key every row and index entry by them) and
// each new one differs.
func TestNewQueueID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newQueueID()
		if len(id) != 16 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("newQueueID() = %q, want 16 lowercase base32 characters", id)
		}
		if seen[id] {
			t.Fatalf("newQueueID() returned %q twice", id)
		}
		seen[id] = true
	}
}

// A token carries its receive time to the millisecond; one without (made
// before tokens carried it) has none, and neither has a token whose head is
// not a number.
func TestTokenTime(t *testing.T) {
	at := time.Date(2026, 12, 6, 23, 50, 1, 234_567_000, time.UTC)
	tok := newToken(at)
	if got := tokenTime(tok); !got.Equal(at.Truncate(time.Millisecond)) {
		t.Errorf("tokenTime(newToken(%v)) = %v", at, got)
	}
	if other := newToken(at); other == tok {
		t.Error("two tokens of one instant are equal")
	}
	for _, old := range []string{"0123456789abcdef0123456789abcdef", "", "zz!.abc", "."} {
		if got := tokenTime(old); !got.IsZero() {
			t.Errorf("tokenTime(%q) = %v, want none", old, got)
		}
	}
}
