package stores

import (
	"context"
	"log/slog"
)

// Describer is implemented by stores that can say what they opened, for the
// startup log: the embedded store's directory, PostgreSQL's database and
// schema version. Describe reads nothing it must not; an error becomes an
// attribute of its own.
type Describer interface {
	Describe(ctx context.Context) []slog.Attr
}
