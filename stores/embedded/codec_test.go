package embedded

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

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
		{"year -5", "x", time.Date(-5, 1, 1, 0, 0, 0, 7, time.UTC), tagGob},
		{"big", strings.Repeat("\u00e9\t\n\"\\", 100000), t0, tagJSON},
	}
	for _, c := range cases {
		// A message record is binary whatever it holds; a tombstone
		// (any other kind) is JSON, or gob where JSON is not exact.
		tomb := &engine.TombstoneRecord{Name: c.body, DeletedAt: c.when}
		v, err := encode(tomb)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if v[0] != c.tag {
			t.Errorf("%s: tombstone stored as %q, want %q", c.name, v[0], c.tag)
		}
		back := &engine.TombstoneRecord{}
		if err := decode(v, back); err != nil || back.Name != tomb.Name || !back.DeletedAt.Equal(tomb.DeletedAt) {
			t.Fatalf("%s: tombstone round trip: %+v %v", c.name, back, err)
		}
		c.tag = tagBinary
		in := &engine.MessageRecord{Queue: "q", Seq: rules.FirstSequence + 7, VisibleAt: c.when, Token: "tok", Message: stores.StoredMessage{
			ID: "id", Body: c.body, SentAt: c.when, SequenceNumber: "10000000000000000007",
			Attributes: map[string]stores.Attribute{
				"s": {DataType: "String", StringValue: str(c.body)},
				"b": {DataType: "Binary", BinaryValue: []byte{0, 1, 0xff}},
				"l": {DataType: "String", StringListValues: []string{"x", c.body}, BinaryListValues: [][]byte{{9}}},
			},
		}}
		v, err = encode(in)
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
		return e.MessageMove(ctx, &stores.MessageMoveParams{NewID: uuid.NewString, FromName: "dlq", Max: 1, Now: t0,
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

// fillFields sets every field of v, recursively, to a value of its own (n counts
// them), so that a field the binary layout forgets shows in a round trip.
func fillFields(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint64:
		v.SetUint(uint64(*n) << 40)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(t0.Add(time.Duration(*n)*time.Hour + time.Duration(*n))))
			return
		}
		for i := range v.NumField() {
			fillFields(t, v.Field(i), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillFields(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillFields(t, v.Index(i), n)
		}
	case reflect.Uint8:
		v.SetUint(uint64(*n))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillFields(t, k, n)
			fillFields(t, e, n)
			v.SetMapIndex(k, e)
		}
	default:
		t.Fatalf("fill: no value for a %s", v.Type())
	}
}

// Every field of the records stored in the binary layout round-trips,
// whichever fields they have: a field added to them and not to the layout
// fails here.
func TestBinaryLayoutKeepsEveryField(t *testing.T) {
	for _, in := range []engine.Record{&engine.MessageRecord{}, &engine.DeliveryRecord{}, &engine.DedupRecord{}} {
		n := 0
		fillFields(t, reflect.ValueOf(in).Elem(), &n)
		v, err := encode(in)
		if err != nil {
			t.Fatal(err)
		}
		if v[0] != tagBinary {
			t.Fatalf("%s stored as %q", in.Kind(), v[0])
		}
		out := in.Kind().New()
		if err := decode(v, out); err != nil {
			t.Fatalf("%s: %v", in.Kind(), err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("%s: round trip changed the record:\n in %+v\nout %+v", in.Kind(), in, out)
		}
		// Cut short anywhere, or with bytes after it, it is refused.
		for i := 1; i < len(v); i++ {
			if err := decode(v[:i], in.Kind().New()); err == nil {
				t.Fatalf("%s cut to %d of %d bytes decoded", in.Kind(), i, len(v))
			}
		}
		if err := decode(append(slices.Clone(v), 0), in.Kind().New()); err == nil {
			t.Fatalf("%s with a byte after it decoded", in.Kind())
		}
	}
}
