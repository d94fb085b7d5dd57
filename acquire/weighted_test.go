package acquire_test

import (
	"math"
	"testing"

	"github.com/crsched/crs/acquire"
)

// draws is large enough that a share's standard deviation is at most
// 0.5/sqrt(draws) ~= 0.0011, so shareTolerance is about 18 standard
// deviations: the statistical tests below cannot flake in practice.
const (
	draws          = 200_000
	shareTolerance = 0.02
)

// shares runs Select draws times and returns each shard's share, failing
// the test on an out-of-range pick.
func shares(t *testing.T, s acquire.AcquireStrategy, view acquire.ShardView) []float64 {
	t.Helper()
	n := view.ShardCount()
	counts := make([]int, n)
	for range draws {
		i := s.Select(view)
		if i < 0 || i >= n {
			t.Fatalf("Select = %d, want in [0, %d)", i, n)
		}
		counts[i]++
	}
	out := make([]float64, n)
	for i, c := range counts {
		out[i] = float64(c) / draws
	}
	return out
}

func checkShares(t *testing.T, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > shareTolerance {
			t.Errorf("shard %d: share %.4f, want %.4f ± %.2f", i, got[i], want[i], shareTolerance)
		}
	}
}

func TestWeightedSelectsShardsInProportionToWeights(t *testing.T) {
	tests := []struct {
		name    string
		weights []uint
	}{
		{"equal", []uint{1, 1, 1, 1}},
		{"increasing", []uint{1, 2, 3, 4}},
		{"skewed with zeros", []uint{1, 0, 97, 2, 0}},
		{"canary", []uint{99, 1}},
		{"huge weights", []uint{1 << 40, 1 << 41, 1 << 40}},
		{"many shards", []uint{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sum float64
			for _, w := range tt.weights {
				sum += float64(w)
			}
			want := make([]float64, len(tt.weights))
			for i, w := range tt.weights {
				want[i] = float64(w) / sum
			}
			got := shares(t, acquire.NewWeightedStrategy(tt.weights), make(shardCounts, len(tt.weights)))
			checkShares(t, got, want)
		})
	}
}

func TestWeightedNeverSelectsZeroWeightShards(t *testing.T) {
	tests := [][]uint{
		{0, 5, 0, 1, 0},
		{0, 1},
		{1, 0},
		{0, 0, 0, 0, 0, 0, 0, 1},
		{3, 0, 3, 0, 3, 0, 3, 0, 3, 0, 7, 0, 11},
		{0, math.MaxUint, 1, 0},
	}
	for _, weights := range tests {
		s := acquire.NewWeightedStrategy(weights)
		view := make(shardCounts, len(weights))
		for range draws {
			if i := s.Select(view); weights[i] == 0 {
				t.Fatalf("weights %v: selected zero-weight shard %d", weights, i)
			}
		}
	}
}

// Without usable weights, or with as many weights as there are not
// shards, the strategy falls back to the rotation of NewRoundRobin, as
// CRS's did: every shard gets exactly its share, none is starved.
func TestWeightedFallsBackToRoundRobin(t *testing.T) {
	tests := []struct {
		name    string
		weights []uint
		shards  int
	}{
		{"nil", nil, 5},
		{"empty", []uint{}, 5},
		{"all zero", []uint{0, 0, 0}, 3},
		{"fewer weights than shards", []uint{10, 90}, 4},
		{"more weights than shards", []uint{1, 1, 1, 1, 1, 1, 1, 1}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := acquire.NewWeightedStrategy(tt.weights)
			view := make(shardCounts, tt.shards)
			for round := range 3 {
				for want := range tt.shards {
					if got := s.Select(view); got != want {
						t.Fatalf("round %d: Select = %d, want %d", round, got, want)
					}
				}
			}
		})
	}
}

// The weights apply whenever their count matches the shards, even if the
// same strategy fell back for another shard count before.
func TestWeightedAppliesItsWeightsWhenTheShardCountMatches(t *testing.T) {
	s := acquire.NewWeightedStrategy([]uint{0, 1})
	s.Select(make(shardCounts, 3))
	for range 1000 {
		if i := s.Select(make(shardCounts, 2)); i != 1 {
			t.Fatalf("Select = %d over two shards with weights {0, 1}, want 1", i)
		}
	}
}

func TestWeightedIgnoresLaterChangesToTheWeightsSlice(t *testing.T) {
	weights := []uint{0, 1}
	s := acquire.NewWeightedStrategy(weights)
	weights[0], weights[1] = 1, 0
	view := make(shardCounts, 2)
	for range 10_000 {
		if i := s.Select(view); i != 1 {
			t.Fatalf("Select = %d after the caller changed its slice, want 1", i)
		}
	}
}

func TestWeightedWithOneShardAlwaysSelectsIt(t *testing.T) {
	for _, weights := range [][]uint{nil, {0}, {5}, {1, 2, 3}} {
		s := acquire.NewWeightedStrategy(weights)
		for range 1000 {
			if i := s.Select(shardCounts{1}); i != 0 {
				t.Fatalf("weights %v: Select = %d over one shard, want 0", weights, i)
			}
		}
	}
}
