package pgstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// The benchmarks run one lifecycle at a time (send, claim, delete) on one
// connection's worth of work, so ns/op is the store's cost per lifecycle
// without concurrency: round trips, planning and execution on the server.
// With SLUICE_BENCH_ASYNC_COMMIT unset, each commit waits for its WAL flush
// as in production. Run: go test -run '^$' -bench . ./stores/pgstore
func benchLifecycles(b *testing.B, fifo bool, batch int) {
	s := newTestStore(b)
	name := "bench"
	if fifo {
		name += ".fifo"
	}
	q := createQueue(b, s, name, fifo)
	ctx := context.Background()
	n := 0
	b.ResetTimer()
	for b.Loop() {
		msgs := make([]stores.NewMessage, batch)
		for i := range msgs {
			n++
			msgs[i] = newMsg("m"+strconv.Itoa(n), "g"+strconv.Itoa(n%64), "d"+strconv.Itoa(n))
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs,
			DedupWindow: 5 * time.Minute}); err != nil {
			b.Fatal(err)
		}
		token := "t" + strconv.Itoa(n)
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: batch,
			VisibilityTimeout: time.Minute, Token: token})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Messages) == 0 {
			b.Fatal("claimed nothing")
		}
		receipts := make([]stores.Receipt, len(res.Messages))
		for i, m := range res.Messages {
			receipts[i] = stores.Receipt{MessageID: m.ID, Token: m.Token}
		}
		if _, err := s.MessageDelete(ctx, &stores.MessageDeleteParams{QueueName: q.Name, QueueID: q.ID,
			Receipts: receipts, KeepExpired: fifo}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFIFOLifecycle(b *testing.B)     { benchLifecycles(b, true, 1) }
func BenchmarkFIFOBatch10(b *testing.B)       { benchLifecycles(b, true, 10) }
func BenchmarkStandardLifecycle(b *testing.B) { benchLifecycles(b, false, 1) }
func BenchmarkStandardBatch10(b *testing.B)   { benchLifecycles(b, false, 10) }
