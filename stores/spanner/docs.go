// Package spanner is the Cloud Spanner backend of the document interface
// (stores/docstore), over Google's client cloud.google.com/go/spanner, and
// the SQS store on it (the ordered-batch protocol, stores/orderedbatch).
//
// A collection that Config.Tables declares is a table of its own (the
// same name; Spanner names are case-insensitive) keyed by the document id
// in DocId, with a typed column per declared field (NULL: absent); its
// queries are SQL on those columns, served by the secondary indexes the
// migrations create. Any other collection lives in the Schemaless table,
// keyed by (collection, id), its fields encoded in one column; its queries
// read the collection and filter here. Transactions are Spanner read-write
// transactions (locking reads, buffered mutations, one commit); reads
// outside them are strong single-use or read-only transactions. The
// design, with the schema and why each key is shaped as it is, is
// docs/spanner.md.
//
// The client talks to the emulator when SPANNER_EMULATOR_HOST is set
// (infra/scripts/spanner.sh starts one), where a missing instance and
// database are created; otherwise to Spanner with Application Default
// Credentials unless Config.ClientOptions say otherwise.
package spanner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	sp "cloud.google.com/go/spanner"
	database "cloud.google.com/go/spanner/admin/database/apiv1"
	"cloud.google.com/go/spanner/admin/database/apiv1/databasepb"
	instance "cloud.google.com/go/spanner/admin/instance/apiv1"
	"cloud.google.com/go/spanner/admin/instance/apiv1/instancepb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
)

// Config says which database a Docs uses and how.
type Config struct {
	Project, Instance, Database string
	// Tables are the collections kept in typed tables of their own (the
	// migrations create them); other collections go to the Schemaless
	// table. A declared collection's documents hold declared fields only.
	Tables []docstore.Table
	// Indexes are the secondary indexes queries are steered to (each must
	// exist after the migrations; a query matching none goes without a
	// hint).
	Indexes []docstore.Index
	// MaxAttempts bounds the attempts of one RunTx before it gives up
	// with docstore.ErrContention; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// CallTimeout bounds one call (a transaction with its retries, a
	// read): the client retries an unreachable Spanner until its context
	// ends, so past this a call that never reached a commit fails with
	// docstore.ErrUnavailable instead of at the caller's deadline; 0 means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// ClientOptions go to the data and admin clients.
	ClientOptions []option.ClientOption
}

// DefaultCallTimeout is Config.CallTimeout when unset: far above any call
// of a reachable Spanner (the emulator's slowest take seconds).
const DefaultCallTimeout = 30 * time.Second

// DefaultMaxAttempts: the emulator runs one read-write transaction at a
// time and aborts the others, so a busy test meets many aborts.
const DefaultMaxAttempts = 50

// Docs is a docstore.Store on one Spanner database.
type Docs struct {
	client      *sp.Client // single-use reads, migrations
	clients     *clients   // transactions
	cfg         Config
	name        string // projects/P/instances/I/databases/D
	tables      map[string]*table
	maxAttempts int
	callTimeout time.Duration
	emulator    bool

	bill billed
}

var _ docstore.Store = (*Docs)(nil)

// DatabaseName is cfg's database resource name.
func (c Config) DatabaseName() string {
	return fmt.Sprintf("projects/%s/instances/%s/databases/%s", c.Project, c.Instance, c.Database)
}

// OpenDocs connects to the database cfg names and brings its schema to
// the latest migration. Against the emulator (SPANNER_EMULATOR_HOST) a
// missing instance and database are created first.
func OpenDocs(ctx context.Context, cfg Config) (*Docs, error) {
	if cfg.Project == "" || cfg.Instance == "" || cfg.Database == "" {
		return nil, errors.New("spanner: Config needs Project, Instance and Database")
	}
	d := &Docs{cfg: cfg, name: cfg.DatabaseName(), maxAttempts: cfg.MaxAttempts, emulator: os.Getenv("SPANNER_EMULATOR_HOST") != ""}
	if d.maxAttempts <= 0 {
		d.maxAttempts = DefaultMaxAttempts
	}
	if d.callTimeout = cfg.CallTimeout; d.callTimeout <= 0 {
		d.callTimeout = DefaultCallTimeout
	}
	var err error
	if d.tables, err = newTables(cfg.Tables, cfg.Indexes); err != nil {
		return nil, err
	}
	admin, err := database.NewDatabaseAdminClient(ctx, cfg.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("spanner: %w", err)
	}
	defer admin.Close()
	if d.emulator {
		if err := ensureDatabase(ctx, admin, cfg); err != nil {
			return nil, unavailable(ctx, err)
		}
	}
	// The commit watch first: the outermost interceptor (see commitwatch.go).
	dataOpts := append([]option.ClientOption{option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(commitWatcher))}, cfg.ClientOptions...)
	open := func(ctx context.Context) (*sp.Client, error) {
		c, err := sp.NewClientWithConfig(ctx, d.name, sp.ClientConfig{DisableNativeMetrics: true}, dataOpts...)
		if err != nil {
			return nil, fmt.Errorf("spanner: %w", err)
		}
		return c, nil
	}
	if d.client, err = open(ctx); err != nil {
		return nil, err
	}
	d.clients = &clients{main: d.client, pooled: d.emulator, open: open}
	if err := migrate(ctx, admin, d.client, d.name); err != nil {
		d.client.Close()
		return nil, unavailable(ctx, err)
	}
	if err := d.checkSchema(ctx); err != nil {
		d.client.Close()
		return nil, err
	}
	return d, nil
}

// ensureDatabase creates the instance and database cfg names when they
// are missing (on the emulator; in production they are provisioned).
func ensureDatabase(ctx context.Context, admin *database.DatabaseAdminClient, cfg Config) error {
	ia, err := instance.NewInstanceAdminClient(ctx, cfg.ClientOptions...)
	if err != nil {
		return err
	}
	defer ia.Close()
	op, err := ia.CreateInstance(ctx, &instancepb.CreateInstanceRequest{
		Parent:     "projects/" + cfg.Project,
		InstanceId: cfg.Instance,
		Instance: &instancepb.Instance{
			Config:          fmt.Sprintf("projects/%s/instanceConfigs/emulator-config", cfg.Project),
			DisplayName:     cfg.Instance,
			ProcessingUnits: 100,
		},
	})
	if err == nil {
		_, err = op.Wait(ctx)
	}
	if err != nil && sp.ErrCode(err) != codes.AlreadyExists {
		return fmt.Errorf("creating instance %s: %w", cfg.Instance, err)
	}
	dop, err := admin.CreateDatabase(ctx, &databasepb.CreateDatabaseRequest{
		Parent:          fmt.Sprintf("projects/%s/instances/%s", cfg.Project, cfg.Instance),
		CreateStatement: "CREATE DATABASE `" + cfg.Database + "`",
	})
	if err == nil {
		_, err = dop.Wait(ctx)
	}
	if err != nil && sp.ErrCode(err) != codes.AlreadyExists {
		return fmt.Errorf("creating database %s: %w", cfg.Database, err)
	}
	return nil
}

// checkSchema verifies that every declared table has its columns with
// their types, so that a schema behind the code fails at open rather than
// at the first write.
func (d *Docs) checkSchema(ctx context.Context) error {
	have := map[string]string{} // "table.column" (lower case) -> SPANNER_TYPE
	iter := d.client.Single().Query(ctx, sp.Statement{SQL: `SELECT TABLE_NAME, COLUMN_NAME, SPANNER_TYPE
		FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = ''`})
	err := iter.Do(func(r *sp.Row) error {
		var t, c, typ string
		if err := r.Columns(&t, &c, &typ); err != nil {
			return err
		}
		have[strings.ToLower(t+"."+c)] = typ
		return nil
	})
	if err != nil {
		return unavailable(ctx, fmt.Errorf("spanner: reading the schema: %w", err))
	}
	var missing []string
	for _, t := range d.tables {
		for _, c := range t.cols {
			if got := have[strings.ToLower(t.name+"."+c.Name)]; got != spannerType(c.Type) {
				missing = append(missing, fmt.Sprintf("%s.%s %s (have %q)", t.name, c.Name, spannerType(c.Type), got))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("spanner: database %s lacks declared columns (a migration is missing): %s", d.name, strings.Join(missing, ", "))
	}
	return nil
}

// Close closes the client.
func (d *Docs) Close() error {
	d.clients.close()
	return nil
}

// Limits keep well inside Spanner's (Quotas and limits page): a cell at
// most 10 MiB, a commit at most 100 MiB and 80,000 mutations (a mutation
// per column written, plus one per index entry). A document is at most
// 1 MiB here, like Firestore's, so the protocol chunks the same way; a
// transaction's writes at most 500 documents (at most 10 columns and 6
// indexes each) and 10 MiB. The emulator's gRPC server refuses messages
// over 4 MiB, so there MaxTxBytes stays under that.
func (d *Docs) Limits() docstore.Limits {
	l := docstore.Limits{MaxDocBytes: 1 << 20, MaxTxWrites: 500, MaxTxBytes: 10 << 20, MaxBatchGets: 1000}
	if d.emulator {
		l.MaxTxBytes = 4<<20 - 64<<10
	}
	return l
}

// billed counts what Spanner's work is measured in (see Billed).
type billed struct {
	rw, ro, rowsRead, mutations, retries, bytes atomic.Int64
}

// Billed is the work this backend asked of Spanner since OpenDocs.
// Spanner bills compute capacity (nodes or processing units, by the hour)
// and storage, not operations; what a workload needs in compute follows
// from these counts (Google's sizing guide: a node of 1,000 processing
// units serves about 22,500 reads/s or 3,500 writes/s):
//   - ReadWrite: read-write transactions committed, ReadOnly: read-only
//     transactions (single-use or multi-use) run;
//   - RowsRead: rows returned by reads and queries, and rows a COUNT or
//     SUM aggregated (each matched index entry);
//   - Mutations: as Spanner reports them at commit (CommitStats), or, where
//     it reports none (the emulator), by Spanner's rule: a mutation per
//     column of each row written (all of a table's columns for a Replace),
//     one per row deleted, and per secondary index entry written its
//     columns and key, or one per entry deleted;
//   - Retries: attempts of read-write transactions that Spanner aborted
//     (a conflict) and that ran again;
//   - Bytes: what committed writes stored, rows and index entries, by
//     Spanner's storage sizes (8 bytes a value plus the value's own: see
//     cellBytes); a row replaced counts its new size, a deletion nothing.
//     Storage is billed by what stays (StoredBytes), this is its flow.
type Billed struct {
	ReadWrite, ReadOnly, RowsRead, Mutations, Retries, Bytes int64
}

// Billed returns the counts since OpenDocs.
func (d *Docs) Billed() Billed {
	return Billed{ReadWrite: d.bill.rw.Load(), ReadOnly: d.bill.ro.Load(), RowsRead: d.bill.rowsRead.Load(),
		Mutations: d.bill.mutations.Load(), Retries: d.bill.retries.Load(), Bytes: d.bill.bytes.Load()}
}

// count adds b to the totals and to ctx's tally (stores.WithTally), as the
// seam's operations: rows read are Reads, mutations Writes, bytes stored
// Bytes.
func (d *Docs) count(ctx context.Context, b Billed) {
	d.bill.rw.Add(b.ReadWrite)
	d.bill.ro.Add(b.ReadOnly)
	d.bill.rowsRead.Add(b.RowsRead)
	d.bill.mutations.Add(b.Mutations)
	d.bill.retries.Add(b.Retries)
	d.bill.bytes.Add(b.Bytes)
	stores.TallyOf(ctx).Add(stores.BilledOps{Reads: b.RowsRead, Writes: b.Mutations, Retries: b.Retries,
		ReadWrite: b.ReadWrite, ReadOnly: b.ReadOnly, Bytes: b.Bytes})
}
