package loadtest

import (
	"math"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

func TestLimitIsWorkersOverMeanLatencyUnderTheSharedPolicy(t *testing.T) {
	cfg := Default()
	w := [2]int64{0, int64(10 * time.Second)}
	l := theoreticalLimit(cfg, float64(cfg.Latency.Mean()), 10000*(w[1]-w[0]), w)
	if l.Bottleneck != "workers" || math.Abs(l.PerSecond-10000/0.26) > 1e-6 {
		t.Fatalf("limit %+v, want 38461.5 req/s bound by the workers", l)
	}
}

func TestLimitIsThePoolWhenExclusiveSlotsAreScarce(t *testing.T) {
	cfg := Default()
	cfg.Policy = config.Exclusive
	cfg.Cooldown = 140 * time.Millisecond
	w := [2]int64{0, int64(time.Second)}
	l := theoreticalLimit(cfg, float64(cfg.Latency.Mean()), 1000*(w[1]-w[0]), w)
	// 4 slots, each busy 260 ms then resting 140 ms: 10 requests a second.
	if l.Bottleneck != "pool" || math.Abs(l.PerSecond-10) > 1e-9 {
		t.Fatalf("limit %+v, want 10 req/s bound by the pool", l)
	}
}

func TestLimitLeavesOutAbandonedRequests(t *testing.T) {
	cfg := Default()
	cfg.CancelRate = 0.5
	w := [2]int64{0, int64(time.Second)}
	l := theoreticalLimit(cfg, float64(cfg.Latency.Mean()), 100*(w[1]-w[0]), w)
	// Requests last 3/4 of the mean on average; half of them complete.
	want := 100 / (0.26 * 0.75) * 0.5
	if math.Abs(l.PerSecond-want) > 1e-9 {
		t.Fatalf("limit %v, want %v", l.PerSecond, want)
	}
}

func TestOverlapClipsToTheWindow(t *testing.T) {
	w := [2]int64{10, 20}
	for _, c := range []struct{ from, to, want int64 }{{0, 5, 0}, {0, 15, 5}, {12, 18, 6}, {15, 30, 5}, {0, 30, 10}, {25, 30, 0}} {
		if got := overlap(c.from, c.to, w); got != c.want {
			t.Errorf("overlap(%d, %d) = %d, want %d", c.from, c.to, got, c.want)
		}
	}
}
