package acquire_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/crsched/crs/acquire"
)

func userHash(i int) uint64 {
	return acquire.HashIdentifier(acquire.StringIdentifier(fmt.Sprintf("user-%d", i)))
}

func TestRingMapsTheSameHashToTheSameShard(t *testing.T) {
	a := acquire.NewConsistentHashRing(8)
	b := acquire.NewConsistentHashRing(8)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		h := rng.Uint64()
		first := a.GetShard(h)
		for range 3 {
			if got := a.GetShard(h); got != first {
				t.Fatalf("GetShard(%#x) = %d then %d", h, first, got)
			}
		}
		if got := b.GetShard(h); got != first {
			t.Fatalf("GetShard(%#x) = %d on one ring, %d on an identical one", h, first, got)
		}
	}
}

func TestRingShardsAreWithinRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 8, 64} {
		r := acquire.NewConsistentHashRing(n)
		if r.ShardCount() != n {
			t.Fatalf("ShardCount() = %d, want %d", r.ShardCount(), n)
		}
		for range 10_000 {
			if got := r.GetShard(rng.Uint64()); got < 0 || got >= n {
				t.Fatalf("%d shards: GetShard = %d", n, got)
			}
		}
	}
}

func TestRingBalancesManyUsersAcrossShards(t *testing.T) {
	const (
		users  = 100_000
		shards = 8
	)
	r := acquire.NewConsistentHashRing(shards)
	counts := make([]int, shards)
	for i := range users {
		counts[r.GetShard(userHash(i))]++
	}
	mean := float64(users) / shards
	busiest := 0
	for _, c := range counts {
		busiest = max(busiest, c)
	}
	t.Logf("users per shard: %v (busiest %.3fx mean)", counts, float64(busiest)/mean)
	if float64(busiest) > 1.15*mean {
		t.Fatalf("busiest shard has %d users, over 1.15x the mean %.0f: %v", busiest, mean, counts)
	}
}

func TestRingReachesEveryShardWithAFewHundredUsers(t *testing.T) {
	const shards = 8
	r := acquire.NewConsistentHashRing(shards)
	seen := make([]bool, shards)
	for i := range 200 {
		seen[r.GetShard(userHash(i))] = true
	}
	for shard, ok := range seen {
		if !ok {
			t.Errorf("no user among user-0..user-199 reached shard %d", shard)
		}
	}
}

// referenceShard is the textbook lookup: binary search for the first point
// at or after h, wrapping to the first point.
func referenceShard(positions []uint64, owners []int, h uint64) int {
	i := sort.Search(len(positions), func(i int) bool { return positions[i] >= h })
	if i == len(positions) {
		i = 0
	}
	return owners[i]
}

func TestRingAgreesWithBinarySearchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	// 600 shards exceed the index's size cap, so buckets hold several
	// points and the scan runs longer.
	for _, n := range []int{1, 2, 3, 8, 64, 600} {
		r := acquire.NewConsistentHashRing(n)
		positions, owners := acquire.RingPoints(r)
		if len(positions) != n*acquire.VirtualNodesPerShard {
			t.Fatalf("%d shards: %d points, want %d", n, len(positions), n*acquire.VirtualNodesPerShard)
		}
		if !sort.SliceIsSorted(positions, func(i, j int) bool { return positions[i] < positions[j] }) {
			t.Fatalf("%d shards: points not sorted", n)
		}
		hashes := []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1, 1 << 63, positions[0], positions[len(positions)-1]}
		for _, p := range positions {
			hashes = append(hashes, p, p-1, p+1)
		}
		for range 100_000 {
			hashes = append(hashes, rng.Uint64())
		}
		for _, h := range hashes {
			if got, want := r.GetShard(h), referenceShard(positions, owners, h); got != want {
				t.Fatalf("%d shards: GetShard(%#x) = %d, reference says %d", n, h, got, want)
			}
		}
	}
}

func TestRingGivesEachShardItsVirtualNodes(t *testing.T) {
	r := acquire.NewConsistentHashRing(5)
	_, owners := acquire.RingPoints(r)
	counts := make([]int, 5)
	for _, o := range owners {
		counts[o]++
	}
	for shard, c := range counts {
		if c != acquire.VirtualNodesPerShard {
			t.Errorf("shard %d owns %d points, want %d", shard, c, acquire.VirtualNodesPerShard)
		}
	}
}

func TestRingGrowingByOneShardMovesKeysOnlyToTheNewShard(t *testing.T) {
	small := acquire.NewConsistentHashRing(8)
	large := acquire.NewConsistentHashRing(9)
	moved := 0
	for i := range 20_000 {
		h := userHash(i)
		before, after := small.GetShard(h), large.GetShard(h)
		if before != after {
			if after != 8 {
				t.Fatalf("user-%d moved from shard %d to old shard %d", i, before, after)
			}
			moved++
		}
	}
	// About 1/9 of the keys should move; allow a generous margin.
	if moved < 20_000/18 || moved > 20_000/5 {
		t.Fatalf("%d of 20000 keys moved, want about %d", moved, 20_000/9)
	}
}

func TestRingWithoutShardsBehavesAsOneShard(t *testing.T) {
	for _, n := range []int{0, -1, math.MinInt} {
		r := acquire.NewConsistentHashRing(n)
		if r.ShardCount() != 1 {
			t.Fatalf("NewConsistentHashRing(%d).ShardCount() = %d, want 1", n, r.ShardCount())
		}
		for _, h := range []uint64{0, 42, math.MaxUint64, userHash(1)} {
			if got := r.GetShard(h); got != 0 {
				t.Fatalf("NewConsistentHashRing(%d).GetShard(%#x) = %d, want 0", n, h, got)
			}
		}
	}
}

// A ring declared without NewConsistentHashRing routes like a ring of one
// shard, as CRS's zero-value ring did, instead of panicking.
func TestRingZeroValueBehavesAsOneShard(t *testing.T) {
	var r acquire.ConsistentHashRing
	if r.ShardCount() != 1 {
		t.Fatalf("zero ring's ShardCount() = %d, want 1", r.ShardCount())
	}
	for _, h := range []uint64{0, 12345, math.MaxUint64} {
		if got := r.GetShard(h); got != 0 {
			t.Fatalf("zero ring's GetShard(%#x) = %d, want 0", h, got)
		}
	}
}
