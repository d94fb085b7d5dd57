// Package pick draws the two distinct shards of the adaptive strategy's
// "power of two choices" from one random word. It is shared by
// acquire.AdaptiveStrategy and the scheduler, which asks that strategy
// directly rather than through its interface.
package pick

import "math/bits"

// Two turns the random word r into two distinct shards of n >= 2, each
// uniform.
func Two(r uint64, n int) (first, second int) {
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
