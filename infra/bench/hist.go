package bench

import (
	"math/bits"
	"time"
)

// hist is a log-linear latency histogram: values below 64 ns are exact,
// above that every power of two is split into 64 buckets, so a quantile is
// off by at most 1/64 (1.6%). It is not safe for concurrent use: each
// worker owns its own and they are merged at the end.
type hist struct {
	counts [histBuckets]uint64
	n      uint64
	sum    int64
	max    int64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits // buckets per power of two
	histBuckets = 64 * histSub
)

func histIndex(v int64) int {
	if v < histSub {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits - 1
	return shift*histSub + int(v>>uint(shift))
}

// histValue is the middle of bucket i.
func histValue(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	shift := i/histSub - 1
	low := int64(i%histSub+histSub) << uint(shift)
	return low + (int64(1)<<uint(shift))/2
}

func (h *hist) add(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(v)]++
	h.n++
	h.sum += v
	if v > h.max {
		h.max = v
	}
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	if o.max > h.max {
		h.max = o.max
	}
}

// quantile returns the value at quantile q (0 < q <= 1), never above the
// exact maximum.
func (h *hist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histValue(i), h.max)
		}
	}
	return h.max
}

// Summary is a latency distribution in milliseconds.
type Summary struct {
	Count  uint64  `json:"count"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func (h *hist) summary() Summary {
	if h.n == 0 {
		return Summary{}
	}
	return Summary{
		Count:  h.n,
		P50Ms:  ms(h.quantile(0.50)),
		P99Ms:  ms(h.quantile(0.99)),
		MaxMs:  ms(h.max),
		MeanMs: ms(h.sum / int64(h.n)),
	}
}
