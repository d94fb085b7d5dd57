package ring

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// model is the ring as a sorted slice.
type model []Point[int]

func (m model) window(pos uint64, n int) []Point[int] {
	i, _ := slices.BinarySearchFunc(m, pos, func(p Point[int], pos uint64) int {
		if p.Pos < pos {
			return -1
		}
		if p.Pos > pos {
			return 1
		}
		return 0
	})
	var out []Point[int]
	for k := 0; k < min(n, len(m)); k++ {
		out = append(out, m[(i+k)%len(m)])
	}
	return out
}

func sameWindow(t *testing.T, r *Ring[int], m model, pos uint64, n int) {
	t.Helper()
	got := r.Window(pos, make([]Point[int], 0, n))
	want := m.window(pos, n)
	if !slices.Equal(got, want) {
		t.Fatalf("window of %d at %#x: got %v, want %v", n, pos, got, want)
	}
}

// Random batches of additions and removals, at sizes that split leaves
// and fold subtrees back; every window must be the model's, and a ring
// already built must not change when a new one is made from it.
func TestRingMatchesSortedSliceThroughAddsAndRemoves(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ring := &Ring[int]{}
	var m model
	next := 0
	for step := 0; step < 400; step++ {
		old, oldModel := ring, slices.Clone(m)
		if r.IntN(3) > 0 || len(m) == 0 {
			batch := make([]Point[int], 1+r.IntN(200))
			for i := range batch {
				pos := r.Uint64()
				if r.IntN(10) == 0 { // clustered positions reach deep leaves
					pos = 0xabcd<<48 | uint64(r.IntN(8))
				}
				batch[i] = Point[int]{pos, next}
				next++
			}
			m = append(m, batch...)
			ring = ring.With(slices.Clone(batch))
		} else {
			var batch []Point[int]
			keep := m[:0:0]
			for _, p := range m {
				if r.IntN(2) == 0 {
					batch = append(batch, p)
				} else {
					keep = append(keep, p)
				}
			}
			batch = append(batch, Point[int]{r.Uint64(), -1}) // absent: ignored
			m = keep
			ring = ring.Without(batch)
		}
		slices.SortStableFunc(m, byPos)
		if ring.Len() != len(m) {
			t.Fatalf("step %d: Len %d, want %d", step, ring.Len(), len(m))
		}
		for k := 0; k < 20; k++ {
			sameWindow(t, ring, m, r.Uint64(), 1+r.IntN(40))
		}
		if len(m) > 0 {
			sameWindow(t, ring, m, m[len(m)-1].Pos, 3) // wraps
			sameWindow(t, ring, m, m[0].Pos, len(m)+5)
		}
		sameWindow(t, old, oldModel, r.Uint64(), 50)
	}
}

func TestEmptyRingHasNoWindow(t *testing.T) {
	var r Ring[int]
	if got := r.Window(42, make([]Point[int], 0, 8)); len(got) != 0 || r.Len() != 0 {
		t.Fatalf("empty ring: window %v, Len %d", got, r.Len())
	}
	one := r.With([]Point[int]{{7, 1}})
	if got := one.Without([]Point[int]{{7, 1}}); got.Len() != 0 || got.root != nil {
		t.Fatalf("ring after removing its only point: Len %d", got.Len())
	}
}
