package embedded

import (
	"context"
	"log/slog"
	"path/filepath"
)

// Describe names the directory the store opened, made absolute, so that the
// startup log says where the data is even for the default ./sluice-data.
func (s *Store) Describe(context.Context) []slog.Attr {
	dir := filepath.Dir(s.db.Path())
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return []slog.Attr{slog.String("dir", dir)}
}
