package firestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// Store is the SQS store on Firestore: the ordered-batch protocol
// (stores/orderedbatch) over a Docs.
type Store struct {
	*orderedbatch.Store
	docs *Docs
}

// Open opens the store on the database cfg names.
func Open(ctx context.Context, cfg DocsConfig) (*Store, error) {
	d, err := OpenDocs(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{Store: orderedbatch.New(d, orderedbatch.Options{Name: "firestore"}), docs: d}, nil
}

// BilledOps is what the store's Firestore operations were billed since it
// opened (stores.Biller).
func (s *Store) BilledOps() stores.BilledOps {
	b := s.docs.Billed()
	return stores.BilledOps{Reads: b.Reads, Writes: b.Writes, Deletes: b.Deletes}
}

// ParseTarget reads the part of a firestore:// URL after the scheme:
// PROJECT or PROJECT/DATABASE.
func ParseTarget(rest string) (DocsConfig, error) {
	project, database, _ := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if project == "" || strings.Contains(database, "/") {
		return DocsConfig{}, fmt.Errorf("firestore: want firestore://PROJECT or firestore://PROJECT/DATABASE, got %q", "firestore://"+rest)
	}
	return DocsConfig{ProjectID: project, DatabaseID: database}, nil
}
