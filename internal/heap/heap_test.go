package heap

import (
	"cmp"
	"math/rand"
	"testing"

	"github.com/crsched/crs/internal/node"
)

func newIntHeap() Heap[int, int] { return New[int, int](cmp.Compare[int]) }

// valid checks that every node records its index and that no child is
// smaller than its parent.
func valid(t *testing.T, h *Heap[int, int]) {
	t.Helper()
	for i := 0; i < h.Len(); i++ {
		if h.At(i).Index != i {
			t.Fatalf("node at %d records index %d", i, h.At(i).Index)
		}
		if i > 0 && h.At((i-1)/2).Value > h.At(i).Value {
			t.Fatalf("order broken at %d", i)
		}
	}
}

func push(h *Heap[int, int], n *node.Node[int, int]) {
	h.Append(n)
	h.Up(n.Index)
}

// remove takes n out of h, restoring the order around the node that
// takes its place.
func remove(h *Heap[int, int], n *node.Node[int, int]) {
	i := n.Index
	h.Delete(i)
	if i < h.Len() {
		h.Fix(i)
	}
}

func pop(h *Heap[int, int]) *node.Node[int, int] {
	top := h.Top()
	h.Delete(0)
	if h.Len() > 0 {
		h.Down(0)
	}
	return top
}

func TestPopYieldsAscendingOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	h := newIntHeap()
	for i := 0; i < 500; i++ {
		push(&h, node.New(rng.Intn(100), i, 0, 1))
		valid(t, &h)
	}
	prev := -1
	for h.Len() > 0 {
		n := pop(&h)
		if n.Value < prev {
			t.Fatalf("popped %d after %d", n.Value, prev)
		}
		if n.Index != -1 {
			t.Fatalf("popped node keeps index %d", n.Index)
		}
		prev = n.Value
		valid(t, &h)
	}
}

func TestDeleteAndFixKeepTheHeapValid(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	h := newIntHeap()
	var live []*node.Node[int, int]
	for step := 0; step < 5000; step++ {
		switch op := rng.Intn(3); {
		case op == 0 || len(live) == 0:
			n := node.New(rng.Intn(1000), step, 0, 1)
			push(&h, n)
			live = append(live, n)
		case op == 1:
			k := rng.Intn(len(live))
			n := live[k]
			remove(&h, n)
			live = append(live[:k], live[k+1:]...)
			if n.Index != -1 {
				t.Fatal("deleted node keeps its index")
			}
		default:
			n := live[rng.Intn(len(live))]
			n.Value = rng.Intn(1000)
			h.Fix(n.Index)
		}
		valid(t, &h)
		if h.Len() != len(live) {
			t.Fatalf("heap holds %d, want %d", h.Len(), len(live))
		}
	}
}

func TestInitOrdersAnyPermutation(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	h := newIntHeap()
	h.Grow(300)
	for i := 0; i < 300; i++ {
		h.Append(node.New(rng.Intn(50), i, 0, 1))
	}
	h.Init()
	valid(t, &h)
}

// TestPanickingComparatorLeavesAValidContainer is the property the
// scheduler's panic safety rests on: whenever the comparator panics, every
// node is still at the index it records.
func TestPanickingComparatorLeavesAValidContainer(t *testing.T) {
	for limit := 1; limit < 40; limit++ {
		calls := 0
		h := New[int, int](func(a, b int) int {
			calls++
			if calls == limit {
				panic("boom")
			}
			return cmp.Compare(a, b)
		})
		func() {
			defer func() { _ = recover() }()
			for i := 0; i < 64; i++ {
				push(&h, node.New(64-i, i, 0, 1))
			}
		}()
		for i := 0; i < h.Len(); i++ {
			if h.At(i).Index != i {
				t.Fatalf("limit %d: node at %d records %d", limit, i, h.At(i).Index)
			}
		}
	}
}

func TestPanicDuringSiftDownLeavesAValidContainer(t *testing.T) {
	for limit := 1; limit < 30; limit++ {
		calls, armed := 0, false
		h := New[int, int](func(a, b int) int {
			if armed {
				if calls++; calls == limit {
					panic("boom")
				}
			}
			return cmp.Compare(a, b)
		})
		for i := 0; i < 64; i++ {
			push(&h, node.New(i, i, 0, 1))
		}
		armed = true
		func() {
			defer func() { _ = recover() }()
			for h.Len() > 0 {
				pop(&h)
			}
		}()
		seen := map[*node.Node[int, int]]bool{}
		for i := 0; i < h.Len(); i++ {
			n := h.At(i)
			if n.Index != i || seen[n] {
				t.Fatalf("limit %d: node at %d records %d (duplicate: %v)", limit, i, n.Index, seen[n])
			}
			seen[n] = true
		}
	}
}
