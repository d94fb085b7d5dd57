package scheduler

import (
	"cmp"
	"testing"

	"github.com/crsched/crs/config"
)

// TestDefaultRotationMatchesRoundRobin checks the default strategy's
// start shards against acquire.NewRoundRobin's: the turn count modulo the
// shard count, taken of its low 32 bits.
func TestDefaultRotationMatchesRoundRobin(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 8, 32, 1000, config.MaxHeapCount} {
		s, err := New(config.Config[*prio, string]{
			HeapCount:  n,
			Comparator: func(a, b *prio) int { return cmp.Compare(a.p, b.p) },
			KeyFunc:    func(v *prio) string { return v.key },
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		for _, c := range []uint64{0, 1, 2, uint64(n - 1), uint64(n), uint64(n + 1), 12345, 1<<31 - 1, 1 << 31, 1<<32 - 2, 1<<32 - 1, 1 << 32, 1<<32 + 5} {
			s.rotation.Turns.Store(c)
			got, err := s.strategyStart()
			if want := int(uint32(c) % uint32(n)); got != want || err != nil {
				t.Fatalf("%d shards, turn %d: start %d, %v; want %d", n, c, got, err, want)
			}
		}
	}
}
