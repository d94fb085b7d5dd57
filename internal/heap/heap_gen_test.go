package heap

import (
	"cmp"
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
