package contract

import (
	"runtime"
	"strings"
	"testing"
)

// bytesAllocated is what f allocates on the heap per call, over 20 calls.
func bytesAllocated(f func()) uint64 {
	f() // warm: first-call allocations do not count
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	for range 20 {
		f()
	}
	runtime.ReadMemStats(&b)
	return (b.TotalAlloc - a.TotalAlloc) / 20
}

// MD5OfBody is the hex MD5 of the body's bytes, and does not copy the body
// to hash it.
func TestMD5OfBody(t *testing.T) {
	for body, want := range map[string]string{
		"":            "d41d8cd98f00b204e9800998ecf8427e",
		"hello":       "5d41402abc4b2a76b9719d911017c592",
		"héllo wörld": "ed0c22cc110ede12327851863c078138",
	} {
		if got := MD5OfBody(body); got != want {
			t.Errorf("MD5OfBody(%q) = %s, want %s", body, got, want)
		}
	}
	big := strings.Repeat("x", 256<<10)
	if n := bytesAllocated(func() { _ = MD5OfBody(big) }); n > 4<<10 {
		t.Errorf("MD5OfBody of 256 KiB allocated %d bytes a call: the body was copied", n)
	}
}

// A content-based deduplication ID is the hex SHA-256 of the body, and
// likewise does not copy it.
func TestContentDeduplicationID(t *testing.T) {
	const want = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	if got := ContentDeduplicationID("hello"); got != want {
		t.Errorf("ContentDeduplicationID(hello) = %s, want %s", got, want)
	}
	big := strings.Repeat("x", 256<<10)
	if n := bytesAllocated(func() { _ = ContentDeduplicationID(big) }); n > 4<<10 {
		t.Errorf("ContentDeduplicationID of 256 KiB allocated %d bytes a call: the body was copied", n)
	}
}
