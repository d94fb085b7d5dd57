package acquire

import (
	"math/bits"
	"math/rand/v2"
)

// AdaptiveStrategy follows the load: it prefers the shard with more
// acquirable resources, so busy shards are relieved without any
// configuration.
//
// It uses the "power of two choices": sample two distinct shards at random
// and take the better one. Looking at every shard would cost O(n) per call
// and send every concurrent caller to the same momentarily-best shard (a
// thundering herd); two random samples cost O(1), spread callers, and
// still bring the maximum load exponentially closer to the mean than a
// single random choice. Randomness comes from math/rand/v2's per-thread
// runtime source, and ActiveCount is a lock-free read, so Select performs
// no shared write.
//
// An AdaptiveStrategy has no state and is safe for concurrent use.
type AdaptiveStrategy struct{}

// NewAdaptiveStrategy returns the power-of-two-choices strategy.
func NewAdaptiveStrategy() *AdaptiveStrategy { return &AdaptiveStrategy{} }

// Select samples two distinct shards and returns the one with the larger
// ActiveCount; on a tie it returns the first sample, which is itself
// uniform, so ties do not favour low indices. With fewer than two shards it
// returns 0 (with ShardCount() < 1 there is no valid answer and the
// scheduler's range check reports it).
func (*AdaptiveStrategy) Select(view ShardView) int {
	n := view.ShardCount()
	if n <= 1 {
		return 0
	}
	first, second := two(rand.Uint64(), n)
	// Which sample wins is as random as the samples, so this branch is
	// written to compile to a conditional move.
	if view.ActiveCount(second) > view.ActiveCount(first) {
		first = second
	}
	return first
}

// String names the strategy as CRS did, for Stats.
func (*AdaptiveStrategy) String() string { return "Adaptive" }

// two turns the random word r into two distinct shards of n >= 2, each
// uniform.
func two(r uint64, n int) (first, second int) {
	// One random word yields both samples: the high word of r*n is the
	// first, and the low word, uniform to within n/2^64, picks the second
	// among the other n-1 shards.
	a, rest := bits.Mul64(r, uint64(n))
	b, _ := bits.Mul64(rest, uint64(n-1))
	if b >= a { // as random as a: written for a conditional move
		b++
	}
	return int(a), int(b)
}
