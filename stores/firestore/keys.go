package firestore

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/stores/docstore"
)

// Firestore refuses some document ids that docstore allows: "." and "..",
// and any id matching __.*__ (reserved). Those get a trailing '\x01', a
// byte no docstore id holds (ids are printable ASCII). The mapping keeps
// order: s < s+"\x01" < s+c for every printable c, so Firestore's __name__
// order over encoded ids is docstore's key id order, which StartAfter
// paging relies on. Every other id is stored as it is.
const reservedMark = "\x01"

func reservedID(id string) bool {
	return id == "." || id == ".." ||
		(len(id) >= 4 && strings.HasPrefix(id, "__") && strings.HasSuffix(id, "__"))
}

// encodeID maps a docstore key id to a Firestore document id.
func encodeID(id string) string {
	if reservedID(id) {
		return id + reservedMark
	}
	return id
}

// decodeID is encodeID's inverse.
func decodeID(docID string) string {
	if s, ok := strings.CutSuffix(docID, reservedMark); ok && reservedID(s) {
		return s
	}
	return docID
}

// checkKey enforces docstore's key rules, which also keep Firestore's own
// ('/' would name a subcollection; a long id would be refused).
func checkKey(k docstore.Key) error {
	if err := checkCollection(k.Collection); err != nil {
		return err
	}
	if k.ID == "" || len(k.ID) > 700 {
		return fmt.Errorf("firestore: key id of %d bytes (want 1 to 700)", len(k.ID))
	}
	for i := 0; i < len(k.ID); i++ {
		if c := k.ID[i]; c < 0x20 || c > 0x7e || c == '/' {
			return fmt.Errorf("firestore: key id %q holds byte %#x (want printable ASCII but '/')", k.ID, c)
		}
	}
	return nil
}

func checkCollection(c string) error {
	if c == "" || strings.Contains(c, "/") {
		return fmt.Errorf("firestore: collection name %q (want non-empty, without '/')", c)
	}
	return nil
}
