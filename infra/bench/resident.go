package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ResidentStats describe the backlog a run kept beside its queue
// (Config.Resident): a second queue of the same kind filled before the
// warm-up and never read, so that the store's tables and indexes hold
// that many more messages while the window runs.
type ResidentStats struct {
	Queue      string  `json:"queue"`
	Messages   int64   `json:"messages"` // sends acknowledged
	FillSec    float64 `json:"fill_sec"`
	SentPerSec float64 `json:"sent_per_sec"`
	Error      string  `json:"error,omitempty"` // why the fill stopped short
	Kept       string  `json:"kept,omitempty"`  // why the queue could not be deleted
}

// fillResident creates the resident queue (the run's name with
// "-resident" before any ".fifo") and sends it cfg.Resident messages of
// cfg.Size bytes in batches of 10 from cfg.Producers goroutines, over
// cfg.Groups groups when FIFO. It returns the queue's URL, "" when it
// could not be created.
func (r *runner) fillResident(ctx context.Context, name string, attrs map[string]string) (string, *ResidentStats) {
	cfg := r.cfg
	base, fifo := strings.CutSuffix(name, ".fifo")
	st := &ResidentStats{Queue: base + "-resident"}
	if fifo {
		st.Queue += ".fifo"
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	out, err := r.client.CreateQueue(cctx, &sqs.CreateQueueInput{QueueName: aws.String(st.Queue), Attributes: attrs})
	cancel()
	if err != nil {
		st.Error = fmt.Sprintf("creating queue %s: %v", st.Queue, err)
		return "", st
	}
	url := aws.ToString(out.QueueUrl)
	fmt.Fprintf(r.log, "bench: filling %s with %d messages\n", url, cfg.Resident)

	body := strings.Repeat("r", cfg.Size)
	var next, sent atomic.Int64
	var firstErr sync.Once
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	var wg sync.WaitGroup
	for p := range cfg.Producers {
		wg.Go(func() {
			entries := make([]types.SendMessageBatchRequestEntry, 0, batchSize)
			for fctx.Err() == nil {
				first := next.Add(batchSize) - batchSize
				if first >= int64(cfg.Resident) {
					return
				}
				entries = entries[:0]
				for i := first; i < min(first+batchSize, int64(cfg.Resident)); i++ {
					e := types.SendMessageBatchRequestEntry{Id: aws.String("m" + strconv.FormatInt(i-first, 10)), MessageBody: aws.String(body)}
					if fifo {
						e.MessageGroupId = aws.String("r" + strconv.FormatInt(i%int64(cfg.Groups), 10))
						e.MessageDeduplicationId = aws.String(r.id + "-r" + strconv.FormatInt(i, 10))
					}
					entries = append(entries, e)
				}
				rctx, cancel := context.WithTimeout(fctx, requestTimeout)
				out, err := r.client.SendMessageBatch(rctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
				cancel()
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("entry %s: %s: %s", aws.ToString(out.Failed[0].Id), aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
				}
				if out != nil {
					sent.Add(int64(len(out.Successful)))
				}
				if err != nil {
					firstErr.Do(func() { st.Error = fmt.Sprintf("producer %d: %v", p, err) })
					stop()
					return
				}
			}
		})
	}
	wg.Wait()
	st.Messages = sent.Load()
	st.FillSec = time.Since(start).Seconds()
	if st.FillSec > 0 {
		st.SentPerSec = float64(st.Messages) / st.FillSec
	}
	fmt.Fprintf(r.log, "bench: %d resident messages in %.1f s (%.0f/s)\n", st.Messages, st.FillSec, st.SentPerSec)
	return url, st
}
