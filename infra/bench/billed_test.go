package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// scrapeBilled reads the server's request, store and wake-up counters
// from /metrics whether or not its store bills, and countersBetween is
// the difference of two reads.
func TestScrapeCounters(t *testing.T) {
	body := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	page := func(sends, sendSec, recvs, wakeBytes, allocBytes, allocs string) string {
		return `# TYPE go_memstats_alloc_bytes_total counter
go_memstats_alloc_bytes_total ` + allocBytes + `
# TYPE go_memstats_mallocs_total counter
go_memstats_mallocs_total ` + allocs + `
# TYPE sluice_request_duration_seconds histogram
sluice_request_duration_seconds_bucket{action="SendMessage",le="+Inf"} ` + sends + `
sluice_request_duration_seconds_sum{action="SendMessage"} ` + sendSec + `
sluice_request_duration_seconds_count{action="SendMessage"} ` + sends + `
sluice_request_duration_seconds_bucket{action="ReceiveMessage",le="+Inf"} ` + recvs + `
sluice_request_duration_seconds_sum{action="ReceiveMessage"} 40
sluice_request_duration_seconds_count{action="ReceiveMessage"} ` + recvs + `
# TYPE sluice_wake_billed_bytes_total counter
sluice_wake_billed_bytes_total ` + wakeBytes + `
`
	}
	ctx := context.Background()
	body = page("10", "1.5", "5", "1000", "3.5e+06", "14000")
	a, err := scrapeBilled(ctx, srv.URL)
	if err != nil || a == nil {
		t.Fatalf("scrape: %v %v", a, err)
	}
	if a.billed != nil {
		t.Errorf("billed %v from a page without billed operations", a.billed)
	}
	body = page("110", "3.5", "25", "201000", "4.34e+06", "23600")
	b, err := scrapeBilled(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := countersBetween(a, b)
	if c.Requests["SendMessage"] != 100 || c.Requests["ReceiveMessage"] != 20 {
		t.Errorf("requests %v, want 100 sends and 20 receives", c.Requests)
	}
	if got := c.RequestSeconds["SendMessage"]; got != 2 {
		t.Errorf("send seconds %v, want 2", got)
	}
	if !c.WakeBilled || c.WakeBytes != 200000 {
		t.Errorf("wake billed %v bytes %d, want 200000", c.WakeBilled, c.WakeBytes)
	}
	if c.HeapAlloc == nil || *c.HeapAlloc != (HeapAlloc{Bytes: 840000, Objects: 9600}) {
		t.Errorf("heap allocated %+v, want 840000 bytes and 9600 objects", c.HeapAlloc)
	}
	if bytes, objects, ok := c.PerRequest(); !ok || bytes != 7000 || objects != 80 {
		t.Errorf("per request %v bytes, %v objects (%v), want 7000 and 80 over 120 requests", bytes, objects, ok)
	}
	if billedBetween(a, b, 100) != nil {
		t.Error("billed stats from a store that does not bill")
	}
}

// Spanner's transactions and stored bytes are shown per lifecycle and per
// call but are not billed operations: Total leaves them out.
func TestBilledBytesOutsideTotal(t *testing.T) {
	a := &billedScrape{billed: map[string]map[string]int64{}, calls: map[string]int64{}}
	b := &billedScrape{billed: map[string]map[string]int64{
		"MessageSend": {"read": 10, "write": 340, "rw_txn": 10, "bytes": 27190},
	}, calls: map[string]int64{"MessageSend": 10}}
	st := billedBetween(a, b, 10)
	if st.Total != 350 || st.ByOperation["MessageSend"]["bytes"] != 27190 {
		t.Fatalf("Total %d, by operation %v; want 350 and the bytes kept apart", st.Total, st.ByOperation)
	}
	text := billedText(st, 10)
	if !strings.Contains(text, "bytes stored 2719; per call") || !strings.Contains(text, "bytes stored 2719\n") {
		t.Errorf("billedText = %q, want the bytes stored per lifecycle and per call", text)
	}
}
