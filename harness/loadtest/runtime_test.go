package loadtest

import (
	"math"
	"runtime/metrics"
	"testing"
	"time"
)

func TestStallsCountTicksLateByMoreThanATick(t *testing.T) {
	var rt RuntimeReport
	samples := []Sample{{T: 0}, {T: 0.1}, {T: 0.2}, {T: 0.7}, {T: 0.8}, {T: 0.95}}
	rt.stalls(samples, 100*time.Millisecond)
	if rt.Stalls != 1 || math.Abs(float64(rt.StallNs)-4e8) > 1e3 || math.Abs(float64(rt.LongestGapNs)-5e8) > 1e3 {
		t.Fatalf("stalls %d, %v in all, longest %v", rt.Stalls, time.Duration(rt.StallNs), time.Duration(rt.LongestGapNs))
	}
}

func TestRuntimeHistogramDeltaReadsUpperBounds(t *testing.T) {
	buckets := []float64{math.Inf(-1), 1e-6, 1e-3, 1, math.Inf(1)}
	before := &metrics.Float64Histogram{Counts: []uint64{0, 5, 0, 0}, Buckets: buckets}
	after := &metrics.Float64Histogram{Counts: []uint64{0, 105, 1, 0}, Buckets: buckets}
	s := histDelta(before, after)
	// 100 values in [1µs, 1ms), 1 in [1ms, 1s).
	if s.Count != 101 || s.P50 != int64(time.Millisecond) || s.Max != int64(time.Second) {
		t.Fatalf("%+v", s)
	}
	if histDelta(nil, after).Count != 0 {
		t.Fatal("a missing reading is not empty")
	}
}
