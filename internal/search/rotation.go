package search

import (
	"math/bits"
	"sync/atomic"
)

// Rotation is a scheduler's default strategy: the exact rotation of
// acquire.NewRoundRobin, kept without the interface (a shared Acquire
// is more than a tenth faster that way). The padding keeps the counter,
// which every Acquire writes, off the lines of its neighbours.
type Rotation struct {
	_     [56]byte
	Turns atomic.Uint64 // the turns taken; tests set it
	m     uint64        // ceil(2^64 / n) for n >= 2 shards
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
	hi, _ := bits.Mul64(r.m*uint64(uint32(r.Turns.Add(1)-1)), uint64(n))
	return int(hi)
}
