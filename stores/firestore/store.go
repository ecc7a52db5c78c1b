package firestore

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
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
	return &Store{Store: orderedbatch.New(d, orderedbatch.Options{Name: "firestore", ExpiredByBackend: cfg.TTL}), docs: d}, nil
}

// BilledOps is what the store's Firestore operations were billed since it
// opened (stores.Biller).
func (s *Store) BilledOps() stores.BilledOps {
	b := s.docs.Billed()
	return stores.BilledOps{Reads: b.Reads, Writes: b.Writes, Deletes: b.Deletes}
}

// ParseTarget reads the part of a firestore:// URL after the scheme:
// PROJECT or PROJECT/DATABASE, optionally followed by ?ttl=true (see
// DocsConfig.TTL).
func ParseTarget(rest string) (DocsConfig, error) {
	bad := fmt.Errorf("firestore: want firestore://PROJECT[/DATABASE][?ttl=true], got %q", "firestore://"+rest)
	path, query, _ := strings.Cut(rest, "?")
	project, database, _ := strings.Cut(strings.TrimSuffix(path, "/"), "/")
	if project == "" || strings.ContainsAny(database, "/#") || strings.Contains(project, "#") {
		return DocsConfig{}, bad
	}
	cfg := DocsConfig{ProjectID: project, DatabaseID: database}
	if query != "" {
		v, err := url.ParseQuery(query)
		if err != nil {
			return DocsConfig{}, bad
		}
		for k := range v {
			if k != "ttl" {
				return DocsConfig{}, fmt.Errorf("firestore: unknown URL parameter %q (known: ttl)", k)
			}
		}
		if cfg.TTL, err = strconv.ParseBool(v.Get("ttl")); err != nil {
			return DocsConfig{}, fmt.Errorf("firestore: ttl=%q: want true or false", v.Get("ttl"))
		}
	}
	return cfg, nil
}
