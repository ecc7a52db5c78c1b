package embedded

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
	"github.com/sluicehq/sluice/stores/rules"
)

func TestCodecRoundTripsExactly(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		body string
		when time.Time
		tag  byte
	}{
		{"plain", "hello <world> & friends", t0, tagJSON},
		{"real U+FFFD", "a \ufffd b", t0, tagJSON},
		{"invalid UTF-8", "a \xff\xfe b", t0, tagGob},
		{"literal escape text", `a \ufffd b`, t0, tagGob},
		{"year 10000", "x", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), tagGob},
		{"big", strings.Repeat("\u00e9\t\n\"\\", 100000), t0, tagJSON},
	}
	for _, c := range cases {
		in := &engine.MessageRecord{Queue: "q", Seq: rules.FirstSequence + 7, VisibleAt: c.when, Token: "tok", Message: stores.StoredMessage{
			ID: "id", Body: c.body, SentAt: c.when, SequenceNumber: "10000000000000000007",
			Attributes: map[string]stores.Attribute{
				"s": {DataType: "String", StringValue: str(c.body)},
				"b": {DataType: "Binary", BinaryValue: []byte{0, 1, 0xff}},
				"l": {DataType: "String", StringListValues: []string{"x", c.body}, BinaryListValues: [][]byte{{9}}},
			},
		}}
		v, err := encode(in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if v[0] != c.tag {
			t.Errorf("%s: stored as %q, want %q", c.name, v[0], c.tag)
		}
		out := &engine.MessageRecord{}
		if err := decode(v, out); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !out.VisibleAt.Equal(in.VisibleAt) || !out.Message.SentAt.Equal(in.Message.SentAt) {
			t.Fatalf("%s: times changed", c.name)
		}
		out.VisibleAt, out.Message.SentAt = in.VisibleAt, in.Message.SentAt
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("%s: round trip changed the record:\n in %+v\nout %+v", c.name, in, out)
		}
	}
	if err := decode([]byte("x{}"), &engine.QueueRecord{}); err == nil {
		t.Fatal("unknown tag accepted")
	}
}

// Every kind of record round-trips.
func TestCodecAllKinds(t *testing.T) {
	recs := []engine.Record{
		&engine.QueueRecord{Queue: stores.Queue{Name: "q", ID: "i", FIFO: true, Attributes: map[string]string{}, Tags: map[string]string{"a": "b"},
			Retention: time.Hour, CreatedAt: t0, ModifiedAt: t0, Version: 3}, LastPurgeAt: t0},
		&engine.CounterRecord{Queue: "q", Next: rules.FirstSequence + 99},
		&engine.DedupRecord{Queue: "q", Scope: "g", DedupID: "d", MessageID: "m", SequenceNumber: "10000000000000000001", CreatedAt: t0, ExpiresAt: t0},
		&engine.AttemptRecord{Queue: "q", AttemptID: "a", Token: "t", MessageIDs: []string{"m1", "m2"}, CreatedAt: t0, ExpiresAt: t0},
		&engine.TaskRecord{Task: stores.MoveTask{Handle: "h", SourceArn: "s", Status: "RUNNING", Moved: 3, ToMove: 9, StartedAt: t0, UpdatedAt: t0, PacedTo: t0, Version: 4}},
		&engine.TombstoneRecord{Name: "q", DeletedAt: t0},
	}
	for _, in := range recs {
		v, err := encode(in)
		if err != nil {
			t.Fatal(err)
		}
		out := in.Kind().New()
		if err := decode(v, out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("%s: in %+v out %+v", in.Kind(), in, out)
		}
	}
}

// A task stored before tasks had a Version and PacedTo decodes with both
// zero, and the engine steps it: the version check holds for 0 too.
func TestCodecTaskFromBeforeVersions(t *testing.T) {
	old := []byte(`j{"Task":{"Handle":"h","SourceName":"dlq","SourceArn":"arn:dlq","DestinationArn":"","MaxPerSecond":0,` +
		`"Status":"RUNNING","Moved":3,"ToMove":9,"FailureReason":"","StartedAt":"2025-03-01T12:00:00Z","UpdatedAt":"2025-03-01T12:00:07Z"}}` + "\n")
	rec := &engine.TaskRecord{}
	if err := decode(old, rec); err != nil {
		t.Fatal(err)
	}
	if rec.Task.Version != 0 || !rec.Task.PacedTo.IsZero() || rec.Task.Moved != 3 || rec.Task.Status != "RUNNING" {
		t.Fatalf("old task decoded as %+v", rec.Task)
	}
	e := engine.New(nil)
	if err := e.Restore([]engine.Record{rec}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.QueueCreate(ctx, &stores.QueueCreateParams{Queue: &stores.Queue{Name: "dlq", ID: "dlq"}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	step := func(v int64) (*stores.MessageMoveResult, error) {
		return e.MessageMove(ctx, &stores.MessageMoveParams{FromName: "dlq", Max: 1, Now: t0,
			Step: &stores.MoveTaskStep{Handle: "h", IfVersion: v, PacedTo: t0}})
	}
	if _, err := step(1); !errors.Is(err, stores.ErrVersionConflict) {
		t.Fatalf("step with version 1: %v, want ErrVersionConflict", err)
	}
	res, err := step(0)
	if err != nil || res.Task.Version != 1 || !res.Task.PacedTo.Equal(t0) || res.Task.Moved != 3 {
		t.Fatalf("step with version 0: %+v %v, want the task at version 1, PacedTo stored, 3 moved", res, err)
	}
}
