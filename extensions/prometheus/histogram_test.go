package prometheus_test

import (
	"strings"
	"testing"
	"time"

	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWaitHistogramBecomesCumulativeInSeconds(t *testing.T) {
	st := stats.Stats{
		Waits:    10,
		WaitTime: 1500 * time.Millisecond,
		WaitHistogram: stats.Histogram{
			Bounds: []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond},
			// Per bucket, the last one above 100 ms: only +Inf holds it.
			Counts: []uint64{1, 2, 3, 4},
		},
	}
	const want = `
# HELP crs_wait_duration_seconds How long calls waited for a resource, including waits their context ended.
# TYPE crs_wait_duration_seconds histogram
crs_wait_duration_seconds_bucket{le="0.001"} 1
crs_wait_duration_seconds_bucket{le="0.01"} 3
crs_wait_duration_seconds_bucket{le="0.1"} 6
crs_wait_duration_seconds_bucket{le="+Inf"} 10
crs_wait_duration_seconds_sum 1.5
crs_wait_duration_seconds_count 10
`
	c := crsprom.NewCollector(fixedStats(st), nil)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "crs_wait_duration_seconds"); err != nil {
		t.Fatal(err)
	}
}

func TestMissingWaitHistogramIsExportedEmpty(t *testing.T) {
	const want = `
# HELP crs_wait_duration_seconds How long calls waited for a resource, including waits their context ended.
# TYPE crs_wait_duration_seconds histogram
crs_wait_duration_seconds_bucket{le="+Inf"} 0
crs_wait_duration_seconds_sum 0
crs_wait_duration_seconds_count 0
`
	c := crsprom.NewCollector(fixedStats(stats.Stats{}), nil)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "crs_wait_duration_seconds"); err != nil {
		t.Fatal(err)
	}
}
