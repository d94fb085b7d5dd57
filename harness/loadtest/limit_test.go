package loadtest

import (
	"math"
	"strings"
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

func TestAZeroLatencyBackendHasNoLimitUnlessCooldownsBoundThePool(t *testing.T) {
	cfg := Default()
	cfg.Latency = Latency{Kind: "fixed"}
	w := [2]int64{0, int64(time.Second)}
	if l := theoreticalLimit(cfg, 0, 100*(w[1]-w[0]), w); l.Bottleneck != "none" || l.PerSecond != 0 {
		t.Fatalf("shared, zero latency: limit %+v, want none", l)
	}
	cfg.Policy = config.Exclusive
	if l := theoreticalLimit(cfg, 0, 100*(w[1]-w[0]), w); l.Bottleneck != "none" {
		t.Fatalf("exclusive without cooldown, zero latency: limit %+v, want none", l)
	}
	// 4 slots, each resting 100 ms after a call that takes no time.
	cfg.Cooldown = 100 * time.Millisecond
	if l := theoreticalLimit(cfg, 0, 100*(w[1]-w[0]), w); l.Bottleneck != "pool" || math.Abs(l.PerSecond-40) > 1e-9 {
		t.Fatalf("exclusive with cooldown, zero latency: limit %+v, want 40 req/s bound by the pool", l)
	}
}

func TestAReportWithoutALimitShowsNoRatio(t *testing.T) {
	cfg := quick(Normal)
	cfg.Latency = Latency{Kind: "fixed"}
	cfg.Workers, cfg.Duration = 4, 50*time.Millisecond
	r := run(t, cfg)
	if r.Throughput.Limit.Bottleneck != "none" || r.Throughput.Ratio != 0 || r.Throughput.RatioAsRun != 0 {
		t.Fatalf("throughput %+v, want no limit and no ratio", r.Throughput)
	}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, "theoretical limit      none") || !strings.Contains(text, "ratio                  n/a") ||
		strings.Contains(text, "ratio                  0.00%") || strings.Contains(text, "limit as the calls ran") {
		t.Fatalf("report:\n%s", text)
	}
}
