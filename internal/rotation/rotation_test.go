package rotation

import "testing"

// The rotation starts at shard 0; each turn is the turn count modulo the
// shard count, taken of its low 32 bits.
func TestTheRotationIsTheTurnCountModuloTheShards(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 8, 32, 1000, 1024} { // 1024: config.MaxHeapCount
		var r Counter
		if got := r.Next(n); got != 0 {
			t.Fatalf("%d shards: the first turn starts at %d, want 0", n, got)
		}
		for _, c := range []uint64{0, 1, 2, uint64(n - 1), uint64(n), uint64(n + 1), 12345, 1<<31 - 1, 1 << 31, 1<<32 - 2, 1<<32 - 1, 1 << 32, 1<<32 + 5} {
			r.turns.Store(c)
			if got, want := r.Next(n), int(uint32(c)%uint32(n)); got != want {
				t.Fatalf("%d shards, turn %d: start %d, want %d", n, c, got, want)
			}
		}
	}
}
