// Package rotation is the exact round-robin rotation over n shards that
// acquire.RoundRobin, WeightedStrategy's fallback and a scheduler's
// default strategy share.
package rotation

import (
	"math/bits"
	"sync/atomic"
)

// Counter is a rotation: its zero value starts at shard 0. It is safe for
// concurrent use. A single atomic counter is its only state, so the
// rotation is exact: n*k calls over n shards visit each shard exactly k
// times. The padding keeps the counter, which every call writes, on a
// cache line of its own.
type Counter struct {
	_     [56]byte
	turns atomic.Uint64
	_     [56]byte
}

// Next returns the next of n shards in rotation. With one shard or none
// it returns 0 without touching the counter, so that a single-shard
// scheduler pays no cross-core traffic. The low 32 bits of the count
// wrap every 2^32 calls, where the rotation skips at most n-1 shards once.
func (c *Counter) Next(n int) int {
	if n <= 1 {
		return 0
	}
	// Add returns the incremented value; one less makes the first pick
	// shard 0.
	return fastmod(uint32(c.turns.Add(1)-1), n)
}

// fastmod returns c % n without a divide instruction, which costs tens of
// cycles on some CPUs and would dominate Next: Lemire's exact
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
