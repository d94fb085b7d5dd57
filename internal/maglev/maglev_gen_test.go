package maglev

import (
	"math/rand/v2"
	"testing"
)

// Tests added to kill mutants the other tests let live (docs/TESTING.md).

// reference builds the table exactly as the paper describes it, with each
// backend's whole preference list written out: offset = h mod M,
// skip = (h rotated by 32 bits) mod (M-1) + 1, preference j = (offset +
// j*skip) mod M; backends take turns claiming their next free preference.
func reference(hashes []uint64, m int) []int32 {
	table := make([]int32, m)
	for i := range table {
		table[i] = -1
	}
	if len(hashes) == 0 {
		return table
	}
	prefs := make([][]int, len(hashes))
	for i, h := range hashes {
		offset := h % uint64(m)
		skip := (h>>32|h<<32)%uint64(m-1) + 1
		for j := 0; j < m; j++ {
			prefs[i] = append(prefs[i], int((offset+uint64(j)*skip)%uint64(m)))
		}
	}
	next := make([]int, len(hashes))
	for filled := 0; filled < m; {
		for i := range hashes {
			for table[prefs[i][next[i]]] >= 0 {
				next[i]++
			}
			table[prefs[i][next[i]]] = int32(i)
			next[i]++
			if filled++; filled == m {
				break
			}
		}
	}
	return table
}

func TestBuildIsThePapersTable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 7, 20} {
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = r.Uint64()
		}
		m := Size(n)
		got, want := Build(hashes, m), reference(hashes, m)
		for s := range want {
			if got[s] != want[s] {
				t.Fatalf("%d backends: slot %d belongs to %d, the paper's table says %d", n, s, got[s], want[s])
			}
		}
	}
	if empty := Build(nil, 101); len(empty) != 101 || empty[0] != -1 || empty[100] != -1 {
		t.Fatal("a table without backends must be all -1")
	}
}

func TestSlotIsTheHighWordOfHashTimesSize(t *testing.T) {
	for _, tc := range []struct {
		hash uint64
		m    int
		want int
	}{{0, 101, 0}, {1 << 63, 101, 50}, {^uint64(0), 101, 100}, {1 << 62, 4, 1}} {
		if got := Slot(tc.hash, tc.m); got != tc.want {
			t.Errorf("Slot(%#x, %d) = %d, want %d", tc.hash, tc.m, got, tc.want)
		}
	}
}

func TestPrimeAndSize(t *testing.T) {
	for n, want := range map[int]bool{0: false, 1: false, 2: true, 3: true, 4: false, 9: false, 25: false, 97: true, 101: true} {
		if prime(n) != want {
			t.Errorf("prime(%d) = %v", n, !want)
		}
	}
	if Size(1) != 101 || Size(2) != 211 {
		t.Fatalf("Size(1) = %d, Size(2) = %d; want 101 and 211", Size(1), Size(2))
	}
}
