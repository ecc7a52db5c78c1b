package embedded

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
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
		in := &engine.MessageRecord{Queue: "q", Seq: engine.SeqBase + 7, VisibleAt: c.when, Token: "tok", Message: stores.StoredMessage{
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
		&engine.CounterRecord{Queue: "q", Next: engine.SeqBase + 99},
		&engine.DedupRecord{Queue: "q", Scope: "g", DedupID: "d", MessageID: "m", SequenceNumber: "10000000000000000001", CreatedAt: t0, ExpiresAt: t0},
		&engine.AttemptRecord{Queue: "q", AttemptID: "a", Token: "t", MessageIDs: []string{"m1", "m2"}, CreatedAt: t0, ExpiresAt: t0},
		&engine.TaskRecord{Task: stores.MoveTask{Handle: "h", SourceArn: "s", Status: "RUNNING", Moved: 3, ToMove: 9, StartedAt: t0, UpdatedAt: t0}},
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
