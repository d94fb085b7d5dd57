package acquire_test

import (
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
