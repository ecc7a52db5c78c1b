package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// scratch is a schema of its own on a PostgreSQL server, with connections
// whose search_path is that schema: where the ceiling and the baseline
// run, side by side with whatever else the database holds.
type scratch struct {
	what   string // "ceiling", "baseline": prefixes errors and warnings
	log    io.Writer
	admin  *pgx.Conn
	schema string
	conns  []*pgx.Conn
	server string // the server's version
}

// openScratch creates the schema, runs ddl in it and opens n connections.
// close drops the schema, also after an error here.
func openScratch(ctx context.Context, dsn, what string, n int, ddl []string, log io.Writer) (*scratch, error) {
	if log == nil {
		log = io.Discard
	}
	s := &scratch{what: what, log: log, schema: "sluice_bench_" + randomID()}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", what, err)
	}
	s.admin = admin
	_ = admin.QueryRow(ctx, "SHOW server_version").Scan(&s.server)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{s.schema}.Sanitize()); err != nil {
		admin.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%s: create schema: %w", what, err)
	}
	s.conns = make([]*pgx.Conn, n)
	for i := range s.conns {
		cc, err := pgx.ParseConfig(dsn)
		if err != nil {
			s.close(ctx)
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		cc.RuntimeParams["search_path"] = s.schema
		if s.conns[i], err = pgx.ConnectConfig(ctx, cc); err != nil {
			s.close(ctx)
			return nil, fmt.Errorf("%s: connect: %w", what, err)
		}
	}
	for _, stmt := range ddl {
		if _, err := s.conns[0].Exec(ctx, stmt); err != nil {
			s.close(ctx)
			return nil, fmt.Errorf("%s: create table: %w", what, err)
		}
	}
	return s, nil
}

func (s *scratch) close(ctx context.Context) {
	for _, c := range s.conns {
		if c != nil {
			c.Close(context.WithoutCancel(ctx))
		}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := s.admin.Exec(dctx, "DROP SCHEMA "+pgx.Identifier{s.schema}.Sanitize()+" CASCADE"); err != nil {
		fmt.Fprintf(s.log, "%s: warning: could not drop schema %s: %v\n", s.what, s.schema, err)
	}
	s.admin.Close(context.WithoutCancel(ctx))
}

// loops is what run measured: the iterations that started after the
// warm-up and ended within the window, the units they reported (rows,
// messages), their latency, and the errors.
type loops struct {
	iterations, units int64
	latency           Summary
	errors            int64
	errorSamples      []string
}

// run runs one loop of fn per connection for warmup + window.
func (s *scratch) run(ctx context.Context, warmup, window time.Duration, fn func(ctx context.Context, c *pgx.Conn) (int64, error)) *loops {
	start := time.Now()
	warmEnd := start.Add(warmup)
	end := warmEnd.Add(window)
	var iterations, units atomic.Int64
	var errs errLog
	errs.byAction = map[string]int64{}
	hists := make([]hist, len(s.conns))
	var wg sync.WaitGroup
	for i, c := range s.conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				n, err := fn(ctx, c)
				t1 := time.Now()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					errs.add(s.what, err)
					if c.IsClosed() {
						return
					}
					continue
				}
				if !t0.Before(warmEnd) && t1.Before(end) {
					iterations.Add(1)
					units.Add(n)
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
	out := &loops{iterations: iterations.Load(), units: units.Load(), latency: h.summary()}
	out.errors, _, out.errorSamples = errs.snapshot()
	return out
}
