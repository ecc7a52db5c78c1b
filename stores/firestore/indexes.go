package firestore

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/sluicehq/sluice/stores/orderedbatch"
)

// IndexesJSON is the store's index configuration in the form the Firebase
// CLI (firestore.indexes.json) and the Terraform modules read: the
// composite indexes the protocol's queries need, and single-field index
// exemptions for the fields that must not have one (records and bodies,
// and the times written in sequence), and the TTL policies DocsConfig.TTL
// counts on. prefix is DocsConfig.CollectionPrefix.
func IndexesJSON(prefix string) ([]byte, error) {
	type field struct {
		FieldPath string `json:"fieldPath"`
		Order     string `json:"order,omitempty"`
	}
	type index struct {
		CollectionGroup string  `json:"collectionGroup"`
		QueryScope      string  `json:"queryScope"`
		Fields          []field `json:"fields"`
	}
	type override struct {
		CollectionGroup string     `json:"collectionGroup"`
		FieldPath       string     `json:"fieldPath"`
		TTL             bool       `json:"ttl,omitempty"`
		Indexes         []struct{} `json:"indexes"`
	}
	var out struct {
		Indexes        []index    `json:"indexes"`
		FieldOverrides []override `json:"fieldOverrides"`
	}
	out.Indexes = []index{}
	out.FieldOverrides = []override{}
	for _, ix := range orderedbatch.Indexes() {
		in := index{CollectionGroup: prefix + ix.Collection, QueryScope: "COLLECTION"}
		for _, f := range ix.Fields {
			o := "ASCENDING"
			if f.Desc {
				o = "DESCENDING"
			}
			in.Fields = append(in.Fields, field{FieldPath: f.Field, Order: o})
		}
		if n := len(ix.Fields); n > 0 && ix.Fields[n-1].Desc {
			// Paged queries break ties by key ascending (Docs.query);
			// left implicit, Firestore would index the key descending,
			// as the last field, and the query would have no index.
			in.Fields = append(in.Fields, field{FieldPath: "__name__", Order: "ASCENDING"})
		}
		out.Indexes = append(out.Indexes, in)
	}
	for _, u := range orderedbatch.Unindexed() {
		out.FieldOverrides = append(out.FieldOverrides, override{CollectionGroup: prefix + u.Collection, FieldPath: u.Name,
			TTL: slices.Contains(orderedbatch.Expiring(), u), Indexes: []struct{}{}})
	}
	sort.SliceStable(out.FieldOverrides, func(i, j int) bool {
		a, b := out.FieldOverrides[i], out.FieldOverrides[j]
		return a.CollectionGroup+"/"+a.FieldPath < b.CollectionGroup+"/"+b.FieldPath
	})
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
