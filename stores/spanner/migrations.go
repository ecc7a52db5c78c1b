package spanner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	database "cloud.google.com/go/spanner/admin/database/apiv1"
	"cloud.google.com/go/spanner/admin/database/apiv1/databasepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sp "cloud.google.com/go/spanner"
)

// migration is one versioned schema change: DDL statements that Spanner
// applies as one long-running operation. Statements create what does not
// exist (IF NOT EXISTS), so a migration that two instances submit at once,
// or that one submits again after a crash, leaves the same schema.
// Migrations are only ever appended; an applied one is never edited.
type migration struct {
	version int64
	name    string
	ddl     []string
}

// migrations are the schema's history. Version 1 is the whole schema of
// the ordered-batch protocol (orderedbatch.Schema and Indexes): one table
// per collection, keyed by the document id, a column per declared field,
// and the secondary indexes the protocol's queries use. The schemaless
// table keeps collections that no table declares (the docstore conformance
// kit's). TestSchemaMatchesProtocol checks the result against
// orderedbatch.Schema and Indexes.
var migrations = []migration{{
	version: 1,
	name:    "ordered-batch protocol tables and indexes",
	ddl: []string{
		`CREATE TABLE IF NOT EXISTS Queues (
			DocId STRING(700) NOT NULL,
			live BOOL, name STRING(MAX), data BYTES(MAX),
		) PRIMARY KEY (DocId)`,
		`CREATE INDEX IF NOT EXISTS QueuesByLiveName ON Queues (live, name)`,

		"CREATE TABLE IF NOT EXISTS `Groups` (" + `
			DocId STRING(700) NOT NULL,
			inc STRING(MAX), gen INT64, shard INT64, pend INT64, infl INT64,
			split BOOL, ready INT64, idle TIMESTAMP, data BYTES(MAX),
		) PRIMARY KEY (DocId)`,
		"CREATE INDEX IF NOT EXISTS GroupsByIncGenShardReady ON `Groups` (inc, gen, shard, ready)",
		"CREATE INDEX IF NOT EXISTS GroupsByIncGenShardReadyInfl ON `Groups` (inc, gen, shard, ready, infl)",
		"CREATE INDEX IF NOT EXISTS GroupsByIncGenPend ON `Groups` (inc, gen, pend)",
		"CREATE INDEX IF NOT EXISTS GroupsByIncGen ON `Groups` (inc, gen)",
		"CREATE INDEX IF NOT EXISTS GroupsByIncGenSplit ON `Groups` (inc, gen, split)",
		"CREATE INDEX IF NOT EXISTS GroupsByShardIdle ON `Groups` (shard, idle)",

		`CREATE TABLE IF NOT EXISTS Messages (
			DocId STRING(700) NOT NULL,
			inc STRING(MAX), gen INT64, shard INT64, vis TIMESTAMP, sent TIMESTAMP,
			recv BOOL, n INT64, data BYTES(MAX),
		) PRIMARY KEY (DocId)`,
		`CREATE INDEX IF NOT EXISTS MessagesByIncGenShardVisN ON Messages (inc, gen, shard, vis, n)`,
		`CREATE INDEX IF NOT EXISTS MessagesByIncGenShardVis ON Messages (inc, gen, shard, vis)`,
		`CREATE INDEX IF NOT EXISTS MessagesByIncGenRecvShardVis ON Messages (inc, gen, recv, shard, vis)`,
		`CREATE INDEX IF NOT EXISTS MessagesByIncGenShardSent ON Messages (inc, gen, shard, sent)`,
		`CREATE INDEX IF NOT EXISTS MessagesByIncGen ON Messages (inc, gen)`,

		`CREATE TABLE IF NOT EXISTS Chunks (
			DocId STRING(700) NOT NULL,
			inc STRING(MAX), gen INT64, data BYTES(MAX),
		) PRIMARY KEY (DocId)`,
		`CREATE INDEX IF NOT EXISTS ChunksByIncGen ON Chunks (inc, gen)`,

		`CREATE TABLE IF NOT EXISTS Dedup (
			DocId STRING(700) NOT NULL,
			inc STRING(MAX), gen INT64, shard INT64, exp TIMESTAMP, data BYTES(MAX),
		) PRIMARY KEY (DocId)`,
		`CREATE INDEX IF NOT EXISTS DedupByIncGen ON Dedup (inc, gen)`,
		`CREATE INDEX IF NOT EXISTS DedupByShardExp ON Dedup (shard, exp)`,

		`CREATE TABLE IF NOT EXISTS Attempts (
			DocId STRING(700) NOT NULL,
			inc STRING(MAX), gen INT64, shard INT64, exp TIMESTAMP, data BYTES(MAX),
		) PRIMARY KEY (DocId)`,
		`CREATE INDEX IF NOT EXISTS AttemptsByIncGen ON Attempts (inc, gen)`,
		`CREATE INDEX IF NOT EXISTS AttemptsByShardExp ON Attempts (shard, exp)`,

		`CREATE TABLE IF NOT EXISTS Counters (
			DocId STRING(700) NOT NULL,
			inc STRING(MAX), next INT64,
		) PRIMARY KEY (DocId)`,

		`CREATE TABLE IF NOT EXISTS Tasks (
			DocId STRING(700) NOT NULL,
			src STRING(MAX), status STRING(MAX), started TIMESTAMP, data BYTES(MAX),
		) PRIMARY KEY (DocId)`,
		`CREATE INDEX IF NOT EXISTS TasksBySrcStatusStarted ON Tasks (src, status, started DESC)`,
		`CREATE INDEX IF NOT EXISTS TasksBySrcStarted ON Tasks (src, started DESC)`,
		`CREATE INDEX IF NOT EXISTS TasksByStatusStarted ON Tasks (status, started DESC)`,

		`CREATE TABLE IF NOT EXISTS TaskGuards (
			DocId STRING(700) NOT NULL,
			handle STRING(MAX),
		) PRIMARY KEY (DocId)`,

		`CREATE TABLE IF NOT EXISTS Trash (
			DocId STRING(700) NOT NULL,
			below INT64, since TIMESTAMP, data BYTES(MAX),
		) PRIMARY KEY (DocId)`,

		`CREATE TABLE IF NOT EXISTS Schemaless (
			Coll STRING(700) NOT NULL,
			DocId STRING(700) NOT NULL,
			Fields BYTES(MAX) NOT NULL,
		) PRIMARY KEY (Coll, DocId)`,
	},
}}

// versionsTable records the migrations applied. It is created by its own
// statement before the first migration (IF NOT EXISTS: a no-op after).
const versionsDDL = `CREATE TABLE IF NOT EXISTS SchemaMigrations (
	Version INT64 NOT NULL,
	Name STRING(MAX) NOT NULL,
	AppliedAt TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp = true),
) PRIMARY KEY (Version)`

// migrate brings the database's schema to the latest version. Several
// instances may run it at once: each reads the applied versions, submits
// the missing migrations' DDL (idempotent, so a second submission of the
// same change only waits for Spanner to run it), and records the version
// with an insert-or-update. Spanner runs schema changes one at a time per
// database and in the background: new tables and indexes are backfilled
// while the database keeps serving, and an instance starts serving only
// once every migration it knows is applied.
func migrate(ctx context.Context, admin *database.DatabaseAdminClient, client *sp.Client, db string) error {
	if err := updateDDL(ctx, admin, db, []string{versionsDDL}); err != nil {
		return err
	}
	applied := map[int64]bool{}
	iter := client.Single().Query(ctx, sp.Statement{SQL: "SELECT Version FROM SchemaMigrations"})
	err := iter.Do(func(r *sp.Row) error {
		var v int64
		if err := r.Column(0, &v); err != nil {
			return err
		}
		applied[v] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("spanner: reading applied migrations: %w", err)
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		if err := updateDDL(ctx, admin, db, m.ddl); err != nil {
			return fmt.Errorf("spanner: migration %d (%s): %w", m.version, m.name, err)
		}
		_, err := client.Apply(ctx, []*sp.Mutation{sp.InsertOrUpdate("SchemaMigrations",
			[]string{"Version", "Name", "AppliedAt"}, []any{m.version, m.name, sp.CommitTimestamp})})
		if err != nil {
			return fmt.Errorf("spanner: recording migration %d: %w", m.version, err)
		}
	}
	return nil
}

// updateDDL applies statements as one schema change and waits for it.
// Spanner refuses a change while another runs on the database
// (FailedPrecondition), which an instance starting beside another meets:
// it waits and submits again.
func updateDDL(ctx context.Context, admin *database.DatabaseAdminClient, db string, ddl []string) error {
	for attempt := 0; ; attempt++ {
		op, err := admin.UpdateDatabaseDdl(ctx, &databasepb.UpdateDatabaseDdlRequest{Database: db, Statements: ddl})
		if err == nil {
			err = op.Wait(ctx)
		}
		if err == nil {
			return nil
		}
		if !retryableDDL(err) || attempt >= 50 || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(50*(attempt+1)) * time.Millisecond):
		}
	}
}

// retryableDDL: another schema change ran concurrently.
func retryableDDL(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return false
	}
	switch se.GRPCStatus().Code() {
	case codes.FailedPrecondition, codes.Aborted, codes.Unavailable:
		return !strings.Contains(se.GRPCStatus().Message(), "Syntax error")
	}
	return false
}

// DropDatabase drops the database cfg names (tests and tools).
func DropDatabase(ctx context.Context, cfg Config) error {
	admin, err := database.NewDatabaseAdminClient(ctx, cfg.ClientOptions...)
	if err != nil {
		return err
	}
	defer admin.Close()
	return admin.DropDatabase(ctx, &databasepb.DropDatabaseRequest{Database: cfg.DatabaseName()})
}
