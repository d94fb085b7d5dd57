package loadtest

import (
	"math"
	"testing"
	"time"
)

func TestHistogramBucketsTileTheRangeWithoutGaps(t *testing.T) {
	next := int64(0)
	for i := 0; i < numBuckets; i++ {
		lo, w := bucketRange(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		if got := bucketOf(lo); got != i {
			t.Fatalf("bucketOf(%d) = %d, want %d", lo, got, i)
		}
		if got := bucketOf(lo + w - 1); got != i {
			t.Fatalf("bucketOf(%d) = %d, want %d", lo+w-1, got, i)
		}
		if lo >= subCount && float64(w)/float64(lo) > 1.0/halfSub {
			t.Fatalf("bucket %d is %d wide at %d: coarser than 1/%d", i, w, lo, halfSub)
		}
		next = lo + w
	}
	if bucketOf(math.MaxInt64) != numBuckets-1 {
		t.Fatal("values past the range do not go to the last bucket")
	}
}

func TestHistogramPercentilesAreWithinHalfABucketOfExact(t *testing.T) {
	var h Histogram
	// 1 µs .. 100 ms in 10,000 steps: spans five orders of magnitude.
	const n = 10000
	for i := 1; i <= n; i++ {
		h.Record(time.Duration(i) * 10 * time.Microsecond)
	}
	d := h.Snapshot()
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := float64(math.Ceil(q*n)) * 10e3
		got := float64(d.Quantile(q))
		if rel := math.Abs(got-exact) / exact; rel > 0.5/halfSub {
			t.Errorf("p%g = %v, exact %v: off by %.3f%%", q*100, time.Duration(got), time.Duration(exact), rel*100)
		}
	}
	if d.Count() != n || d.Min() != 10*time.Microsecond || d.Max() != 100*time.Millisecond {
		t.Fatalf("count %d, min %v, max %v", d.Count(), d.Min(), d.Max())
	}
	if want := time.Duration((n + 1) * 10e3 / 2); d.Mean() != want {
		t.Fatalf("mean %v, want %v", d.Mean(), want)
	}
}

func TestHistogramCountsNegativeDurationsAsZero(t *testing.T) {
	var h Histogram
	h.Record(-time.Second)
	d := h.Snapshot()
	if d.Count() != 1 || d.Min() != 0 || d.Max() != 0 || d.Quantile(1) != 0 {
		t.Fatalf("count %d, min %v, max %v", d.Count(), d.Min(), d.Max())
	}
}

func TestEmptyHistogramReadsZero(t *testing.T) {
	var h Histogram
	d := h.Snapshot()
	if d.Count() != 0 || d.Mean() != 0 || d.Quantile(0.99) != 0 || d.LogBins(10) != nil {
		t.Fatal("an empty histogram reads non-zero")
	}
}

func TestLogBinsKeepEveryCount(t *testing.T) {
	var h Histogram
	for _, v := range []time.Duration{300, time.Microsecond, 5 * time.Millisecond, 400 * time.Millisecond, 401 * time.Millisecond} {
		h.Record(v)
	}
	var total uint64
	bins := h.Snapshot().LogBins(10)
	for i, b := range bins {
		total += b.Count
		if b.Hi <= b.Lo || (i > 0 && b.Lo < bins[i-1].Lo) {
			t.Fatalf("bin %d is [%v, %v)", i, b.Lo, b.Hi)
		}
	}
	if total != 5 {
		t.Fatalf("bins hold %d values, want 5", total)
	}
}

func TestCountAboveCountsOnlyLargerBuckets(t *testing.T) {
	var h Histogram
	h.Record(500 * time.Microsecond)
	h.Record(2 * time.Millisecond)
	h.Record(3 * time.Millisecond)
	if got := h.Snapshot().CountAbove(time.Millisecond); got != 2 {
		t.Fatalf("CountAbove(1ms) = %d, want 2", got)
	}
}
