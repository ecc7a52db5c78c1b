package spanner

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// Store is the SQS store on Spanner: the ordered-batch protocol
// (stores/orderedbatch) over a Docs whose tables are the protocol's.
type Store struct {
	*orderedbatch.Store
	docs *Docs
}

// Open opens the store on the database cfg names; cfg's Tables and Indexes
// are the protocol's.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg.Tables = orderedbatch.Schema()
	cfg.Indexes = orderedbatch.Indexes()
	d, err := OpenDocs(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{Store: orderedbatch.New(d, orderedbatch.Options{Name: "spanner"}), docs: d}, nil
}

// BilledOps is the work the store asked of Spanner since it opened
// (stores.Biller): rows read as Reads, mutations as Writes, commit
// retries, the read-write and read-only transactions, and the bytes
// committed writes stored as Bytes (see Billed).
func (s *Store) BilledOps() stores.BilledOps {
	b := s.docs.Billed()
	return stores.BilledOps{Reads: b.RowsRead, Writes: b.Mutations, Retries: b.Retries, ReadWrite: b.ReadWrite, ReadOnly: b.ReadOnly,
		Bytes: b.Bytes}
}

var _ stores.StorageSizer = (*Store)(nil)

// QueueStoredBytes is what the queue's rows (its record, groups, messages,
// chunks, deduplication markers, receive attempts and counters) hold with
// their index entries, by Spanner's storage sizes (Docs.StoredBytes): a
// strong read per table, of every row of the queue.
func (s *Store) QueueStoredBytes(ctx context.Context, name, id string) (int64, error) {
	var total int64
	for _, q := range orderedbatch.QueueFootprint(name, id) {
		n, err := s.docs.StoredBytes(ctx, q)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// ParseTarget reads the part of a spanner:// URL after the scheme:
// projects/P/instances/I/databases/D.
func ParseTarget(rest string) (Config, error) {
	bad := fmt.Errorf("spanner: want spanner://projects/PROJECT/instances/INSTANCE/databases/DATABASE, got %q", "spanner://"+rest)
	p := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	if len(p) != 6 || p[0] != "projects" || p[2] != "instances" || p[4] != "databases" || p[1] == "" || p[3] == "" || p[5] == "" {
		return Config{}, bad
	}
	for _, s := range []string{p[1], p[3], p[5]} {
		if strings.ContainsAny(s, "?#") {
			return Config{}, bad
		}
	}
	return Config{Project: p[1], Instance: p[3], Database: p[5]}, nil
}
