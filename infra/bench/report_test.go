package bench

import (
	"bytes"
	"strings"
	"testing"
)

// The pace line's median of an even number of parts is the mean of the two
// middle ones (make bench-soak: 30 parts of 10 s).
func TestPaceMedianOfEvenParts(t *testing.T) {
	r := &Result{WindowSec: 40, Intervals: []Interval{
		{StartSec: 0, LifecyclesPerSec: 400}, {StartSec: 10, LifecyclesPerSec: 100},
		{StartSec: 20, LifecyclesPerSec: 300}, {StartSec: 30, LifecyclesPerSec: 200},
	}}
	var b bytes.Buffer
	WriteText(&b, r)
	if want := "slowest 100, median 250, fastest 400"; !strings.Contains(b.String(), want) {
		t.Errorf("pace line lacks %q:\n%s", want, b.String())
	}
}
