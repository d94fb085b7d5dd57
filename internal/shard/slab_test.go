package shard

import "testing"

// SlabOrder must be a permutation that keeps each shard's nodes
// contiguous, for every batch size and shard count, divisible or not.
func TestSlabOrderGroupsEachShardsNodesTogether(t *testing.T) {
	for _, shards := range []int{1, 3, 8} {
		for n := 1; n <= 30; n++ {
			at := SlabOrder(n, shards)
			taken := make([]bool, n)
			lo, hi := make([]int, shards), make([]int, shards)
			for r := range lo {
				lo[r], hi[r] = n, -1
			}
			for i := 0; i < n; i++ {
				p := at(i)
				if p < 0 || p >= n || taken[p] {
					t.Fatalf("n=%d shards=%d: item %d goes to %d, out of range or taken", n, shards, i, p)
				}
				taken[p] = true
				r := i % shards
				lo[r], hi[r] = min(lo[r], p), max(hi[r], p)
			}
			for r := range lo {
				if count := (n - r + shards - 1) / shards; hi[r] >= 0 && hi[r]-lo[r]+1 != count {
					t.Fatalf("n=%d shards=%d: the %d nodes of offset %d span %d..%d", n, shards, count, r, lo[r], hi[r])
				}
			}
		}
	}
}

// A BatchAdd fills its slab with InSlabOrder, and reports errors and
// events by SlabOrder: the two must agree, and InSlabOrder must visit
// every item once, front to back in the slab.
func TestInSlabOrderWalksTheSlabInTheOrderOfSlabOrder(t *testing.T) {
	for _, shards := range []int{1, 3, 8} {
		for n := 0; n <= 30; n++ {
			at, next := SlabOrder(n, shards), 0
			InSlabOrder(n, shards, func(i, p, offset int) {
				if p != next || at(i) != p || offset != i%shards {
					t.Fatalf("n=%d shards=%d: visit %d was item %d at %d; SlabOrder puts it at %d", n, shards, next, i, p, at(i))
				}
				next++
			})
			if next != n {
				t.Fatalf("n=%d shards=%d: visited %d items", n, shards, next)
			}
		}
	}
}
