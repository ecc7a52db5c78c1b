package firestore

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite firestore.indexes.json from the protocol's index list")

// TestIndexesFile keeps firestore.indexes.json, which deployments read,
// equal to what the protocol declares (orderedbatch.Indexes, itself
// checked against every query the protocol runs). After a change:
// go test ./stores/firestore -run TestIndexesFile -update
func TestIndexesFile(t *testing.T) {
	want, err := IndexesJSON("")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("firestore.indexes.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("firestore.indexes.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("firestore.indexes.json is not what orderedbatch.Indexes declares; regenerate it with: go test ./stores/firestore -run TestIndexesFile -update")
	}
}
