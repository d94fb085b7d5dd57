package heap

import (
	"cmp"
	"math/rand/v2"
	"testing"

	"github.com/crsched/crs/internal/node"
)

// Tests added to kill mutants the other tests let live (docs/TESTING.md).

func TestGrowMakesRoomWithoutReallocatingWhatFits(t *testing.T) {
	h := newIntHeap()
	h.Grow(4)
	if free := cap(h.items) - len(h.items); free < 4 {
		t.Fatalf("Grow(4) left room for %d", free)
	}
	for i := range 2 {
		h.Append(node.New(i, i, 0, 1))
	}
	before := &h.items[:1][0]
	h.Grow(2) // exactly the room left: no new array
	if &h.items[:1][0] != before {
		t.Fatal("Grow reallocated although the room was there")
	}
	h.Grow(3) // one more than the room left
	if free := cap(h.items) - len(h.items); free < 3 {
		t.Fatalf("Grow(3) left room for %d", free)
	}
	if h.Len() != 2 || h.At(0).Value != 0 || h.At(1).Value != 1 {
		t.Fatal("Grow lost or moved nodes")
	}
}

func TestTopOfEmptyHeapIsNil(t *testing.T) {
	h := newIntHeap()
	if h.Top() != nil {
		t.Fatal("empty heap has a top")
	}
	n := node.New(7, 7, 0, 1)
	push(&h, n)
	if h.Top() != n {
		t.Fatal("the only node is not the top")
	}
}

func TestEqualValuesOrderByFewerHolders(t *testing.T) {
	h := New[int, int](cmp.Compare[int])
	busy, idle := node.New(1, 1, 0, 5), node.New(1, 2, 0, 5)
	busy.Holders, idle.Holders = 2, 1
	if !h.Less(idle, busy) || h.Less(busy, idle) || h.Less(idle, idle) {
		t.Fatal("among equal values the one with fewer holders must go first, strictly")
	}
	better := node.New(0, 3, 0, 5)
	better.Holders = 9
	if !h.Less(better, idle) {
		t.Fatal("the comparator must outrank holders")
	}
}

func TestDeleteOfTheLastNodeLeavesTheOthersInPlace(t *testing.T) {
	h := newIntHeap()
	ns := []*node.Node[int, int]{node.New(1, 1, 0, 1), node.New(2, 2, 0, 1), node.New(3, 3, 0, 1)}
	for _, n := range ns {
		push(&h, n)
	}
	h.Delete(2)
	if ns[2].Index != -1 || h.Len() != 2 || h.At(0) != ns[0] || h.At(1) != ns[1] || ns[1].Index != 1 {
		t.Fatal("Delete of the last index moved other nodes")
	}
	h.Delete(0) // the last node moves into the hole
	if h.Len() != 1 || h.At(0) != ns[1] || ns[1].Index != 0 || ns[0].Index != -1 {
		t.Fatal("Delete did not move the last node into the hole")
	}
}

func TestDownReportsWhetherTheNodeMoved(t *testing.T) {
	h := newIntHeap()
	for _, v := range []int{1, 2, 3} {
		h.Append(node.New(v, v, 0, 1))
	}
	if h.Down(0) {
		t.Fatal("Down moved a node that was in order")
	}
	h.At(0).Value = 9
	if !h.Down(0) || h.At(0).Value != 2 {
		t.Fatal("Down did not sink the larger root below its smaller child")
	}
	valid(t, &h)
}

// The order is by value, then by fewer holders, and every sift keeps it:
// random values from a small range (so that ties are common) and random
// holder counts, changed and removed at random, and after each step no
// child may go before its parent in that order.
func TestSiftsKeepTheOrderOfValueThenHolders(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := New[int, int](cmp.Compare[int])
	var in []*node.Node[int, int]
	check := func(step string) {
		t.Helper()
		for i := 1; i < h.Len(); i++ {
			if p := h.At((i - 1) / 2); h.Less(h.At(i), p) {
				c := h.At(i)
				t.Fatalf("after %s: child %d (value %d, %d holders) goes before its parent (value %d, %d holders)", step, i, c.Value, c.Holders, p.Value, p.Holders)
			}
		}
	}
	for key := 0; key < 2000; key++ {
		switch op := rng.IntN(4); {
		case op < 2 || len(in) == 0:
			n := node.New(rng.IntN(3), key, 0, 8)
			n.Holders = rng.IntN(4)
			h.Append(n)
			h.Up(n.Index)
			in = append(in, n)
			check("Append and Up")
		case op == 2:
			n := in[rng.IntN(len(in))]
			n.Holders = rng.IntN(4)
			h.Fix(n.Index)
			check("Fix")
		default:
			j := rng.IntN(len(in))
			remove(&h, in[j])
			in[j] = in[len(in)-1]
			in = in[:len(in)-1]
			check("Delete and Fix")
		}
	}
}
