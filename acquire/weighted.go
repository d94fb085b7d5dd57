package acquire

import (
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/crsched/crs/internal/rotation"
)

// WeightedStrategy sends a fixed share of Acquire calls to each shard, for
// deployments where shards are not equal (bigger hosts, a shard kept
// cold for draining, a canary that should see 1% of traffic).
//
// Sampling uses Vose's alias method: the tables are built once at
// construction so that each Select costs one random number, one table
// lookup and one comparison, whatever the number of shards. The random
// number comes from math/rand/v2's global source, which the runtime keeps
// per thread, so Select performs no shared write and scales with cores.
//
// Edge cases, never an error:
//   - a shard whose weight is zero is never chosen (exactly never, not
//     "with probability 2^-64");
//   - no weights, every weight zero, or a number of weights other than
//     view.ShardCount(): the strategy falls back to the exact rotation
//     of NewRoundRobin, as CRS's did, so that a misconfigured strategy
//     starves no shard.
//
// A WeightedStrategy's weights are immutable after construction; it is
// safe for concurrent use.
type WeightedStrategy struct {
	// weights is the caller's slice, copied so that later writes to it
	// cannot disagree with the tables.
	weights []uint
	// columns is the alias table; nil when no weight is positive.
	columns []column
	// turns serves the fallback, RoundRobin's rotation. It is only
	// written while falling back, so a configuration that matches pays
	// no shared write.
	turns rotation.Counter
}

// column i of the alias table is kept with probability threshold/2^64,
// otherwise alias is chosen. Full columns (probability one) have alias ==
// i, so no threshold needs to represent 2^64. Both fields sit together so
// a draw reads one cache line and selects between them without a branch.
type column struct {
	threshold uint64
	alias     int
}

// NewWeightedStrategy builds the alias tables for weights; weights[i] is
// the relative share of shard i. The slice is copied.
func NewWeightedStrategy(weights []uint) *WeightedStrategy {
	w := &WeightedStrategy{weights: append([]uint(nil), weights...)}
	var sum float64
	largest := -1
	for i, x := range w.weights {
		sum += float64(x)
		if x > 0 && (largest < 0 || x > w.weights[largest]) {
			largest = i
		}
	}
	if largest < 0 {
		// Empty or all zero: Select falls back to the rotation.
		return w
	}

	n := len(w.weights)
	w.columns = make([]column, n)
	// p[i] is shard i's probability scaled so that the mean column is 1.
	p := make([]float64, n)
	small := make([]int, 0, n)
	large := make([]int, 0, n)
	for i, x := range w.weights {
		p[i] = float64(x) * float64(n) / sum
		if p[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		g := large[len(large)-1]
		w.columns[s] = column{probToThreshold(p[s]), g}
		// The large column gives away what fills the small one.
		p[g] = (p[g] + p[s]) - 1
		if p[g] < 1 {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	// What is left should have probability one; rounding may leave a
	// column slightly below. Mark it full, except a zero-weight column,
	// which must stay unreachable: send it wholly to the heaviest shard.
	for _, lists := range [2][]int{large, small} {
		for _, i := range lists {
			if w.weights[i] == 0 {
				w.columns[i] = column{0, largest}
				continue
			}
			w.columns[i] = column{0, i}
		}
	}
	return w
}

// probToThreshold maps a probability in [0, 1) to a threshold compared
// against a uniform 64-bit fraction. It saturates rather than overflow,
// since float64 -> uint64 conversion of 2^64 is implementation-defined.
func probToThreshold(p float64) uint64 {
	if p <= 0 {
		return 0
	}
	t := p * 0x1p64
	if t >= 0x1p64 {
		return math.MaxUint64
	}
	return uint64(t)
}

// Select draws a shard with probability weights[i]/sum(weights), or
// takes the next shard in rotation when it falls back (see
// WeightedStrategy). With ShardCount() < 1 there is no valid answer; it
// returns 0 and leaves the error to the scheduler's range check.
func (w *WeightedStrategy) Select(view ShardView) int {
	n := view.ShardCount()
	if n <= 1 {
		return 0
	}
	if len(w.columns) != n {
		return w.turns.Next(n)
	}
	// One draw gives both the column (high word) and the coin for it (low
	// word, uniform to within n/2^64 and independent of the column).
	col, coin := bits.Mul64(rand.Uint64(), uint64(n))
	c := w.columns[col]
	i := int(col)
	// Kept or aliased is a coin flip the branch predictor cannot learn;
	// with both values loaded up front the compiler emits a conditional
	// move instead of a branch.
	if coin >= c.threshold {
		i = c.alias
	}
	return i
}

// String names the strategy as CRS did, for Stats.
func (w *WeightedStrategy) String() string { return "Weighted" }
