package loadtest

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The histogram is log-linear, the layout of HdrHistogram: values below
// subCount nanoseconds each have their own bucket, and every power of two
// above that is split into subCount/2 equal buckets. A bucket is then never
// wider than 1/(subCount/2) of its lower bound, so any percentile read from
// it is within 0.8% of the true value, whatever the magnitude: 3 µs and
// 300 ms are both measured to three significant digits. A fixed layout
// also lets every worker record into one shared array with a single
// atomic add, and lets two histograms be merged by adding counts.
const (
	subBits  = 8
	subCount = 1 << subBits // 256
	halfSub  = subCount / 2
	// maxBits bounds the recordable value: 2^40 ns is about 18 minutes,
	// longer than any request a load test should see. Larger values are
	// clamped into the last bucket (and max still records them exactly).
	maxBits    = 40
	numBuckets = (maxBits-subBits+1)*halfSub + halfSub
)

// Histogram records durations. It is safe for concurrent use; recording is
// lock-free. The zero value is ready to use.
type Histogram struct {
	counts [numBuckets]atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Int64 // ns; overflows only after ~292 years of latency
	max    atomic.Int64
	min    atomic.Int64 // stored as value+1 so that the zero value means "none"
}

// bucketOf maps a value to its bucket index.
func bucketOf(v int64) int {
	if v < subCount {
		return int(v)
	}
	if v >= 1<<maxBits {
		return numBuckets - 1
	}
	// shift keeps the top subBits bits of v: v>>shift is in [halfSub,
	// subCount), and each power of two above subCount adds halfSub buckets.
	shift := bits.Len64(uint64(v)) - subBits
	return (shift+1)*halfSub + int(v>>shift) - halfSub
}

// bucketRange returns the smallest value of bucket i and its width.
func bucketRange(i int) (lo, width int64) {
	if i < subCount {
		return int64(i), 1
	}
	shift := i/halfSub - 1
	m := int64(i - shift*halfSub)
	return m << shift, 1 << shift
}

// Record counts one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
	// Loads first: the common case changes neither extreme and then
	// writes nothing shared.
	for cur := h.max.Load(); v > cur; cur = h.max.Load() {
		if h.max.CompareAndSwap(cur, v) {
			break
		}
	}
	for cur := h.min.Load(); cur == 0 || v+1 < cur; cur = h.min.Load() {
		if h.min.CompareAndSwap(cur, v+1) {
			break
		}
	}
}

// Snapshot copies the histogram. Records that run concurrently may be
// partly included; take it once recording has stopped for exact figures.
func (h *Histogram) Snapshot() *Distribution {
	d := &Distribution{counts: make([]uint64, numBuckets)}
	for i := range h.counts {
		c := h.counts[i].Load()
		d.counts[i] = c
		d.total += c
	}
	d.sum = h.sum.Load()
	d.max = h.max.Load()
	if m := h.min.Load(); m > 0 {
		d.min = m - 1
	}
	return d
}

// Distribution is a snapshot of a Histogram, for reading percentiles.
type Distribution struct {
	counts        []uint64
	total         uint64
	sum, min, max int64
}

// Count is the number of recorded values.
func (d *Distribution) Count() uint64 { return d.total }

// Mean is the exact mean of the recorded values (0 when empty).
func (d *Distribution) Mean() time.Duration {
	if d.total == 0 {
		return 0
	}
	return time.Duration(d.sum / int64(d.total))
}

// Max and Min are exact.
func (d *Distribution) Max() time.Duration { return time.Duration(d.max) }
func (d *Distribution) Min() time.Duration { return time.Duration(d.min) }

// Quantile returns the value below or at which a fraction q of the
// recorded values lie: the middle of the bucket holding that rank, kept
// within the exact minimum and maximum.
func (d *Distribution) Quantile(q float64) time.Duration {
	if d.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(d.total)))
	rank = min(max(rank, 1), d.total)
	var seen uint64
	for i, c := range d.counts {
		seen += c
		if seen >= rank {
			lo, w := bucketRange(i)
			v := lo + w/2
			return time.Duration(min(max(v, d.min), d.max))
		}
	}
	return time.Duration(d.max)
}

// CountAbove counts the values in buckets that lie wholly above d.
func (d *Distribution) CountAbove(limit time.Duration) uint64 {
	var n uint64
	for i := bucketOf(int64(limit)) + 1; i < len(d.counts); i++ {
		n += d.counts[i]
	}
	return n
}

// Bin is one bar of a coarsened distribution: the values in [Lo, Hi).
type Bin struct {
	Lo, Hi time.Duration
	Count  uint64
}

// LogBins regroups the counts into bins of equal width on a log scale,
// perDecade to a factor of ten, from the minimum to the maximum, for
// charts. Empty leading and trailing bins are left out.
func (d *Distribution) LogBins(perDecade int) []Bin {
	if d.total == 0 {
		return nil
	}
	lo := math.Max(1, float64(d.min))
	step := math.Pow(10, 1/float64(perDecade))
	var bins []Bin
	for edge := lo; edge <= float64(d.max); edge *= step {
		bins = append(bins, Bin{Lo: time.Duration(edge), Hi: time.Duration(edge * step)})
	}
	if len(bins) == 0 {
		bins = append(bins, Bin{Lo: time.Duration(lo), Hi: time.Duration(lo * step)})
	}
	// Each histogram bucket goes, whole, to the bin holding its middle;
	// buckets are far narrower than bins, so the smearing is invisible.
	j := 0
	for i, c := range d.counts {
		if c == 0 {
			continue
		}
		l, w := bucketRange(i)
		mid := time.Duration(l + w/2)
		for j < len(bins)-1 && mid >= bins[j].Hi {
			j++
		}
		bins[j].Count += c
	}
	return bins
}
