// Package histogram counts durations in fixed buckets with atomic
// counters, so recording takes no lock and reading needs no cooperation
// from writers.
package histogram

import (
	"sync/atomic"
	"time"
)

// Bounds are the buckets' inclusive upper bounds: a 1-2-5 series from
// 1 µs to 10 s, fine enough for hand-off latencies and long waits alike.
// A duration above the last bound falls in an overflow bucket.
var Bounds = func() []time.Duration {
	var b []time.Duration
	for decade := time.Microsecond; decade <= time.Second; decade *= 10 {
		b = append(b, decade, 2*decade, 5*decade)
	}
	return append(b, 10*time.Second)
}()

// Histogram counts durations into Bounds. The zero value is ready to use.
type Histogram struct {
	counts [23]atomic.Uint64 // len(Bounds) + 1 overflow (checked by a test)
	sum    atomic.Int64      // nanoseconds
}

// Record counts one duration.
func (h *Histogram) Record(d time.Duration) {
	i := 0
	for i < len(Bounds) && d > Bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Snapshot returns the count of each bucket (the last one is the
// overflow) and the sum of all recorded durations. Concurrent Records may
// be partly included.
func (h *Histogram) Snapshot() (counts []uint64, sum time.Duration) {
	counts = make([]uint64, len(h.counts))
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
	}
	return counts, time.Duration(h.sum.Load())
}
