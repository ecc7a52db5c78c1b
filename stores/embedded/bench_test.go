package embedded

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
)

// BenchmarkSend measures concurrent single-message sends to a Standard
// queue, embedded (durable, group commit) against memstore, with 1, 16 and
// 64 sending goroutines per CPU (b.SetParallelism). For embedded it reports
// how many sends shared one bbolt commit. Run with:
//
//	go test -run '^$' -bench BenchmarkSend -benchtime 3s ./stores/embedded/
func BenchmarkSend(b *testing.B) {
	for _, body := range []int{100, 10 << 10} {
		for _, par := range []int{1, 16, 64} {
			for _, kind := range []string{"memstore", "embedded"} {
				b.Run(fmt.Sprintf("%s/body=%d/goroutines=%dxCPU", kind, body, par), func(b *testing.B) {
					benchSend(b, kind, body, par)
				})
			}
		}
	}
}

func benchSend(b *testing.B, kind string, body, par int) {
	var s stores.Store
	var emb *Store
	if kind == "memstore" {
		s = memstore.New()
	} else {
		emb = open(b, b.TempDir())
		s = emb
	}
	defer s.Close()
	createQueue(b, s, "bench", false, time.Time{})
	text := strings.Repeat("x", body)
	var n atomic.Int64
	b.SetBytes(int64(body))
	b.SetParallelism(par)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprint("m", n.Add(1))
			_, err := s.MessageSend(ctx, &stores.MessageSendParams{QueueName: "bench",
				Messages: []stores.NewMessage{{ID: id, Body: text}}})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if emb != nil {
		emb.c.mu.Lock()
		commits := emb.c.commits
		emb.c.mu.Unlock()
		if commits > 0 {
			b.ReportMetric(float64(b.N)/float64(commits), "sends/commit")
		}
	}
}
