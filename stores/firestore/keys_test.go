package firestore

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/stores/docstore"
)

// edgeIDs are ids around the ones Firestore reserves.
var edgeIDs = []string{
	".", "..", "...", ".a", "a.", "_", "__", "___", "____", "__x__", "__x__y", "y__x__",
	"__id7__", "___x___", "a", "a b", "~", "!", " ", strings.Repeat("_", 700),
	"__" + strings.Repeat("z", 696) + "__",
}

func TestEncodeIDRoundTripsAndKeepsOrder(t *testing.T) {
	ids := slices.Sorted(slices.Values(edgeIDs))
	var enc []string
	for _, id := range ids {
		e := encodeID(id)
		if got := decodeID(e); got != id {
			t.Errorf("decodeID(encodeID(%q)) = %q", id, got)
		}
		if reservedID(id) == (e == id) {
			t.Errorf("encodeID(%q) = %q: reserved ids (only) must change", id, e)
		}
		if e == "." || e == ".." || (len(e) >= 4 && strings.HasPrefix(e, "__") && strings.HasSuffix(e, "__")) {
			t.Errorf("encodeID(%q) = %q, which Firestore refuses", id, e)
		}
		enc = append(enc, e)
	}
	for i := 1; i < len(enc); i++ {
		if enc[i-1] >= enc[i] {
			t.Errorf("encoded %q >= %q, but %q < %q: Firestore's __name__ order must be key id order", enc[i-1], enc[i], ids[i-1], ids[i])
		}
	}
}

func TestCheckKey(t *testing.T) {
	for _, k := range []docstore.Key{
		{Collection: "c", ID: "a/b"},
		{Collection: "c", ID: ""},
		{Collection: "c", ID: strings.Repeat("x", 701)},
		{Collection: "c", ID: "a\x01"},
		{Collection: "c", ID: "é"},
		{Collection: "", ID: "a"},
		{Collection: "a/b", ID: "a"},
	} {
		if checkKey(k) == nil {
			t.Errorf("checkKey(%q) accepted a key the contract forbids", k)
		}
	}
	for _, id := range edgeIDs {
		if err := checkKey(docstore.Key{Collection: "c", ID: id}); err != nil {
			t.Errorf("checkKey(%q): %v", id, err)
		}
	}
}
