package compare

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/crsched/crs/config"
)

// rankOrders are the orderings BenchmarkRankError measures, each as the
// change it makes to the configuration.
var rankOrders = []struct {
	name string
	set  func(*config.Config[*worker, string])
}{
	{"shard", func(*config.Config[*worker, string]) {}},
	{"global", func(c *config.Config[*worker, string]) { c.Ordering = config.GlobalOrder }},
}

// rankAcquires is the number of acquisitions one measurement counts, per
// goroutine: fixed, so that the maximum is taken over the same number of
// draws whatever b.N, and large enough to reach the tail.
const rankAcquires = 100_000

// BenchmarkRankError reports the rank error of exclusive acquisitions over
// 10,000 resources with random priorities (see rank.go for the method):
// rank-mean, rank-p99 and rank-max, and window-mean, the mean number of
// concurrent changes each parallel measurement may be off by. One op is
// one whole measurement; its time is the harness's, not a figure of crs.
// heaps=1 is the control: its order is exact, so with one goroutine it
// must read 0, and with two its reading is the method's slack.
func BenchmarkRankError(b *testing.B) {
	for _, order := range rankOrders {
		for _, heaps := range heapCounts {
			for _, goroutines := range []int{1, 2} {
				name := fmt.Sprintf("order=%s/heaps=%d/goroutines=%d", order.name, heaps, goroutines)
				b.Run(name, func(b *testing.B) {
					cfg := config.Config[*worker, string]{HeapCount: heaps}
					order.set(&cfg)
					var total rankResult
					seed := uint64(0)
					for b.Loop() {
						seed++
						res, err := measureRank(cfg, rankOptions{
							resources:  preloaded,
							goroutines: goroutines,
							warmup:     preloaded,
							acquires:   rankAcquires / goroutines,
							seed:       seed,
						})
						if err != nil {
							b.Fatal(err)
						}
						total.merge(res)
					}
					b.ReportMetric(total.mean(), "rank-mean")
					b.ReportMetric(float64(total.quantile(0.99)), "rank-p99")
					b.ReportMetric(float64(total.max), "rank-max")
					b.ReportMetric(total.windowMean(), "window-mean")
				})
			}
		}
	}
}

func TestRankIsExactOnOneHeap(t *testing.T) {
	res, err := measureRank(config.Config[*worker, string]{HeapCount: 1},
		rankOptions{resources: 300, goroutines: 1, warmup: 300, acquires: 2000, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.n != 2000 || res.max != 0 || res.window != 0 {
		t.Fatalf("one heap, one goroutine: %d acquisitions, max rank %d, window %d; want 2000, 0, 0", res.n, res.max, res.window)
	}
}

func TestRankSeesShardMisses(t *testing.T) {
	res, err := measureRank(config.Config[*worker, string]{HeapCount: 8},
		rankOptions{resources: 300, goroutines: 1, warmup: 300, acquires: 2000, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Round robin takes each shard's best in turn; the best of the pool
	// is in one shard of eight, so most acquisitions miss something.
	if res.mean() < 0.5 || res.max < 1 || res.window != 0 {
		t.Fatalf("eight heaps, one goroutine: mean rank %.2f, max %d, window %d; want a mean of at least 0.5, and no window", res.mean(), res.max, res.window)
	}
}

func TestRankRunsInParallel(t *testing.T) {
	res, err := measureRank(config.Config[*worker, string]{HeapCount: 8},
		rankOptions{resources: 300, goroutines: 2, warmup: 100, acquires: 500, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.n != 1000 {
		t.Fatalf("%d acquisitions measured, want 1000", res.n)
	}
	if _, err := measureRank(config.Config[*worker, string]{}, rankOptions{resources: 2, goroutines: 2}); err == nil {
		t.Fatal("as many goroutines as resources: no error")
	}
}

func TestRankQuantile(t *testing.T) {
	r := rankResult{n: 100, max: 9, counts: make([]int, 10)}
	r.counts[0], r.counts[3], r.counts[9] = 90, 9, 1
	for _, tt := range []struct {
		q    float64
		want int
	}{{0.5, 0}, {0.9, 0}, {0.95, 3}, {0.99, 3}, {1, 9}} {
		if got := r.quantile(tt.q); got != tt.want {
			t.Errorf("quantile(%v) = %d, want %d", tt.q, got, tt.want)
		}
	}
}

func TestFenwickCountsBelow(t *testing.T) {
	const n = 64
	f, counts := newFenwick(n), make([]int, n)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		v := rng.IntN(n)
		d := 1
		if counts[v] > 0 && rng.IntN(2) == 0 {
			d = -1
		}
		f.add(v, d)
		counts[v] += d
		q := rng.IntN(n + 1)
		want := 0
		for _, c := range counts[:q] {
			want += c
		}
		if got := f.below(q); got != want {
			t.Fatalf("below(%d) = %d, want %d", q, got, want)
		}
	}
}
