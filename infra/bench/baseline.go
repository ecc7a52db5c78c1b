package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// BaselineConfig is a baseline measurement: a queue in plain SQL, shaped
// like the pgmq extension's, on the same PostgreSQL as the sluice run, so
// that sluice can be compared with what a SQL-only queue does on the same
// machine in the same run.
type BaselineConfig struct {
	DSN      string
	Workers  int           // connections, each running its own loop
	Batch    int           // messages per send, read and delete: 1 or 10
	Duration time.Duration // measured
	Warmup   time.Duration
	Payload  int // bytes of the message's string; default 1024
	// Measure: report the machine's CPU use over the window (KeepProcs
	// as in Config) and the database's WAL and commits.
	Measure   bool
	KeepProcs []string
	Log       io.Writer
}

// BaselineResult is the baseline's outcome.
type BaselineResult struct {
	Workers   int     `json:"workers"`
	Batch     int     `json:"batch"`
	WindowSec float64 `json:"window_sec"`
	// Lifecycles are the loops (send, read, delete) done in the window;
	// Messages the messages they read and deleted.
	Lifecycles     int64     `json:"lifecycles"`
	Messages       int64     `json:"messages"`
	MessagesPerSec float64   `json:"messages_per_sec"`
	Lifecycle      Summary   `json:"lifecycle"` // latency of one loop, three commits
	Errors         int64     `json:"errors"`
	ErrorSamples   []string  `json:"error_samples,omitempty"`
	Server         string    `json:"server_version,omitempty"`
	CPU            *CPUStats `json:"cpu,omitempty"` // with Measure
	PG             *PGStats  `json:"pg,omitempty"`  // with Measure
	// Ratio is sluice received messages/s ÷ MessagesPerSec (set by the
	// caller).
	Ratio float64 `json:"ratio,omitempty"`
}

// The pgmq-shaped statements: a send, a read that claims the oldest
// visible messages for 30 s, and a delete of what was read.
const (
	baselineSend = "INSERT INTO q (message) SELECT $1::jsonb FROM generate_series(1, $2) RETURNING msg_id"
	baselineRead = "WITH c AS (SELECT msg_id FROM q WHERE vt <= clock_timestamp() ORDER BY msg_id LIMIT $1 FOR UPDATE SKIP LOCKED) " +
		"UPDATE q m SET vt = clock_timestamp() + interval '30 seconds', read_ct = m.read_ct + 1 FROM c WHERE m.msg_id = c.msg_id " +
		"RETURNING m.msg_id, m.message"
	baselineDelete = "DELETE FROM q WHERE msg_id = ANY($1::bigint[])"
)

// RunBaseline creates a scratch schema with a pgmq-like table q, runs
// cfg.Workers loops of three autocommit statements (send cfg.Batch
// messages, read up to cfg.Batch with SKIP LOCKED, delete those read) for
// cfg.Warmup + cfg.Duration, counts the messages read and deleted by the
// loops of the measured window and drops the schema.
func RunBaseline(ctx context.Context, cfg BaselineConfig) (*BaselineResult, error) {
	if cfg.Workers < 1 {
		return nil, errors.New("baseline: need at least one worker")
	}
	if cfg.Batch == 0 {
		cfg.Batch = 1
	}
	if cfg.Batch != 1 && cfg.Batch != batchSize {
		return nil, fmt.Errorf("baseline: batch %d: 1 or %d", cfg.Batch, batchSize)
	}
	if cfg.Payload <= 0 {
		cfg.Payload = 1024
	}
	if cfg.Duration <= 0 {
		return nil, errors.New("baseline: need a positive duration")
	}
	// pgmq's queue table and its index on vt.
	sc, err := openScratch(ctx, cfg.DSN, "baseline", cfg.Workers, []string{
		"CREATE TABLE q (msg_id bigserial PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0, " +
			"enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL DEFAULT now(), message jsonb NOT NULL)",
		"CREATE INDEX ON q (vt)",
	}, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer sc.close(ctx)
	body := `{"body":"` + strings.Repeat("x", cfg.Payload) + `"}`
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "baseline: %d workers, batch %d, %s warm-up, %s measured, schema %s\n", cfg.Workers, cfg.Batch, cfg.Warmup, cfg.Duration, sc.schema)
	}
	var win <-chan windowStats
	if cfg.Measure {
		warmEnd := time.Now().Add(cfg.Warmup)
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		win = probeWindow(pctx, warmEnd, warmEnd.Add(cfg.Duration), 0, cfg.KeepProcs, cfg.DSN)
	}
	l := sc.run(ctx, cfg.Warmup, cfg.Duration, func(ctx context.Context, c *pgx.Conn) (int64, error) {
		return oneLifecycle(ctx, c, body, cfg.Batch)
	})
	res := &BaselineResult{Workers: cfg.Workers, Batch: cfg.Batch, Server: sc.server, WindowSec: cfg.Duration.Seconds(),
		Lifecycles: l.iterations, Messages: l.units, Lifecycle: l.latency, Errors: l.errors, ErrorSamples: l.errorSamples}
	res.MessagesPerSec = float64(res.Messages) / res.WindowSec
	if win != nil {
		w := <-win
		res.CPU, res.PG = w.CPU, w.PG
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// oneLifecycle sends batch messages, reads up to batch visible ones (not
// necessarily its own: other workers read the same queue) and deletes
// them, each statement its own transaction as with pgmq. It returns how
// many messages it read and deleted.
func oneLifecycle(ctx context.Context, c *pgx.Conn, body string, batch int) (int64, error) {
	tctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	rows, err := c.Query(tctx, baselineSend, body, batch)
	if err != nil {
		return 0, fmt.Errorf("send: %w", err)
	}
	if _, err := pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return 0, fmt.Errorf("send: %w", err)
	}
	// The messages are read out as a consumer would, then dropped.
	var id int64
	var message []byte
	var ids []int64
	if rows, err = c.Query(tctx, baselineRead, batch); err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&id, &message}, func() error {
		ids = append(ids, id)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := c.Exec(tctx, baselineDelete, ids)
	if err != nil {
		return 0, fmt.Errorf("delete: %w", err)
	}
	// No one else can have deleted them: the read hid them for 30 s.
	if n := tag.RowsAffected(); n != int64(len(ids)) {
		return 0, fmt.Errorf("delete: %d of the %d messages read were deleted", n, len(ids))
	}
	return int64(len(ids)), nil
}
