package embedded

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore/engine"
	"github.com/sluicehq/sluice/stores/rules"
)

// Records as the store wrote them in format 1 (before a message's delivery
// state had a record of its own): a queue, its counter, and a message
// received twice, in flight until 12:01 under token T1.
var format1 = map[string]string{
	"queues":   "j{\"Queue\":{\"Name\":\"q\",\"ID\":\"q-id\",\"FIFO\":false,\"Attributes\":{},\"Tags\":{},\"Retention\":345600000000000,\"CreatedAt\":\"2025-03-01T12:00:00Z\",\"ModifiedAt\":\"2025-03-01T12:00:00Z\",\"Version\":1},\"LastPurgeAt\":\"0001-01-01T00:00:00Z\"}\n",
	"messages": "j{\"Queue\":\"q\",\"Seq\":10000000000000000000,\"VisibleAt\":\"2025-03-01T12:01:00Z\",\"Token\":\"T1\",\"Message\":{\"ID\":\"m1\",\"Body\":\"hello\",\"Attributes\":null,\"SystemAttributes\":null,\"MD5OfBody\":\"5d41402abc4b2a76b9719d911017c592\",\"MD5OfMessageAttributes\":\"\",\"MD5OfSystemAttributes\":\"\",\"SenderID\":\"\",\"GroupID\":\"\",\"DedupID\":\"\",\"SequenceNumber\":\"\",\"SentAt\":\"2025-03-01T12:00:00Z\",\"FirstReceivedAt\":\"2025-03-01T12:00:01Z\",\"ReceiveCount\":2,\"DeadLetterSource\":\"\"}}\n",
	"counters": "j{\"Queue\":\"q\",\"Next\":10000000000000000001}\n",
}

// TestOpensFormat1 opens a database of format 1, which has no deliveries
// bucket: the message keeps its delivery state, a receive writes the new
// record kind, and the first commit marks the database format 2, so that an
// older build refuses it rather than ignore the deliveries.
func TestOpensFormat1(t *testing.T) {
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]byte{
		"queues":   (&engine.QueueRecord{Queue: stores.Queue{Name: "q"}}).Key(),
		"messages": (&engine.MessageRecord{Queue: "q", Seq: rules.FirstSequence}).Key(),
		"counters": (&engine.CounterRecord{Queue: "q"}).Key(),
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(metaBucket)
		meta.Put(formatKey, []byte("1"))
		for _, b := range []string{"queues", "counters", "messages", "dedup", "attempts", "tasks", "tombstones"} {
			bk, err := tx.CreateBucket([]byte(b))
			if err != nil {
				return err
			}
			if v, ok := format1[b]; ok {
				bk.Put(keys[b], []byte(v))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := open(t, dir)
	st := must(s.QueueStats(ctx, &stores.QueueStatsParams{Name: "q", Now: at(30 * sec)}))
	eq(t, "stats", *st, stores.QueueStats{InFlight: 1})
	if _, err := s.MessageChangeVisibility(ctx, &stores.MessageChangeVisibilityParams{QueueName: "q", MessageID: "m1", Token: "T1", Now: at(30 * sec)}); err != nil {
		t.Fatal(err)
	}
	res := claim(t, s, "q", at(31*sec), 10, "T2", "")
	if len(res.Messages) != 1 || res.Messages[0].ReceiveCount != 3 || res.Messages[0].Body != "hello" || !res.Messages[0].FirstReceivedAt.Equal(at(sec)) {
		t.Fatalf("claimed %+v", res.Messages)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	err = s.db.View(func(tx *bolt.Tx) error {
		eq(t, "format", string(tx.Bucket(metaBucket).Get(formatKey)), formatVersion)
		if tx.Bucket([]byte("deliveries")) == nil {
			t.Fatal("no deliveries bucket after a delivery")
		}
		if v := string(tx.Bucket([]byte("messages")).Get(keys["messages"])); v != format1["messages"] {
			t.Fatalf("the message record was rewritten: %s", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res = claim(t, s, "q", at(time.Hour), 10, "T3", "")
	if len(res.Messages) != 1 || res.Messages[0].ReceiveCount != 4 {
		t.Fatalf("after reopening: %+v", res.Messages)
	}
}

// A database marked with a format this build does not know is refused.
func TestRefusesUnknownFormat(t *testing.T) {
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(metaBucket)
		return meta.Put(formatKey, []byte("99"))
	})
	db.Close()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Fatalf("open: %v", err)
	}
}

// TestOpensFormat3DedupMarkers opens a database of format 3, whose dedup
// markers are keyed by queue, scope and id: they still deduplicate, and the
// first commit moves them under their keys of format 4, which sort by the
// instant they were written (ids z, y, x sent in that order sort z, y, x).
func TestOpensFormat3DedupMarkers(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	createQueue(t, s, "q.fifo", true, t0)
	send(t, s, "q.fifo", t0, "g", "z")
	send(t, s, "q.fifo", at(sec), "g", "y")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName(engine.KindDedup))
		recs := map[string][]byte{}
		b.ForEach(func(k, v []byte) error { recs[string(k)] = v; return nil })
		for k, v := range recs {
			r := &engine.DedupRecord{}
			if err := decode(v, r); err != nil {
				return err
			}
			b.Delete([]byte(k))
			b.Put(r.LegacyKey(), v)
		}
		return tx.Bucket(metaBucket).Put(formatKey, []byte("3"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s = open(t, dir)
	eq(t, "z again", send(t, s, "q.fifo", at(2*sec), "g", "z")[0].Duplicate, true)
	send(t, s, "q.fifo", at(3*sec), "g", "x")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	err = s.db.View(func(tx *bolt.Tx) error {
		eq(t, "format", string(tx.Bucket(metaBucket).Get(formatKey)), formatVersion)
		var got []string
		tx.Bucket(bucketName(engine.KindDedup)).ForEach(func(k, v []byte) error {
			r := &engine.DedupRecord{}
			if err := decode(v, r); err != nil {
				return err
			}
			if !bytes.Equal(k, r.Key()) {
				t.Errorf("marker %s under key %q, want %q", r.DedupID, k, r.Key())
			}
			got = append(got, r.DedupID)
			return nil
		})
		eq(t, "markers in key order", got, []string{"z", "y", "x"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "y after reopening", send(t, s, "q.fifo", at(4*sec), "g", "y")[0].Duplicate, true)
}
