package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/stores"
)

// A step whose instance stalled inside its transaction (it holds the
// task's row lock) neither makes other steps of the task wait nor lets them
// move; once the stalled transaction ends (its instance died), the next
// step moves and counts.
func TestMoveTaskStepDoesNotWaitForAStalledStep(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	createQueue(t, s, "dlq", false)
	createQueue(t, s, "dst", false)
	for i := range 5 {
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: "dlq", Messages: []stores.NewMessage{newMsg("m"+string(rune('0'+i)), "", "")}}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := s.MoveTaskCreate(ctx, &stores.MoveTaskCreateParams{Task: &stores.MoveTask{Handle: "h", SourceName: "dlq", SourceArn: "arn:dlq",
		Status: "RUNNING", ToMove: 5, StartedAt: now, UpdatedAt: now, PacedTo: now}}); err != nil {
		t.Fatal(err)
	}
	step := func() (*stores.MessageMoveResult, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return s.MessageMove(ctx, &stores.MessageMoveParams{NewID: uuid.NewString, FromName: "dlq", ToName: "dst", Max: 10,
			Step: &stores.MoveTaskStep{Handle: "h", IfVersion: 1, PacedTo: now.Add(time.Second)}})
	}
	stats := func(q string) int64 {
		st, err := s.QueueStats(ctx, &stores.QueueStatsParams{Name: q})
		if err != nil {
			t.Fatal(err)
		}
		return st.Visible
	}

	stalled, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Ended before the store closes, whatever happens (the cleanups run
	// last first); ending it twice is harmless.
	t.Cleanup(func() { _ = stalled.Rollback(context.Background()) })
	if _, err := stalled.Exec(ctx, `SELECT 1 FROM move_tasks WHERE handle = 'h' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := step(); !errors.Is(err, stores.ErrVersionConflict) {
		t.Fatalf("step beside a stalled one: %v, want ErrVersionConflict", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("step beside a stalled one took %v: it waited for the lock", d)
	}
	if d, l := stats("dst"), stats("dlq"); d != 0 || l != 5 {
		t.Fatalf("the losing step moved: %d in dst, %d left", d, l)
	}

	if err := stalled.Rollback(ctx); err != nil { // its instance died
		t.Fatal(err)
	}
	res, err := step()
	if err != nil {
		t.Fatalf("step after the stalled one ended: %v", err)
	}
	if res.Moved != 5 || res.Task == nil || res.Task.Moved != 5 || res.Task.Version != 2 || !res.Task.PacedTo.Equal(now.Add(time.Second)) {
		t.Fatalf("step = %+v, task %+v; want 5 moved and counted, version 2, PacedTo stored", res, res.Task)
	}
	if d := stats("dst"); d != 5 {
		t.Fatalf("%d in dst, want 5", d)
	}
}

// A task stored before migration 0004 reads with version 1 and its pacing
// continuing from its last step.
func TestMoveTaskFromBeforeVersions(t *testing.T) {
	dsn, schema := newSchema(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	updated := time.Date(2025, 3, 1, 12, 0, 7, 123456000, time.UTC)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()+"; SET LOCAL search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		for _, m := range ms[:3] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO move_tasks (handle, source_name, source_arn, status, moved, to_move, started_at, updated_at)
			VALUES ('old', 'dlq', 'arn:dlq', 'RUNNING', 3, 9, $1, $2)`, updated.Add(-time.Minute), updated)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s := openSchema(t, dsn, schema) // applies 0004
	tk, err := s.MoveTaskGet(ctx, &stores.MoveTaskGetParams{Handle: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Version != 1 || !tk.PacedTo.Equal(updated) || tk.Moved != 3 || tk.Status != "RUNNING" {
		t.Fatalf("task from before 0004 = %+v, want version 1, PacedTo its UpdatedAt %v", tk, updated)
	}
}
