package spanner

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/docstore"
)

// The bytes written and stored, against sizes worked out by hand from
// Spanner's storage sizes (8 bytes a value, plus 1 for a BOOL, 8 for an
// INT64, 12 for a TIMESTAMP, the bytes of a STRING or BYTES).
func TestStoredBytes(t *testing.T) {
	d := openTest(t, protocolConfig(t))
	ctx, tally := stores.WithTally(t.Context())
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	err := d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		// Row: DocId "abc" 11, inc "qé" (3 bytes) 11, gen 16, shard 16,
		// exp 20, data (5 bytes) 13 = 87; index (inc, gen): 11+11+16 = 38;
		// index (shard, exp): 11+16+20 = 47. 172 in all.
		if err := tx.Set(docstore.Key{Collection: "dedup", ID: "abc"}, docstore.Fields{
			"inc": "qé", "gen": int64(3), "shard": int64(5), "exp": at, "data": []byte{1, 2, 3, 4, 5}}); err != nil {
			return err
		}
		// Row: 12+11+16+16 = 55 (exp and data NULL); (inc, gen) 12+11+16 =
		// 39; (shard, exp) 12+16 = 28. 122 in all.
		if err := tx.Set(docstore.Key{Collection: "dedup", ID: "abcd"}, docstore.Fields{
			"inc": "qé", "gen": int64(3), "shard": int64(5)}); err != nil {
			return err
		}
		// Row: DocId "q" 9, live 9, name "q" 9 = 27; index (live, name):
		// 9+9+9 = 27. 54 in all.
		return tx.Set(docstore.Key{Collection: "queues", ID: "q"}, docstore.Fields{"live": true, "name": "q"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := tally.Ops().Bytes; got != 172+122+54 {
		t.Errorf("the transaction's Bytes = %d, want %d", got, 172+122+54)
	}
	stored := func(coll, field string, v any) int64 {
		t.Helper()
		n, err := d.StoredBytes(t.Context(), docstore.Query{Collection: coll, Filters: []docstore.Filter{{Field: field, Op: docstore.Eq, Value: v}}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := stored("dedup", "inc", "qé"); got != 172+122 {
		t.Errorf("StoredBytes(dedup) = %d, want %d", got, 172+122)
	}
	if got := stored("queues", "name", "q"); got != 54 {
		t.Errorf("StoredBytes(queues) = %d, want 54", got)
	}
	ctx, tally = stores.WithTally(t.Context())
	if err := d.RunTx(ctx, func(ctx context.Context, tx docstore.Tx) error {
		return tx.Delete(docstore.Key{Collection: "dedup", ID: "abcd"})
	}); err != nil {
		t.Fatal(err)
	}
	if got := tally.Ops().Bytes; got != 0 {
		t.Errorf("a deletion's Bytes = %d, want 0", got)
	}
	if got := stored("dedup", "inc", "qé"); got != 172 {
		t.Errorf("StoredBytes(dedup) after the deletion = %d, want 172", got)
	}
}

// A Standard send only inserts its message's row: what the queue holds
// grows by exactly the bytes the send counted.
func TestQueueStoredBytes(t *testing.T) {
	st, err := Open(context.Background(), newConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	svc := service.New(service.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(svc.Shutdown)
	ctx := t.Context()
	q, err := svc.CreateQueue(ctx, &contract.CreateQueueInput{QueueName: "sized"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.QueueGet(ctx, &stores.QueueGetParams{Name: "sized"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := st.QueueStoredBytes(ctx, rec.Name, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 {
		t.Fatalf("an empty queue holds %d bytes, want its record's", before)
	}
	body := strings.Repeat("x", 1000)
	sendCtx, tally := stores.WithTally(ctx)
	if _, err := svc.SendMessage(sendCtx, &contract.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	wrote := tally.Ops().Bytes
	after, err := st.QueueStoredBytes(ctx, rec.Name, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after-before != wrote || wrote < 1000 {
		t.Errorf("the send wrote %d bytes and the queue grew from %d to %d (by %d); want the growth equal to what was written, over the 1000-byte body",
			wrote, before, after, after-before)
	}
	t.Logf("empty queue %d bytes; a Standard message of 1000 bytes adds %d", before, wrote)
}
