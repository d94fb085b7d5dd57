package acquire_test

import (
	"math/rand/v2"
	"testing"

	"github.com/crsched/crs/acquire"
)

func TestAdaptivePrefersTheShardWithMostAvailableResources(t *testing.T) {
	// The full shard wins whenever it is one of the two samples, which
	// happens with probability 2/8 = 0.25; each other shard gets
	// 0.75/7 ~= 0.107.
	view := shardCounts{1, 1, 1, 1000, 1, 1, 1, 1}
	got := shares(t, acquire.NewAdaptiveStrategy(), view)
	for i, s := range got {
		if i == 3 {
			continue
		}
		if got[3] < 2*s {
			t.Errorf("full shard 3 has share %.4f, not at least twice shard %d's %.4f", got[3], i, s)
		}
	}
	checkShares(t, got[3:4], []float64{0.25})
}

func TestAdaptiveComparesTwoDistinctShards(t *testing.T) {
	// With two shards both are always sampled, so the fuller one always
	// wins; a repeated sample would sometimes pick the empty one.
	tests := []shardCounts{{0, 5}, {5, 0}}
	for _, view := range tests {
		want := 0
		if view[1] > view[0] {
			want = 1
		}
		s := acquire.NewAdaptiveStrategy()
		for range 10_000 {
			if got := s.Select(view); got != want {
				t.Fatalf("view %v: Select = %d, want %d", view, got, want)
			}
		}
	}
}

func TestAdaptivePairIsTwoDistinctShardsInRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2, 3, 8, 64} {
		seen := make([]int, n)
		for range 10_000 {
			first, second := acquire.Pair(r.Uint64(), n)
			if first == second || first < 0 || first >= n || second < 0 || second >= n {
				t.Fatalf("%d shards: Pair = %d, %d", n, first, second)
			}
			seen[second]++
		}
		for i, c := range seen {
			if c == 0 {
				t.Fatalf("%d shards: shard %d never drawn second in 10,000 pairs", n, i)
			}
		}
	}
	// The extreme words still give two distinct shards in range.
	for _, w := range []uint64{0, 1, 1 << 63, ^uint64(0)} {
		for _, n := range []int{2, 3, 1024} {
			if first, second := acquire.Pair(w, n); first == second || first < 0 || first >= n || second < 0 || second >= n {
				t.Fatalf("Pair(%#x, %d) = %d, %d", w, n, first, second)
			}
		}
	}
}

func TestAdaptiveSpreadsEvenlyWhenShardsAreEqual(t *testing.T) {
	view := shardCounts{4, 4, 4, 4, 4}
	got := shares(t, acquire.NewAdaptiveStrategy(), view)
	checkShares(t, got, []float64{0.2, 0.2, 0.2, 0.2, 0.2})
}

func TestAdaptiveSelectsWithinRange(t *testing.T) {
	s := acquire.NewAdaptiveStrategy()
	for _, n := range []int{2, 3, 7, 8, 64} {
		view := make(shardCounts, n)
		for i := range view {
			view[i] = i % 5
		}
		for range 10_000 {
			if got := s.Select(view); got < 0 || got >= n {
				t.Fatalf("%d shards: Select = %d", n, got)
			}
		}
	}
}

func TestAdaptiveWithOneShardSelectsIt(t *testing.T) {
	s := acquire.NewAdaptiveStrategy()
	for range 1000 {
		if got := s.Select(shardCounts{3}); got != 0 {
			t.Fatalf("Select = %d over one shard, want 0", got)
		}
	}
}
