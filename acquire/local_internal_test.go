package acquire

import (
	"math/bits"
	"testing"
)

func TestLocalHomesOfPowerOfTwoShardsAreAllDifferent(t *testing.T) {
	for _, n := range []int{2, 4, 8, 32, 1024} {
		seen := make([]bool, n)
		for k := range n {
			s := homeShard(bits.Reverse64(uint64(k)), n)
			if seen[s] {
				t.Fatalf("%d shards: home %d is shard %d, which an earlier home has", n, k, s)
			}
			seen[s] = true
		}
	}
}

func TestLocalSecondHomeIsHalfWayRound(t *testing.T) {
	// Two Ps, the common small machine: their homes are as far apart as
	// the shard count allows, so a P whose home is empty and moves on to
	// the next shards does not reach the other's soon.
	for n := 2; n <= 64; n++ {
		first, second := homeShard(bits.Reverse64(0), n), homeShard(bits.Reverse64(1), n)
		if first != 0 || second != n/2 {
			t.Fatalf("%d shards: first homes %d and %d, want 0 and %d", n, first, second, n/2)
		}
	}
}
