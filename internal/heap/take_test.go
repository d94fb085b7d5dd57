package heap

import (
	"cmp"
	"math/rand"
	"testing"

	"github.com/crsched/crs/internal/node"
)

func randomHeap(rng *rand.Rand, size int) Heap[int, int] {
	h := newIntHeap()
	for i := 0; i < size; i++ {
		push(&h, node.New(rng.Intn(size), i, 0, 1))
	}
	return h
}

func layout(h *Heap[int, int]) []*node.Node[int, int] {
	return append([]*node.Node[int, int](nil), h.items...)
}

func TestReturnAfterTakeTopRestoresTheHeapExactly(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for size := 1; size < 40; size++ {
		h := randomHeap(rng, size)
		before := layout(&h)
		top := h.Top()
		h.TakeTop()
		if h.Len() != size-1 || top.Index != -1 || h.Taken() != top {
			t.Fatalf("size %d: after TakeTop Len %d, top's index %d, Taken %v", size, h.Len(), top.Index, h.Taken())
		}
		if !h.Return(top) {
			t.Fatalf("size %d: Return of the node taken refused", size)
		}
		if h.Taken() != nil || h.Len() != size {
			t.Fatalf("size %d: after Return Taken %v, Len %d", size, h.Taken(), h.Len())
		}
		sameLayout(t, &h, &Heap[int, int]{items: before}, "Return")
		valid(t, &h)
	}
}

func TestReturnRefusesAnyNodeButTheOneTakenWhileUnsettled(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	h := randomHeap(rng, 20)
	top := h.Top()
	if h.Return(top) {
		t.Fatal("Return accepted a node although nothing was taken")
	}
	h.TakeTop()
	if h.Return(h.At(3)) || h.Return(nil) {
		t.Fatal("Return accepted a node that was not taken")
	}
	h.Settle()
	if h.Taken() != nil {
		t.Fatal("still taken after Settle")
	}
	if h.Return(top) {
		t.Fatal("Return accepted the node taken after the heap was settled")
	}
	valid(t, &h)
}

func TestSettleLeavesTheHeapAsAPopWould(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for size := 1; size < 40; size++ {
		h := randomHeap(rng, size)
		want := Heap[int, int]{items: layout(&h), cmp: h.cmp}
		pop(&want)
		h.TakeTop()
		h.Settle()
		sameLayout(t, &h, &want, "Settle")
		valid(t, &h)
	}
}

func TestInitForgetsTheNodeTaken(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	h := randomHeap(rng, 20)
	top := h.Top()
	h.TakeTop()
	h.Init()
	if h.Taken() != nil || h.Return(top) {
		t.Fatal("the node taken can still be returned after Init")
	}
	valid(t, &h)
}

func TestAReturnedNodeThatChangedSinksWithFixAtTheRoot(t *testing.T) {
	h := newIntHeap()
	for i := 0; i < 10; i++ {
		push(&h, node.New(i, i, 0, 1))
	}
	top := h.Top()
	h.TakeTop()
	top.Value = 100
	h.Return(top)
	h.Fix(0)
	valid(t, &h)
	if h.Top().Value != 1 {
		t.Fatalf("top is %d, want 1", h.Top().Value)
	}
}

// A node given back with the priority it was taken at, when the heap was
// settled meanwhile, goes back through UpTopFirst: one comparison with
// the top puts it there, where Up's search would make several.
func TestUpTopFirstPlacesANodeThatBeatsTheTopWithOneComparison(t *testing.T) {
	compared := 0
	h := New[int, int](func(a, b int) int {
		compared++
		return cmp.Compare(a, b)
	})
	for i := 1; i <= 100; i++ {
		push(&h, node.New(i, i, 0, 1))
	}
	n := node.New(0, 0, 0, 1)
	h.Append(n)
	compared = 0
	h.UpTopFirst(n.Index)
	if compared != 1 || h.Top() != n {
		t.Fatalf("UpTopFirst made %d comparisons, top %v; want 1 and the node given back", compared, h.Top().Key)
	}
	valid(t, &h)
}
