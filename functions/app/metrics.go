package app

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/functions/httpapi"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/wake"
)

// Every series is named sluice_*, on a registry of the App's own (several
// Apps in one process, as in tests, do not collide), beside the Go runtime's
// and the process's usual go_* and process_* series.

// latencyBuckets span a memory-store call (well under a millisecond) to a
// 20-second long poll.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30}

type metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	longPolls       *prometheus.CounterVec
	longPollWait    prometheus.Histogram
	longPollWakeups *prometheus.CounterVec
	storeDuration   *prometheus.HistogramVec
	storeErrors     *prometheus.CounterVec
	storeBilled     *prometheus.CounterVec
	storeRetries    *prometheus.CounterVec

	// storeObs caches storeDuration's series by operation: a store call
	// then costs one map read instead of the vector's hash and lock.
	storeObs sync.Map // operation → prometheus.Observer
}

func (m *metrics) storeLatency(op string) prometheus.Observer {
	if o, ok := m.storeObs.Load(op); ok {
		return o.(prometheus.Observer)
	}
	o := m.storeDuration.WithLabelValues(op)
	m.storeObs.Store(op, o)
	return o
}

func newMetrics(b Build) *metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_requests_total",
			Help: "SQS requests answered, by action (empty: unknown) and error code (empty: success).",
		}, []string{"action", "error_code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_request_duration_seconds",
			Help:    "Time to answer an SQS request, by action (long polls included).",
			Buckets: latencyBuckets,
		}, []string{"action"}),
		longPolls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_long_polls_total",
			Help: "Receives that waited (found nothing at first and had time left), by how they ended: answered with messages, answered empty, cancelled or shutdown.",
		}, []string{"result"}),
		longPollWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_long_poll_wait_seconds",
			Help:    "How long receives that waited waited.",
			Buckets: latencyBuckets,
		}),
		longPollWakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_long_poll_wakeups_total",
			Help: "Waits of long polls that ended before the poll did, by cause: wakeup (a send, a release, ...), handoff (a send that claimed for the poll in its own store call) or check (a known visibility change, or the periodic store check).",
		}, []string{"cause"}),
		storeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_store_operation_duration_seconds",
			Help:    "Time of each store operation, by operation.",
			Buckets: latencyBuckets,
		}, []string{"operation"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_store_errors_total",
			Help: "Store operations that failed (not counting answers such as queue not found, nor cancelled calls), by operation.",
		}, []string{"operation"}),
		storeBilled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_store_billed_operations_total",
			Help: "Operations the store's backend bills or sizes by (Firestore: document reads, writes and deletes; Spanner: rows read as read, mutations as write, read-write and read-only transactions as rw_txn and ro_txn, and the bytes committed writes stored, rows and index entries, as bytes), by store operation and kind (read, write, delete, rw_txn, ro_txn, bytes). Only stores whose backend counts them.",
		}, []string{"operation", "kind"}),
		storeRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_store_transaction_retries_total",
			Help: "Transaction attempts that conflicted with another and ran again, by store operation. Only stores that bill per operation report it.",
		}, []string{"operation"}),
	}
	f(m.requests)
	f(m.requestDuration)
	f(m.longPolls)
	f(m.longPollWait)
	f(m.longPollWakeups)
	f(m.storeDuration)
	f(m.storeErrors)
	f(m.storeBilled)
	f(m.storeRetries)
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bi := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "sluice_build_info",
		Help:        "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	bi.Set(1)
	f(bi)
	return m
}

// observeRequest is the handler's Observe.
func (m *metrics) observeRequest(ri *httpapi.RequestInfo) {
	m.requests.WithLabelValues(ri.Action, ri.ErrorCode).Inc()
	m.requestDuration.WithLabelValues(ri.Action).Observe(ri.Duration.Seconds())
}

// observeLongPoll is the service's OnLongPoll.
func (m *metrics) observeLongPoll(lp service.LongPoll) {
	result := lp.Ended
	if result == service.LongPollAnswered {
		result = "empty"
		if lp.Messages > 0 {
			result = "messages"
		}
	}
	m.longPolls.WithLabelValues(result).Inc()
	m.longPollWait.Observe(lp.Waited.Seconds())
	m.longPollWakeups.WithLabelValues("wakeup").Add(float64(lp.Wakeups))
	m.longPollWakeups.WithLabelValues("check").Add(float64(lp.Checks))
	m.longPollWakeups.WithLabelValues("handoff").Add(float64(lp.HandOffs))
}

// watch registers the series read at scrape time from the service, the
// store when it counts its commits (stores.CommitCounter), the hub and,
// when it bills (stores.Biller), the hub's transport.
func (m *metrics) watch(svc *service.Service, store stores.Store, hub *wake.Hub, transport wake.Transport, depth *depthCollector) {
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_long_polls_waiting",
		Help: "Receives waiting now.",
	}, func() float64 { return float64(svc.LongPollsWaiting()) }))
	for _, e := range []struct {
		event string
		n     func(service.MessageCounts) uint64
	}{
		{"sent", func(c service.MessageCounts) uint64 { return c.Sent }},
		{"received", func(c service.MessageCounts) uint64 { return c.Received }},
		{"deleted", func(c service.MessageCounts) uint64 { return c.Deleted }},
	} {
		f(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "sluice_messages_total",
			Help:        "Messages this instance sent, returned from receives and deleted (batch entries each), by event.",
			ConstLabels: prometheus.Labels{"event": e.event},
		}, func() float64 { return float64(e.n(svc.MessageCounts())) }))
	}
	if c, ok := store.(stores.CommitCounter); ok {
		f(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sluice_store_commits_total",
			Help: "Durable commits the store made to its own files (embedded: bbolt transactions, each fsynced), shared by the operations in them.",
		}, func() float64 { return float64(c.Commits()) }))
	}
	hubCounter := func(name, help string, v func(wake.HubStats) uint64) {
		f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(hub.Stats())) }))
	}
	hubCounter("sluice_wake_events_published_total", "Wake-up events this instance published (sends, releases, ...).",
		func(s wake.HubStats) uint64 { return s.Published })
	hubCounter("sluice_wake_events_received_total", "Wake-up events received from other instances through the transport.",
		func(s wake.HubStats) uint64 { return s.Received })
	hubCounter("sluice_wake_waiters_woken_total", "Waiting long polls that wake-up events reached.",
		func(s wake.HubStats) uint64 { return s.Woken })
	hubCounter("sluice_wake_publish_failures_total", "Publishes to the wake-up transport that failed.",
		func(s wake.HubStats) uint64 { return s.PublishFailures })
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_wake_transport_degraded",
		Help: "1 while the wake-up transport may be missing other instances' events (long polls then check the store more often).",
	}, func() float64 {
		if hub.Degraded() {
			return 1
		}
		return 0
	}))
	if b, ok := transport.(stores.Biller); ok {
		billed := func(name, help string, v func(stores.BilledOps) int64) {
			f(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
				func() float64 { return float64(v(b.BilledOps())) }))
		}
		billed("sluice_wake_billed_reads_total", "Reads the wake-up transport was billed (Firestore: document reads; Pub/Sub: pull responses).",
			func(o stores.BilledOps) int64 { return o.Reads })
		billed("sluice_wake_billed_writes_total", "Writes the wake-up transport was billed (Firestore: document writes; Pub/Sub: publish requests).",
			func(o stores.BilledOps) int64 { return o.Writes })
		billed("sluice_wake_billed_bytes_total", "Bytes the wake-up transport was billed (Pub/Sub: publish and pull throughput, at least 1,000 a request).",
			func(o stores.BilledOps) int64 { return o.Bytes })
	}
	if depth != nil {
		f(depth)
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// depthCollector reports queue depths at scrape time: at most max queues,
// read at most once per ttl however often it is scraped, so that a scrape
// costs the store a bounded amount.
type depthCollector struct {
	svc     *service.Service
	max     int
	ttl     time.Duration
	timeout time.Duration

	mu      sync.Mutex
	at      time.Time
	depths  []service.QueueDepth
	more    bool
	failing bool

	messages, truncated, failed *prometheus.Desc
}

func newDepthCollector(svc *service.Service, max int, ttl time.Duration) *depthCollector {
	return &depthCollector{
		svc: svc, max: max, ttl: ttl, timeout: 5 * time.Second,
		messages: prometheus.NewDesc("sluice_queue_messages",
			"Approximate messages per queue by state (visible, in_flight, delayed), as GetQueueAttributes counts them; sampled, see sluice_queue_depth_truncated.",
			[]string{"account_id", "region", "queue", "state"}, nil),
		truncated: prometheus.NewDesc("sluice_queue_depth_truncated",
			"1 when there are more queues than the depth sample covers (--metrics-max-queues).", nil, nil),
		failed: prometheus.NewDesc("sluice_queue_depth_failed",
			"1 when the last reading of the queue depths failed (the previous one is reported).", nil, nil),
	}
}

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.messages
	ch <- c.truncated
	ch <- c.failed
}

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || time.Since(c.at) >= c.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		depths, more, err := c.svc.QueueDepths(ctx, c.max)
		cancel()
		c.at, c.failing = time.Now(), err != nil
		if err == nil {
			c.depths, c.more = depths, more
		}
	}
	for _, d := range c.depths {
		for _, s := range []struct {
			state string
			n     int64
		}{{"visible", d.Visible}, {"in_flight", d.InFlight}, {"delayed", d.Delayed}} {
			ch <- prometheus.MustNewConstMetric(c.messages, prometheus.GaugeValue, float64(s.n), d.AccountID, d.Region, d.Name, s.state)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.truncated, prometheus.GaugeValue, b2f(c.more))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, b2f(c.failing))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
