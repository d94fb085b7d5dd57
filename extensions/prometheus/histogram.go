package prometheus

import (
	"fmt"
	"time"

	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus"
)

// waitHistogram converts the core's wait histogram to a Prometheus one.
// The core counts per bucket, each bucket's bound inclusive, with one
// overflow bucket above the last bound; Prometheus wants cumulative counts
// per inclusive upper bound ("le") in seconds, the overflow appearing only
// in the +Inf bucket, which is the total count.
func waitHistogram(desc *prometheus.Desc, h stats.Histogram, sum time.Duration) prometheus.Metric {
	if len(h.Bounds) == 0 && len(h.Counts) == 0 {
		// A stats source without a histogram: no waits recorded.
		return constHistogram(desc, 0, sum, nil)
	}
	if len(h.Counts) != len(h.Bounds)+1 {
		return prometheus.NewInvalidMetric(desc, fmt.Errorf(
			"%w: wait histogram has %d bounds and %d counts, want one count more than bounds",
			ErrInvalidStats, len(h.Bounds), len(h.Counts)))
	}
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cumulative uint64
	for i, bound := range h.Bounds {
		le := bound.Seconds()
		// Two bounds that are equal in seconds would share a map key and
		// lose a bucket.
		if i > 0 && le <= h.Bounds[i-1].Seconds() {
			return prometheus.NewInvalidMetric(desc, fmt.Errorf(
				"%w: wait histogram bounds not ascending at %v after %v", ErrInvalidStats, bound, h.Bounds[i-1]))
		}
		cumulative += h.Counts[i]
		buckets[le] = cumulative
	}
	cumulative += h.Counts[len(h.Bounds)] // the overflow bucket
	return constHistogram(desc, cumulative, sum, buckets)
}

func constHistogram(desc *prometheus.Desc, count uint64, sum time.Duration, buckets map[float64]uint64) prometheus.Metric {
	m, err := prometheus.NewConstHistogram(desc, count, sum.Seconds(), buckets)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}
