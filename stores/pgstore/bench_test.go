package pgstore

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
)

// benchStore opens a Store on a fresh schema for a benchmark; with
// SLUICE_BENCH_ASYNC_COMMIT set, its sessions commit without waiting for
// the WAL flush, so that the disk's flush time does not hide the work
// measured.
func benchStore(b *testing.B) *Store {
	b.Helper()
	dsn, schema := newSchema(b)
	if os.Getenv("SLUICE_BENCH_ASYNC_COMMIT") != "" {
		u, err := url.Parse(dsn)
		if err != nil {
			b.Fatalf("SLUICE_BENCH_ASYNC_COMMIT needs DATABASE_URL as a URL: %v", err)
		}
		q := u.Query()
		q.Set("synchronous_commit", "off")
		u.RawQuery = q.Encode()
		dsn = u.String()
	}
	return openSchema(b, dsn, schema)
}

// The benchmarks run one lifecycle at a time (send, claim, delete) on one
// connection's worth of work, so ns/op is the store's cost per lifecycle
// without concurrency: round trips, planning and execution on the server.
// With SLUICE_BENCH_ASYNC_COMMIT unset, each commit waits for its WAL flush
// as in production. Run: go test -run '^$' -bench . ./stores/pgstore
//
// With a backlog, every one of the 64 groups holds that many messages
// before the loop starts and throughout it (each lifecycle sends as many
// as it deletes), as under load: a delete then leaves its group a next
// head, where without one it empties the group.
func benchLifecycles(b *testing.B, fifo bool, batch, backlog int) {
	s := benchStore(b)
	name := "bench"
	if fifo {
		name += ".fifo"
	}
	q := createQueue(b, s, name, fifo)
	ctx := context.Background()
	n := 0
	// send sends count new messages, spread over the 64 groups.
	send := func(count int) {
		msgs := make([]stores.NewMessage, count)
		for i := range msgs {
			n++
			msgs[i] = newMsg("m"+strconv.Itoa(n), "g"+strconv.Itoa(n%64), "d"+strconv.Itoa(n))
		}
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs,
			DedupWindow: 5 * time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
	for range backlog * 64 / 10 {
		send(10)
	}
	b.ResetTimer()
	for b.Loop() {
		send(batch)
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

func BenchmarkFIFOLifecycle(b *testing.B)        { benchLifecycles(b, true, 1, 0) }
func BenchmarkFIFOBatch10(b *testing.B)          { benchLifecycles(b, true, 10, 0) }
func BenchmarkStandardLifecycle(b *testing.B)    { benchLifecycles(b, false, 1, 0) }
func BenchmarkStandardBatch10(b *testing.B)      { benchLifecycles(b, false, 10, 0) }
func BenchmarkFIFOLifecycleBacklog(b *testing.B) { benchLifecycles(b, true, 1, 10) }
func BenchmarkFIFOBatch10Backlog(b *testing.B)   { benchLifecycles(b, true, 10, 10) }

// benchEmptyReceives measures a short-poll receive that finds nothing
// while 64 messages (in 64 groups, on a FIFO queue) are in flight: the
// common case of consumers that outpace producers, and the database's cost
// of an empty receive (the service's idle memo answers most of them).
func benchEmptyReceives(b *testing.B, fifo bool) {
	s := benchStore(b)
	name := "empty"
	if fifo {
		name += ".fifo"
	}
	q := createQueue(b, s, name, fifo)
	ctx := context.Background()
	msgs := make([]stores.NewMessage, 64)
	for i := range msgs {
		msgs[i] = newMsg("m", "g"+strconv.Itoa(i), "d"+strconv.Itoa(i))
		if !fifo {
			msgs[i].GroupID, msgs[i].DedupID = "", ""
		}
	}
	for i := 0; i < len(msgs); i += 10 {
		if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID,
			Messages: msgs[i:min(i+10, len(msgs))], DedupWindow: 5 * time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
	for got := 0; got < len(msgs); {
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 10,
			VisibilityTimeout: time.Hour, Token: "t"})
		if err != nil {
			b.Fatal(err)
		}
		got += len(res.Messages)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: 1,
			VisibilityTimeout: time.Minute, Token: "e"})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Messages) != 0 {
			b.Fatal("claimed a message in flight")
		}
	}
}

func BenchmarkFIFOEmptyReceive(b *testing.B)     { benchEmptyReceives(b, true) }
func BenchmarkStandardEmptyReceive(b *testing.B) { benchEmptyReceives(b, false) }

// benchFIFOClaims measures a FIFO claim of up to want messages, one at a
// time, on a state that every claim leaves as it found it: 64 groups of one
// message each, claimed with a visibility timeout of 0, so that each
// claimed group is receivable again at once (and goes to the back of the
// queue's order). What a change to the claim costs the database shows here
// without a load's noise: run two builds one after the other, on pinned
// CPUs, with SLUICE_BENCH_ASYNC_COMMIT set.
func benchFIFOClaims(b *testing.B, want int) {
	s := benchStore(b)
	q := createQueue(b, s, "claims.fifo", true)
	ctx := context.Background()
	msgs := make([]stores.NewMessage, 64)
	for i := range msgs {
		msgs[i] = newMsg("m", "g"+strconv.Itoa(i), "d"+strconv.Itoa(i))
	}
	if _, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: q.Name, QueueID: q.ID, Messages: msgs,
		DedupWindow: 5 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := s.MessageClaim(ctx, &stores.MessageClaimParams{QueueName: q.Name, QueueID: q.ID, Max: want,
			Token: "c"})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Messages) != want {
			b.Fatalf("claimed %d messages, want %d", len(res.Messages), want)
		}
	}
}

func BenchmarkFIFOClaim1(b *testing.B)  { benchFIFOClaims(b, 1) }
func BenchmarkFIFOClaim10(b *testing.B) { benchFIFOClaims(b, 10) }
