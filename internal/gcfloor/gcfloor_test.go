package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 32 << 20, 100},        // no collection yet
		{4 << 20, 32 << 20, 700},  // the next collection at 32 MiB
		{16 << 20, 32 << 20, 100}, // half the floor: the default
		{64 << 20, 32 << 20, 100}, // above it
		{1, 32 << 20, maxPercent}, // bounded
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.floor, got, c.want)
		}
	}
}

// cycles is the number of collections so far.
func cycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// churn allocates n bytes of garbage in 64 KiB pieces while keeping a
// little live.
func churn(n int) {
	var keep [][]byte
	for i := 0; i < n/(64<<10); i++ {
		b := make([]byte, 64<<10)
		b[0] = byte(i)
		if i%64 == 0 {
			keep = append(keep, b[:16:16])
		}
	}
	runtime.KeepAlive(keep)
}

// With a floor of 64 MiB and a small live heap, 512 MiB of garbage is
// collected a few times, not the hundred-odd times GOGC=100 takes; with a
// live heap above half the floor, GOGC is back at 100.
func TestFloorSpacesCollections(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Fatal("run without GOGC and GOMEMLIMIT: the floor defers to them")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	runtime.GC()
	before := cycles()
	churn(512 << 20)
	def := cycles() - before

	if !Start(64 << 20) {
		t.Fatal("Start did nothing")
	}
	defer Start(0) // back to the default pacing for the rest of the process
	runtime.GC()   // a collection that tunes
	before = cycles()
	churn(512 << 20)
	floored := cycles() - before
	t.Logf("512 MiB of garbage: %d collections by default, %d with a 64 MiB floor", def, floored)
	if floored*4 > def {
		t.Errorf("%d collections with the floor against %d without: not spaced out", floored, def)
	}

	live := make([][]byte, 0, 48)
	for range 48 { // 48 MiB live, over half the floor
		live = append(live, make([]byte, 1<<20))
	}
	// tune runs in a cleanup after a collection. On a loaded machine the
	// cleanup of the churn's last collection can run late, during the next
	// one, and arm a sentinel that this collection then keeps (allocated
	// while it marks): collect again until one runs tune.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GC(); gogc() != 100 && time.Now().Before(deadline); runtime.GC() {
		time.Sleep(10 * time.Millisecond)
	}
	if p := gogc(); p != 100 {
		t.Errorf("GOGC %d with 48 MiB live and a 64 MiB floor, want 100", p)
	}
	runtime.KeepAlive(live)
}

func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
