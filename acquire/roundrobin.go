package acquire

import "github.com/crsched/crs/internal/rotation"

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
	turns rotation.Counter // padded: a hot RoundRobin slows nothing next to it
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
func (r *RoundRobin) Select(view ShardView) int { return r.turns.Next(view.ShardCount()) }

// String names the strategy as CRS did, for Stats.
func (r *RoundRobin) String() string { return "RoundRobin" }
