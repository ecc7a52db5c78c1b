package bench

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGStats is what one PostgreSQL database did over a measured window: the
// WAL the whole cluster inserted and the transactions the database
// committed and rolled back (as pg_stat_database counts them: each backend
// reports its counts at most once a second, so a window's figures lag its
// edges by about that much at both ends).
type PGStats struct {
	// CPUSec is the CPU time of the cluster's processes (found by its
	// data directory).
	CPUSec    float64 `json:"cpu_sec"`
	WALBytes  int64   `json:"wal_bytes"`
	Commits   int64   `json:"commits"`
	Rollbacks int64   `json:"rollbacks"`
}

// windowStats is what the machine and, when a DSN is given, PostgreSQL did
// between two instants.
type windowStats struct {
	CPU *CPUStats
	PG  *PGStats
}

// probeWindow measures from from to to in the background: CPU use (the
// server's when serverPID is set, keep's groups however idle) and, with
// pgDSN, PostgreSQL's WAL and commits. Its channel gets one value, empty
// when ctx ended first.
func probeWindow(ctx context.Context, from, to time.Time, serverPID int, keep []string, pgDSN string) <-chan windowStats {
	out := make(chan windowStats, 1)
	go func() {
		var conn *pgx.Conn
		cluster := ""
		if pgDSN != "" {
			if c, err := pgx.Connect(ctx, pgDSN); err == nil {
				conn = c
				defer conn.Close(context.WithoutCancel(ctx))
				var dir string
				if conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir) == nil {
					// As procGroup names the cluster's processes.
					cluster = "postgres " + dir
					keep = append(slices.Clip(keep), cluster)
				}
			}
		}
		if !sleepUntil(ctx, from) {
			out <- windowStats{}
			return
		}
		pa, okA := pgCounters(ctx, conn)
		a := takeCPUSnap(serverPID)
		if !sleepUntil(ctx, to) {
			out <- windowStats{}
			return
		}
		b := takeCPUSnap(serverPID)
		pb, okB := pgCounters(ctx, conn)
		w := windowStats{CPU: cpuBetween(a, b, keep...)}
		if okA && okB {
			w.PG = &PGStats{WALBytes: pb.WALBytes - pa.WALBytes, Commits: pb.Commits - pa.Commits, Rollbacks: pb.Rollbacks - pa.Rollbacks}
			if w.CPU != nil {
				for _, p := range w.CPU.Others {
					if p.Name == cluster {
						w.PG.CPUSec = p.Cores * b.at.Sub(a.at).Seconds()
					}
				}
			}
		}
		out <- w
	}()
	return out
}

// pgCounters reads the cluster's WAL insert position and the database's
// transaction counts; false without a connection or on an error.
func pgCounters(ctx context.Context, conn *pgx.Conn) (PGStats, bool) {
	if conn == nil {
		return PGStats{}, false
	}
	var s PGStats
	err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint, xact_commit, xact_rollback
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.WALBytes, &s.Commits, &s.Rollbacks)
	return s, err == nil
}
