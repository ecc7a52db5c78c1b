package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// BilledStats are the store operations the server's backend bills
// (sluice_store_billed_operations_total, for stores that bill per
// operation: Firestore) over the measured window, by store operation and
// kind, and per lifecycle.
type BilledStats struct {
	ByOperation  map[string]map[string]int64 `json:"by_operation"`
	Total        int64                       `json:"total"`
	PerLifecycle float64                     `json:"per_lifecycle"`
	// Retries are transaction attempts that conflicted and ran again, by
	// store operation; RetriesPerClaim is MessageClaim's per call.
	Retries         map[string]int64 `json:"retries,omitempty"`
	RetriesPerClaim float64          `json:"retries_per_claim"`
	// Calls are the store operations made in the window, by operation.
	Calls map[string]int64 `json:"calls,omitempty"`
}

const (
	billedMetric   = "sluice_store_billed_operations_total"
	retriesMetric  = "sluice_store_transaction_retries_total"
	callsMetric    = "sluice_store_operation_duration_seconds"
	requestsMetric = "sluice_request_duration_seconds"
	wakeReads      = "sluice_wake_billed_reads_total"
	wakeWrites     = "sluice_wake_billed_writes_total"
	wakeBytes      = "sluice_wake_billed_bytes_total"
	commitsMetric  = "sluice_store_commits_total"
	// The Go runtime's heap allocation since the process started (the
	// Prometheus Go collector's), for the allocation per request.
	allocBytesMetric   = "go_memstats_alloc_bytes_total"
	allocObjectsMetric = "go_memstats_mallocs_total"
)

// ServerCounters are what the server's own counters say it did over the
// measured window, whatever its store: the requests it answered and how
// long they took by action (their sum over the window is the mean number
// of requests in flight, what a serverless front bills as instance time),
// the store operations it made, and what its wake-up transport was billed
// (Pub/Sub: publish and pull requests and bytes).
type ServerCounters struct {
	Requests       map[string]int64   `json:"requests"`
	RequestSeconds map[string]float64 `json:"request_seconds"`
	StoreCalls     map[string]int64   `json:"store_calls"`
	WakeReads      int64              `json:"wake_billed_reads"`
	WakeWrites     int64              `json:"wake_billed_writes"`
	WakeBytes      int64              `json:"wake_billed_bytes"`
	// WakeBilled: the transport bills per operation (the three above are
	// its counters, not absent ones).
	WakeBilled bool `json:"wake_billed"`
	// StoreCommits are the durable commits of a store that writes its own
	// files (embedded); nil for the others.
	StoreCommits *int64 `json:"store_commits,omitempty"`
	// HeapAlloc is what the server's Go runtime allocated on its heap
	// over the window, bytes and objects; nil when it exports neither.
	HeapAlloc *HeapAlloc `json:"heap_alloc,omitempty"`
}

// HeapAlloc is heap allocation over a window.
type HeapAlloc struct {
	Bytes   int64 `json:"bytes"`
	Objects int64 `json:"objects"`
}

// PerRequest divides h by the requests the server answered in the window
// (c.Requests); ok is false when it answered none.
func (c *ServerCounters) PerRequest() (bytes, objects float64, ok bool) {
	var n int64
	for _, k := range c.Requests {
		n += k
	}
	if c.HeapAlloc == nil || n <= 0 {
		return 0, 0, false
	}
	return float64(c.HeapAlloc.Bytes) / float64(n), float64(c.HeapAlloc.Objects) / float64(n), true
}

// billedScrape is what one read of /metrics says of the server and its
// store.
type billedScrape struct {
	billed  map[string]map[string]int64 // operation -> kind -> count; nil when the store does not bill
	retries map[string]int64
	calls   map[string]int64
	reqN    map[string]int64
	reqSec  map[string]float64
	wake    [3]int64 // reads, writes, bytes
	wakeOK  bool
	commits *int64     // sluice_store_commits_total; nil when the store has none
	heap    *HeapAlloc // since the process started; nil when not exported
}

// scrapeBilled reads the server's counters; its billed map is nil when
// the server exports no billed operations (its store does not bill per
// operation).
func scrapeBilled(ctx context.Context, endpoint string) (*billedScrape, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	// Signed as the bench's SQS requests are: a server that checks
	// signatures serves its metrics to a signed request.
	creds, err := benchCredentials.Retrieve(ctx)
	if err != nil {
		return nil, err
	}
	emptyHash := sha256.Sum256(nil)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(emptyHash[:]), "sqs", benchRegion, time.Now()); err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	label := func(m interface {
		GetLabel() []*dto.LabelPair
	}, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	out := &billedScrape{retries: map[string]int64{}, calls: map[string]int64{}, reqN: map[string]int64{}, reqSec: map[string]float64{}}
	if f := fams[requestsMetric]; f != nil {
		for _, m := range f.GetMetric() {
			a := label(m, "action")
			out.reqN[a] += int64(m.GetHistogram().GetSampleCount())
			out.reqSec[a] += m.GetHistogram().GetSampleSum()
		}
	}
	for i, name := range []string{wakeReads, wakeWrites, wakeBytes} {
		if f := fams[name]; f != nil && len(f.GetMetric()) > 0 {
			out.wake[i] = int64(f.GetMetric()[0].GetCounter().GetValue())
			out.wakeOK = true
		}
	}
	if f := fams[commitsMetric]; f != nil && len(f.GetMetric()) > 0 {
		n := int64(f.GetMetric()[0].GetCounter().GetValue())
		out.commits = &n
	}
	ab, ao := fams[allocBytesMetric], fams[allocObjectsMetric]
	if ab != nil && ao != nil && len(ab.GetMetric()) > 0 && len(ao.GetMetric()) > 0 {
		out.heap = &HeapAlloc{Bytes: int64(ab.GetMetric()[0].GetCounter().GetValue()), Objects: int64(ao.GetMetric()[0].GetCounter().GetValue())}
	}
	if f := fams[callsMetric]; f != nil {
		for _, m := range f.GetMetric() {
			out.calls[label(m, "operation")] = int64(m.GetHistogram().GetSampleCount())
		}
	}
	fam := fams[billedMetric]
	if fam == nil {
		return out, nil
	}
	out.billed = map[string]map[string]int64{}
	for _, m := range fam.GetMetric() {
		op, kind := label(m, "operation"), label(m, "kind")
		if out.billed[op] == nil {
			out.billed[op] = map[string]int64{}
		}
		out.billed[op][kind] = int64(m.GetCounter().GetValue())
	}
	if f := fams[retriesMetric]; f != nil {
		for _, m := range f.GetMetric() {
			out.retries[label(m, "operation")] = int64(m.GetCounter().GetValue())
		}
	}
	return out, nil
}

// countersBetween is b - a of the server's own counters.
func countersBetween(a, b *billedScrape) *ServerCounters {
	if a == nil || b == nil {
		return nil
	}
	c := &ServerCounters{Requests: map[string]int64{}, RequestSeconds: map[string]float64{}, StoreCalls: map[string]int64{}}
	for k, n := range b.reqN {
		if d := n - a.reqN[k]; d > 0 {
			c.Requests[k] = d
			c.RequestSeconds[k] = b.reqSec[k] - a.reqSec[k]
		}
	}
	for k, n := range b.calls {
		if d := n - a.calls[k]; d > 0 {
			c.StoreCalls[k] = d
		}
	}
	c.WakeBilled = b.wakeOK
	c.WakeReads, c.WakeWrites, c.WakeBytes = b.wake[0]-a.wake[0], b.wake[1]-a.wake[1], b.wake[2]-a.wake[2]
	if a.commits != nil && b.commits != nil {
		d := *b.commits - *a.commits
		c.StoreCommits = &d
	}
	if a.heap != nil && b.heap != nil {
		c.HeapAlloc = &HeapAlloc{Bytes: b.heap.Bytes - a.heap.Bytes, Objects: b.heap.Objects - a.heap.Objects}
	}
	return c
}

// notOps are the kinds that count transactions and bytes stored
// (Spanner's), not billed operations: outside Total.
var notOps = map[string]bool{"rw_txn": true, "ro_txn": true, "bytes": true}

// billedBetween is b - a, with totals per lifecycle.
func billedBetween(a, b *billedScrape, lifecycles int64) *BilledStats {
	if a == nil || b == nil || a.billed == nil || b.billed == nil {
		return nil
	}
	st := &BilledStats{ByOperation: map[string]map[string]int64{}, Retries: map[string]int64{}, Calls: map[string]int64{}}
	for op, n := range b.calls {
		if d := n - a.calls[op]; d > 0 {
			st.Calls[op] = d
		}
	}
	for op, n := range b.retries {
		if d := n - a.retries[op]; d > 0 {
			st.Retries[op] = d
		}
	}
	if claims := b.calls["MessageClaim"] - a.calls["MessageClaim"]; claims > 0 {
		st.RetriesPerClaim = float64(st.Retries["MessageClaim"]) / float64(claims)
	}
	for op, kinds := range b.billed {
		for kind, n := range kinds {
			d := n - a.billed[op][kind]
			if d == 0 {
				continue
			}
			if st.ByOperation[op] == nil {
				st.ByOperation[op] = map[string]int64{}
			}
			st.ByOperation[op][kind] = d
			if !notOps[kind] {
				st.Total += d
			}
		}
	}
	if lifecycles > 0 {
		st.PerLifecycle = float64(st.Total) / float64(lifecycles)
	}
	return st
}

// billedText is one line per store operation: its reads, writes and
// deletes per lifecycle, and per call of the operation (which differ when
// sends outpace receives, or calls carry batches).
func billedText(st *BilledStats, lifecycles int64) string {
	var ops []string
	for op := range st.ByOperation {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var b strings.Builder
	fmt.Fprintf(&b, "  billed ops  %.2f per lifecycle (%d in all); transaction retries %.3f per claim\n", st.PerLifecycle, st.Total, st.RetriesPerClaim)
	per := func(n int64) float64 {
		if lifecycles == 0 {
			return 0
		}
		return float64(n) / float64(lifecycles)
	}
	for _, op := range ops {
		k := st.ByOperation[op]
		fmt.Fprintf(&b, "    %-24s per lifecycle: reads %.2f  writes %.2f  deletes %.2f", op, per(k["read"]), per(k["write"]), per(k["delete"]))
		if k["rw_txn"]+k["ro_txn"] > 0 {
			fmt.Fprintf(&b, "  rw txns %.2f  ro txns %.2f", per(k["rw_txn"]), per(k["ro_txn"]))
		}
		if k["bytes"] > 0 {
			fmt.Fprintf(&b, "  bytes stored %.0f", per(k["bytes"]))
		}
		if c := st.Calls[op]; c > 0 {
			fmt.Fprintf(&b, "; per call (%d): reads %.2f  writes %.2f  deletes %.2f",
				c, float64(k["read"])/float64(c), float64(k["write"])/float64(c), float64(k["delete"])/float64(c))
			if k["bytes"] > 0 {
				fmt.Fprintf(&b, "  bytes stored %.0f", float64(k["bytes"])/float64(c))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
