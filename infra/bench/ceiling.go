package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
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
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	schema := "sluice_bench_" + randomID()
	admin, err := pgx.Connect(ctx, cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("ceiling: connect: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	res := &CeilingResult{Conns: cfg.Conns}
	_ = admin.QueryRow(ctx, "SHOW server_version").Scan(&res.Server)
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		return nil, fmt.Errorf("ceiling: create schema: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(dctx, "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			fmt.Fprintf(log, "ceiling: warning: could not drop schema %s: %v\n", schema, err)
		}
	}()
	if _, err := admin.Exec(ctx, "CREATE TABLE "+ident+".bench_ceiling (id bigserial PRIMARY KEY, payload bytea NOT NULL)"); err != nil {
		return nil, fmt.Errorf("ceiling: create table: %w", err)
	}
	conns := make([]*pgx.Conn, cfg.Conns)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	for i := range conns {
		cc, err := pgx.ParseConfig(cfg.DSN)
		if err != nil {
			return nil, fmt.Errorf("ceiling: %w", err)
		}
		cc.RuntimeParams["search_path"] = schema
		if conns[i], err = pgx.ConnectConfig(ctx, cc); err != nil {
			return nil, fmt.Errorf("ceiling: connect: %w", err)
		}
	}
	payload := []byte(strings.Repeat("x", cfg.Payload))
	fmt.Fprintf(log, "ceiling: %d connections, %s warm-up, %s measured, schema %s\n", cfg.Conns, cfg.Warmup, cfg.Duration, schema)

	start := time.Now()
	warmEnd := start.Add(cfg.Warmup)
	end := warmEnd.Add(cfg.Duration)
	var committed atomic.Int64
	var errs errLog
	errs.byAction = map[string]int64{}
	hists := make([]hist, cfg.Conns)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				err := oneTx(ctx, c, payload)
				t1 := time.Now()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					errs.add("ceiling", err)
					if c.IsClosed() {
						return
					}
					continue
				}
				if !t0.Before(warmEnd) && t1.Before(end) {
					committed.Add(1)
					hists[i].add(t1.Sub(t0))
				}
			}
		})
	}
	wg.Wait()
	var h hist
	for i := range hists {
		h.merge(&hists[i])
	}
	res.WindowSec = cfg.Duration.Seconds()
	res.Transactions = committed.Load()
	res.TxPerSec = float64(res.Transactions) / res.WindowSec
	res.Tx = h.summary()
	res.Errors, _, res.ErrorSamples = errs.snapshot()
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
