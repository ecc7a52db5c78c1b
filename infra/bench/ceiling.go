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

// CeilingConfig is a ceiling measurement: what the PostgreSQL server alone
// does with the simplest queue-like work, one row in and out per
// transaction, at the concurrency the sluice run used.
type CeilingConfig struct {
	DSN      string
	Conns    int           // connections, each running its own loop
	Duration time.Duration // measured
	Warmup   time.Duration
	Payload  int // bytes per row; default 1024
	Log      io.Writer
}

// CeilingResult is the ceiling's outcome.
type CeilingResult struct {
	Conns        int      `json:"conns"`
	WindowSec    float64  `json:"window_sec"`
	Transactions int64    `json:"transactions"`
	TxPerSec     float64  `json:"tx_per_sec"`
	Tx           Summary  `json:"tx"` // latency of one transaction
	Errors       int64    `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	Server       string   `json:"server_version,omitempty"`
	// Ratio is sluice lifecycles/s ÷ TxPerSec (set by the caller).
	Ratio float64 `json:"ratio,omitempty"`
}

// RunCeiling creates a scratch schema with a table bench_ceiling, runs
// cfg.Conns loops of
//
//	BEGIN; INSERT INTO bench_ceiling(payload) VALUES ($1) RETURNING id;
//	DELETE FROM bench_ceiling WHERE id = $1; COMMIT
//
// for cfg.Warmup + cfg.Duration, counts the transactions committed in the
// measured window and drops the schema.
func RunCeiling(ctx context.Context, cfg CeilingConfig) (*CeilingResult, error) {
	if cfg.Conns < 1 {
		return nil, errors.New("ceiling: need at least one connection")
	}
	if cfg.Payload <= 0 {
		cfg.Payload = 1024
	}
	if cfg.Duration <= 0 {
		return nil, errors.New("ceiling: need a positive duration")
	}
	sc, err := openScratch(ctx, cfg.DSN, "ceiling", cfg.Conns,
		[]string{"CREATE TABLE bench_ceiling (id bigserial PRIMARY KEY, payload bytea NOT NULL)"}, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer sc.close(ctx)
	payload := []byte(strings.Repeat("x", cfg.Payload))
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "ceiling: %d connections, %s warm-up, %s measured, schema %s\n", cfg.Conns, cfg.Warmup, cfg.Duration, sc.schema)
	}
	l := sc.run(ctx, cfg.Warmup, cfg.Duration, func(ctx context.Context, c *pgx.Conn) (int64, error) {
		return 1, oneTx(ctx, c, payload)
	})
	res := &CeilingResult{Conns: cfg.Conns, Server: sc.server, WindowSec: cfg.Duration.Seconds(),
		Transactions: l.iterations, Tx: l.latency, Errors: l.errors, ErrorSamples: l.errorSamples}
	res.TxPerSec = float64(res.Transactions) / res.WindowSec
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func oneTx(ctx context.Context, c *pgx.Conn, payload []byte) error {
	tctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	tx, err := c.Begin(tctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(tctx)) //nolint:errcheck // after Commit it is a no-op
	var id int64
	if err := tx.QueryRow(tctx, "INSERT INTO bench_ceiling(payload) VALUES ($1) RETURNING id", payload).Scan(&id); err != nil {
		return err
	}
	if _, err := tx.Exec(tctx, "DELETE FROM bench_ceiling WHERE id = $1", id); err != nil {
		return err
	}
	return tx.Commit(tctx)
}
