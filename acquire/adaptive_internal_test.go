package acquire

import (
	"math/rand/v2"
	"testing"
)

func TestTwoIsTwoDistinctShardsInRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{2, 3, 8, 64} {
		seen := make([]int, n)
		for range 10_000 {
			first, second := two(r.Uint64(), n)
			if first == second || first < 0 || first >= n || second < 0 || second >= n {
				t.Fatalf("%d shards: two = %d, %d", n, first, second)
			}
			seen[second]++
		}
		for i, c := range seen {
			if c == 0 {
				t.Fatalf("%d shards: shard %d never drawn second in 10,000 pairs", n, i)
			}
		}
	}
	// The extreme words still give two distinct shards in range.
	for _, w := range []uint64{0, 1, 1 << 63, ^uint64(0)} {
		for _, n := range []int{2, 3, 1024} {
			if first, second := two(w, n); first == second || first < 0 || first >= n || second < 0 || second >= n {
				t.Fatalf("two(%#x, %d) = %d, %d", w, n, first, second)
			}
		}
	}
}
