package queue

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// A heap of a few hundred classes, several levels deep, keeps its order
// through random pushes, removals and changes of key: emptied by its
// top, it gives the classes by virtual time (or by the end of their
// parking) and then by seq, ties never broken otherwise.
func TestAClassHeapGivesItsClassesInKeyOrderAtAnyDepth(t *testing.T) {
	for _, byTime := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(7, 44))
		h := classHeap[int]{byTime: byTime}
		var in []*class[int]
		var seq uint64
		key := func(c *class[int]) {
			seq++
			c.vtime, c.parked, c.seq = float64(rng.IntN(50)), int64(1+rng.IntN(50)), seq
		}
		for range 2000 {
			switch op := rng.IntN(4); {
			case op < 2 || len(in) == 0:
				c := &class[int]{}
				key(c)
				h.push(c)
				in = append(in, c)
			case op == 2:
				i := rng.IntN(len(in))
				h.remove(in[i])
				in = slices.Delete(in, i, i+1)
			default:
				c := in[rng.IntN(len(in))]
				key(c)
				h.fix(c)
			}
		}
		if len(in) < 200 {
			t.Fatalf("the heap holds %d classes: too shallow to test", len(in))
		}
		slices.SortFunc(in, func(a, b *class[int]) int {
			if byTime {
				return cmp.Or(cmp.Compare(a.parked, b.parked), cmp.Compare(a.seq, b.seq))
			}
			return cmp.Or(cmp.Compare(a.vtime, b.vtime), cmp.Compare(a.seq, b.seq))
		})
		for i, want := range in {
			if got := h.top(); got != want {
				t.Fatalf("byTime %v: class %d out of the heap is seq %d, want seq %d", byTime, i, got.seq, want.seq)
			}
			h.remove(h.top())
		}
		if h.len() != 0 {
			t.Fatalf("byTime %v: %d classes left", byTime, h.len())
		}
	}
}
