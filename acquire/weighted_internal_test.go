package acquire

import (
	"math"
	"math/rand/v2"
	"testing"
)

// exactShares computes from the alias tables the probability of each
// column's outcome, without sampling.
func exactShares(w *WeightedStrategy) []float64 {
	n := len(w.columns)
	out := make([]float64, n)
	for i, c := range w.columns {
		keep := float64(c.threshold) / 0x1p64
		out[i] += keep / float64(n)
		out[c.alias] += (1 - keep) / float64(n)
	}
	return out
}

func TestAliasTablesEncodeTheWeightsExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := [][]uint{
		{1, 2, 3, 4},
		{0, 5, 0, 1, 0},
		{1, 0, 97, 2, 0},
		{math.MaxUint, 1, 0},
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
	}
	for range 500 {
		n := 1 + rng.IntN(40)
		weights := make([]uint, n)
		for i := range weights {
			switch rng.IntN(4) {
			case 0: // zero weights are the interesting edge
			case 1:
				weights[i] = uint(rng.IntN(3))
			case 2:
				weights[i] = uint(rng.IntN(1000))
			default:
				weights[i] = uint(rng.Uint64())
			}
		}
		weights[rng.IntN(n)] |= 1 // at least one positive weight
		cases = append(cases, weights)
	}
	for _, weights := range cases {
		w := NewWeightedStrategy(weights)
		var sum float64
		for _, x := range weights {
			sum += float64(x)
		}
		got := exactShares(w)
		for i, x := range weights {
			if x == 0 {
				if c := w.columns[i]; c.threshold != 0 || weights[c.alias] == 0 {
					t.Fatalf("weights %v: zero-weight column %d keeps itself or aliases zero-weight %d",
						weights, i, c.alias)
				}
			}
			if want := float64(x) / sum; math.Abs(got[i]-want) > 1e-9 {
				t.Fatalf("weights %v: shard %d has probability %g, want %g", weights, i, got[i], want)
			}
		}
	}
}
