package maglev

import (
	"testing"

	"github.com/crsched/crs/internal/hash"
)

func hashes(n, salt int) []uint64 {
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = hash.Mix64(uint64(i*7919 + salt))
	}
	return hs
}

func TestEveryBackendOwnsItsShareOfSlots(t *testing.T) {
	for _, n := range []int{1, 3, 64, 500} {
		m := Size(n)
		table := Build(hashes(n, 1), m)
		owned := make([]int, n)
		for _, b := range table {
			if b < 0 {
				t.Fatalf("n=%d: empty slot", n)
			}
			owned[b]++
		}
		for i, c := range owned {
			if c < m/n || c > m/n+1 {
				t.Fatalf("n=%d: backend %d owns %d slots of %d, want %d or %d", n, i, c, m, m/n, m/n+1)
			}
		}
	}
}

func TestRemovingABackendMovesFewOtherSlots(t *testing.T) {
	const n = 64
	hs := hashes(n, 2)
	m := Size(n)
	before := Build(hs, m)
	after := Build(hs[:n-1], m) // the last backend leaves
	moved := 0
	for slot := range before {
		if int(before[slot]) != n-1 && before[slot] != after[slot] {
			moved++
		}
	}
	// The leaver's own slots must move; others should mostly stay.
	if share := float64(moved) / float64(m); share > 0.05 {
		t.Fatalf("%.1f%% of other backends' slots moved", 100*share)
	}
}

func TestSizeIsPrimeAndLargeEnough(t *testing.T) {
	for _, n := range []int{0, 1, 10, 64, 1000} {
		m := Size(n)
		if !prime(m) || m < n*SlotsPerBackend {
			t.Fatalf("Size(%d) = %d", n, m)
		}
	}
}
