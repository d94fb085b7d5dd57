package acquire

import (
	"math/bits"
	"sync/atomic"
)

// RoundRobin spreads Acquire calls evenly over the shards regardless of how
// full they are. It is the cheapest strategy that never starves a shard, and
// the default when the caller has no better information.
//
// A single atomic counter is the only state; its increment is the only
// shared write per call, so rotation is exact: n*k calls from one goroutine
// over n shards visit each shard exactly k times. Under heavy concurrency
// the counter's cache line bounces between cores, which is the price of
// exactness; AdaptiveStrategy, and WeightedStrategy whose weights fit the
// shards, avoid shared writes.
type RoundRobin struct {
	// Padding keeps the counter on its own cache line so that a hot
	// RoundRobin does not slow down whatever is allocated next to it.
	_     [56]byte
	calls atomic.Uint64
	_     [56]byte
}

// NewRoundRobin returns a round-robin strategy whose first pick is shard 0.
// The result is safe for concurrent use. Sharing one between schedulers is
// safe too (each pick is taken modulo the caller's shard count), but their
// rotations then interleave and are no longer exact for either.
func NewRoundRobin() AcquireStrategy { return &RoundRobin{} }

// Select returns the next shard in rotation. With one shard it returns 0
// without touching the counter, so a single-shard scheduler pays no
// cross-core traffic. With ShardCount() < 1 there is no valid answer; it
// returns 0 and leaves the error to the scheduler's range check.
func (r *RoundRobin) Select(view ShardView) int { return r.next(view.ShardCount()) }

// next is Select for a caller that knows the shard count, n, as
// WeightedStrategy's fallback does: it takes the next shard of the same
// rotation.
func (r *RoundRobin) next(n int) int {
	if n <= 1 {
		return 0
	}
	// Add returns the incremented value; subtract one so the first pick
	// is shard 0. The low 32 bits wrap every 2^32 calls, where the
	// rotation skips at most n-1 shards once: irrelevant in practice.
	return fastmod(uint32(r.calls.Add(1)-1), n)
}

// fastmod returns c % n without a divide instruction, which costs tens of
// cycles on some CPUs and would dominate Select: Lemire's exact
// multiply-shift reduction, with the per-n constant precomputed for the
// shard counts a scheduler allows.
func fastmod(c uint32, n int) int {
	if n >= len(fastmodM) {
		return int(c % uint32(n))
	}
	lo := fastmodM[n] * uint64(c)
	hi, _ := bits.Mul64(lo, uint64(n))
	return int(hi)
}

// fastmodM[n] = ceil(2^64 / n), for n in [1, 1024].
var fastmodM = func() (m [1025]uint64) {
	for n := 2; n < len(m); n++ {
		m[n] = ^uint64(0)/uint64(n) + 1
	}
	return m
}()

// String names the strategy as CRS did, for Stats.
func (r *RoundRobin) String() string { return "RoundRobin" }
