package bench

import (
	"math"
	"testing"
	"time"
)

func TestParseStatReadsOwnAndReapedTime(t *testing.T) {
	// A real line's shape: the command name may hold spaces and parentheses.
	line := "4242 (postgres: a (b)) S 4200 4200 4200 0 -1 4194560 1021 0 0 0 150 25 300 70 20 0 1 0 7050 228470784 3340 18446744073709551615 1 1 0 0 0 0 0 16781312 1 0 0 0 17 1 0 0 0 0 0\n"
	p, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procTime{comm: "postgres: a (b)", ppid: 4200, cpu: 1750 * time.Millisecond, reaped: 3700 * time.Millisecond}
	if p != want {
		t.Fatalf("parseStat = %+v, want %+v", p, want)
	}
	if _, err := parseStat([]byte("1 (x) S 0 0")); err == nil {
		t.Fatal("a short line parsed")
	}
}

// A child that starts and ends between two snapshots is never seen, but
// its parent's reaped time holds it: the window counts it under the
// parent. A child that ended in the window counts only what it used in
// the window.
func TestCPUBetweenCountsChildrenThatEnded(t *testing.T) {
	ms := time.Millisecond
	at := time.Unix(1000, 0)
	a := cpuSnap{at: at, procs: map[int]procTime{
		100: {comm: "sup", ppid: 1, cpu: 500 * ms, reaped: 1000 * ms},
		101: {comm: "job", ppid: 100, cpu: 30 * ms}, // ends in the window, having used 50 ms in all
		102: {comm: "job", ppid: 100, cpu: 10 * ms}, // lives on
	}}
	b := cpuSnap{at: at.Add(time.Second), procs: map[int]procTime{
		// sup: 20 ms of its own; reaped 101 (50 ms) and 103 (40 ms,
		// started and ended in the window).
		100: {comm: "sup", ppid: 1, cpu: 520 * ms, reaped: 1090 * ms},
		102: {comm: "job", ppid: 100, cpu: 70 * ms},
	}}
	got := map[string]float64{}
	for _, p := range cpuBetween(a, b, "sup", "job").Others {
		got[p.Name] = p.Cores
	}
	// sup: 20 ms own + 20 ms of 101's in the window + 40 ms of 103.
	for name, want := range map[string]float64{"sup": 0.080, "job": 0.060} {
		if math.Abs(got[name]-want) > 1e-9 {
			t.Errorf("%s: %.3f cores, want %.3f (all: %v)", name, got[name], want, got)
		}
	}
}
