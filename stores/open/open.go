// Package open opens a stores.Store from a URL, the one form in which the
// command, its environment and tests name a store:
//
//	mem:// or memory://             in memory, gone with the process
//	"" (empty)                      embedded, in ./sluice-data
//	file:///abs/dir, file://rel/dir embedded, in that directory
//	embedded:///abs/dir             (the same, spelled for what it is)
//	/abs/dir, ./rel/dir             a plain path (no "://"): embedded there
//	postgres://..., postgresql://... PostgreSQL (a pgx connection string)
package open

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/embedded"
	"github.com/sluicehq/sluice/stores/memstore"
	"github.com/sluicehq/sluice/stores/pgstore"
)

// DefaultDir is where the embedded store lives when no URL is given.
const DefaultDir = "./sluice-data"

// Open opens the store named by rawURL (see the package documentation).
// logger, when not nil, is told which store was opened; the URL is logged
// without its password.
func Open(ctx context.Context, rawURL string, logger *slog.Logger) (stores.Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	kind, dir, err := parse(rawURL)
	if err != nil {
		return nil, err
	}
	switch kind {
	case kindMemory:
		logger.Info("store opened", "kind", "memory")
		return memstore.New(), nil
	case kindEmbedded:
		s, err := embedded.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("opening the embedded store in %s: %w", dir, err)
		}
		logger.Info("store opened", "kind", "embedded", "dir", dir)
		return s, nil
	case kindPostgres:
		s, err := pgstore.Open(ctx, rawURL, pgstore.Options{Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("opening PostgreSQL at %s: %w", Redact(rawURL), err)
		}
		logger.Info("store opened", "kind", "postgres", "url", Redact(rawURL))
		return s, nil
	}
	return nil, fmt.Errorf("unsupported store %q", Redact(rawURL))
}

type kind int

const (
	kindMemory kind = iota + 1
	kindEmbedded
	kindPostgres
)

// parse tells which store rawURL names and, for the embedded one, its
// directory.
func parse(rawURL string) (kind, string, error) {
	s := strings.TrimSpace(rawURL)
	if s == "" {
		return kindEmbedded, DefaultDir, nil
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return kindEmbedded, s, nil
	}
	switch strings.ToLower(scheme) {
	case "mem", "memory":
		return kindMemory, "", nil
	case "postgres", "postgresql":
		return kindPostgres, "", nil
	case "file", "embedded":
		dir, err := dirOf(rest)
		if err != nil {
			return 0, "", fmt.Errorf("store %q: %w", rawURL, err)
		}
		return kindEmbedded, dir, nil
	}
	return 0, "", fmt.Errorf("unsupported store %q: use mem://, file:///dir (embedded) or postgres://", Redact(rawURL))
}

// dirOf turns what follows "file://" into a directory: "/abs/dir" (from
// file:///abs/dir), "localhost/abs/dir" as /abs/dir, or "rel/dir".
func dirOf(rest string) (string, error) {
	if r, ok := strings.CutPrefix(rest, "localhost/"); ok {
		rest = "/" + r
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	dir, err := url.PathUnescape(rest)
	if err != nil {
		return "", fmt.Errorf("bad path: %w", err)
	}
	if dir == "" {
		return "", errors.New("no directory given")
	}
	return dir, nil
}

// Redact returns rawURL with any password replaced by "xxxxx", for logs and
// errors.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	return u.Redacted()
}
