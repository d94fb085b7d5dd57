package search

import (
	"math/bits"
	"sync/atomic"
)

// Rotation is a scheduler's default strategy: the exact rotation of
// acquire.NewRoundRobin, asked without the interface (see
// docs/BENCHMARKS.md). The padding keeps the counter, which every
// Acquire writes, off the lines of its neighbours.
type Rotation struct {
	_     [56]byte
	turns atomic.Uint64
	m     uint64 // ceil(2^64 / n) for n >= 2 shards
	_     [56]byte
}

// Init prepares r for n shards.
func (r *Rotation) Init(n int) {
	if n > 1 {
		r.m = ^uint64(0)/uint64(n) + 1
	}
}

// Next returns the next of the n shards r was prepared for, shard 0
// first, as RoundRobin's Select does. It takes turns % n without a
// divide, by Lemire's multiply-shift reduction, exact for a 32-bit
// dividend: the rotation skips at most n-1 shards once every 2^32 calls.
func (r *Rotation) Next(n int) int {
	if n <= 1 {
		return 0
	}
	hi, _ := bits.Mul64(r.m*uint64(uint32(r.turns.Add(1)-1)), uint64(n))
	return int(hi)
}
