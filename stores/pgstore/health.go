package pgstore

import (
	"context"
	"fmt"
	"log/slog"
)

// Health pings the database through the pool: a server that cannot reach it
// cannot serve.
func (s *Store) Health(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pgstore: ping: %w", err)
	}
	return nil
}

// Describe names the database (host, database, schema) and its schema
// version: the latest migration applied, and the latest this binary knows.
func (s *Store) Describe(ctx context.Context) []slog.Attr {
	cc := s.pool.Config().ConnConfig
	attrs := []slog.Attr{slog.String("host", cc.Host), slog.String("database", cc.Database)}
	var schema string
	var version int
	err := s.pool.QueryRow(ctx, "SELECT current_schema(), coalesce((SELECT max(version) FROM schema_migrations), 0)").Scan(&schema, &version)
	if err != nil {
		return append(attrs, slog.String("schema_version_err", err.Error()))
	}
	attrs = append(attrs, slog.String("schema", schema), slog.Int("schema_version", version))
	if ms, err := migrations(); err == nil && len(ms) > 0 {
		attrs = append(attrs, slog.Int("binary_schema_version", ms[len(ms)-1].version))
	}
	return attrs
}
