package embedded

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/registry"
)

// DefaultDir is where the embedded store lives when the store URL is empty.
const DefaultDir = "./sluice-data"

// Importing the package makes these open the embedded store: file:// and
// embedded:// URLs, and URLs without a scheme (the embedded store is the
// default: a plain path is its directory, the empty URL means DefaultDir).
func init() {
	registry.Register(registry.Driver{
		Kind:       "embedded",
		Schemes:    []string{"file", "embedded"},
		Schemeless: true,
		Open: func(_ context.Context, t registry.Target, _ registry.Options) (stores.Store, error) {
			dir, err := dirOf(t)
			if err != nil {
				return nil, err
			}
			s, err := Open(dir)
			if err != nil {
				return nil, fmt.Errorf("opening the embedded store in %s: %w", dir, err)
			}
			return s, nil
		},
	})
}

// dirOf tells the directory a store URL names: DefaultDir for the empty URL,
// a plain path as it is, and for file:// and embedded:// what follows
// "://", unescaped, without query or fragment: "/abs/dir" (from
// file:///abs/dir), "localhost/abs/dir" as /abs/dir, or "rel/dir".
func dirOf(t registry.Target) (string, error) {
	if t.Scheme == "" {
		if t.Rest == "" {
			return DefaultDir, nil
		}
		return t.Rest, nil
	}
	rest := t.Rest
	if r, ok := strings.CutPrefix(rest, "localhost/"); ok {
		rest = "/" + r
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	dir, err := url.PathUnescape(rest)
	if err != nil {
		return "", fmt.Errorf("store %q: bad path: %w", registry.Redact(t.URL), err)
	}
	if dir == "" {
		return "", fmt.Errorf("store %q: no directory given", registry.Redact(t.URL))
	}
	return dir, nil
}
