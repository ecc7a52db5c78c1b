package bench

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/memstore"
)

// newServer is an in-process sluice over memstore.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	store := memstore.New()
	svc := service.New(service.Config{Store: store, Logger: logger})
	srv := httptest.NewServer(httpapi.NewHandler(svc, httpapi.Options{Logger: logger}))
	t.Cleanup(func() {
		svc.Shutdown()
		srv.Close()
		_ = store.Close()
	})
	return srv
}

// TestRun drives each mode for a short while and checks what the generator
// reports about correctness (not speed).
func TestRun(t *testing.T) {
	srv := newServer(t)
	for _, tc := range []struct {
		name                  string
		fifo, batch, longPoll bool
		rate                  float64
	}{
		{name: "standard"},
		{name: "standard-batch", batch: true},
		{name: "fifo", fifo: true},
		{name: "fifo-batch", fifo: true, batch: true},
		{name: "fifo-longpoll-rate", fifo: true, longPoll: true, rate: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := Run(ctx, Config{
				Endpoint: srv.URL, Producers: 4, Consumers: 4, Groups: 8, Size: 256,
				FIFO: tc.fifo, Batch: tc.batch, LongPoll: tc.longPoll, Rate: tc.rate,
				Warmup: 300 * time.Millisecond, Duration: 1500 * time.Millisecond, Drain: 10 * time.Second,
				QueuePrefix: "t-" + tc.name, Label: tc.name, Log: &log,
			})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			WriteText(&out, res)
			t.Log("\n" + out.String())
			c := res.Checks
			if res.Errors != 0 {
				t.Errorf("errors %d: %v", res.Errors, res.ErrorSamples)
			}
			if c.Sent == 0 || c.Received != c.Sent || c.Missing != 0 || !c.Drained {
				t.Errorf("sent %d, received %d, missing %d, drained %v", c.Sent, c.Received, c.Missing, c.Drained)
			}
			if c.OrderViolations != 0 || c.Foreign != 0 || c.Duplicates != 0 {
				t.Errorf("order violations %d (%v), foreign %d, duplicates %d", c.OrderViolations, c.OrderExamples, c.Foreign, c.Duplicates)
			}
			if res.Lifecycles == 0 || res.Send.Count == 0 || res.Receive.Count == 0 || res.Delete.Count == 0 || res.Pickup.Count == 0 {
				t.Errorf("nothing measured: %+v", res)
			}
			if !res.OK() || res.QueueKept != "" {
				t.Errorf("OK %v, queue kept: %q", res.OK(), res.QueueKept)
			}
			if tc.rate > 0 {
				if max := tc.rate * 1.3; res.SentPerSec > max {
					t.Errorf("sent %.1f/s, want at most %.1f/s at rate %.0f", res.SentPerSec, max, tc.rate)
				}
			}
		})
	}
}

func TestQueuesCleanedUp(t *testing.T) {
	srv := newServer(t)
	ctx := context.Background()
	if _, err := Run(ctx, Config{Endpoint: srv.URL, Producers: 1, Consumers: 1, Duration: 200 * time.Millisecond, FIFO: true}); err != nil {
		t.Fatal(err)
	}
	out, err := NewClient(srv.URL, nil).ListQueues(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.QueueUrls) != 0 {
		t.Errorf("queues left: %v", out.QueueUrls)
	}
}

// The order check itself: a violation is seen when a group's messages come
// back out of order, a redelivery of the last one is not.
func TestOrderBook(t *testing.T) {
	o := newOrderBook()
	for _, s := range []int64{0, 1, 1, 2, 4} { // a gap (a failed send) is fine
		o.see(3, 0, s)
	}
	o.see(5, 1, 0) // another group
	if o.violations != 0 {
		t.Fatalf("violations %d: %v", o.violations, o.examples)
	}
	o.see(3, 0, 3)
	if o.violations != 1 || !strings.Contains(o.examples[0], "#3 after #4") {
		t.Fatalf("violations %d: %v", o.violations, o.examples)
	}
}

func TestBody(t *testing.T) {
	h := bodyHeader{producer: 7, seq: 123456, group: 63, gseq: 999, start: 1234567890123}
	for _, size := range []int{1, 40, 1024} {
		b := h.encode(size)
		if size > 40 && len(b) != size {
			t.Errorf("size %d: body of %d bytes", size, len(b))
		}
		got, err := parseBody(b)
		if err != nil || got != h {
			t.Errorf("size %d: parse = %+v, %v; want %+v", size, got, err, h)
		}
	}
	if _, err := parseBody("hello"); err == nil {
		t.Error("parsed a foreign body")
	}
}

func TestHist(t *testing.T) {
	var h hist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	s := h.summary()
	if s.Count != 1000 || s.MaxMs != 1000 {
		t.Fatalf("%+v", s)
	}
	for _, c := range []struct{ got, want float64 }{{s.P50Ms, 500}, {s.P99Ms, 990}} {
		if c.got < c.want*0.98 || c.got > c.want*1.02 {
			t.Errorf("quantile %.2f, want about %.0f", c.got, c.want)
		}
	}
	for v := int64(0); v < 1<<20; v += 37 {
		i := histIndex(v)
		if lo := histValue(i); v >= 2*histSub && (float64(lo) < float64(v)*0.98 || float64(lo) > float64(v)*1.02) {
			t.Fatalf("value %d: bucket %d middle %d", v, i, lo)
		}
	}
}

func TestTable(t *testing.T) {
	rs := []*Result{
		{Label: "pg-fifo", Store: "postgres", FIFO: true, LifecyclesPerSec: 500, Ceiling: &CeilingResult{TxPerSec: 2000, Conns: 16}},
		{Label: "emb-std", Store: "embedded", LifecyclesPerSec: 900, Errors: 1, ErrorSamples: []string{"SendMessage: boom"}},
	}
	var b bytes.Buffer
	WriteTable(&b, rs)
	out := b.String()
	for _, want := range []string{"pg-fifo", "0.250", "emb-std (FAILED)", "FIFO unbatched", "Standard unbatched", "2000.0 tx/s", "boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
