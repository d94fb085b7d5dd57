package heap

import (
	"cmp"
	"math/rand"
	randv2 "math/rand/v2"
	"testing"

	"github.com/crsched/crs/internal/node"
)

func newIntHeap() Heap[int, int] { return New[int, int](cmp.Compare[int], false) }

// valid checks that every node records its index and that no child is
// smaller than its parent.
func valid(t *testing.T, h *Heap[int, int]) {
	t.Helper()
	for i := 0; i < h.Len(); i++ {
		if int(h.At(i).Index) != i {
			t.Fatalf("node at %d records index %d", i, h.At(i).Index)
		}
		if i > 0 && h.At((i-1)/2).Value > h.At(i).Value {
			t.Fatalf("order broken at %d", i)
		}
	}
}

func push(h *Heap[int, int], n *node.Node[int, int]) { h.Push(n) }

// remove takes n out of h, restoring the order around the node that
// takes its place.
func remove(h *Heap[int, int], n *node.Node[int, int]) { h.Remove(n) }

func pop(h *Heap[int, int]) *node.Node[int, int] {
	return h.Pop()
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
			h.Fix(n)
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

// failingHeap returns a heap of ints whose comparator, once arm is
// called, panics on its limit-th call.
func failingHeap(limit int) (h Heap[int, int], arm func()) {
	calls, armed := 0, false
	h = New[int, int](func(a, b int) int {
		if armed {
			if calls++; calls == limit {
				panic("boom")
			}
		}
		return cmp.Compare(a, b)
	}, false)
	return h, func() { armed = true }
}

// TestPanickingComparatorLeavesAValidContainer is the property the
// scheduler's panic safety rests on: whenever the comparator panics, every
// node is still at the index it records.
func TestPanickingComparatorLeavesAValidContainer(t *testing.T) {
	for limit := 1; limit < 40; limit++ {
		h, arm := failingHeap(limit)
		arm()
		func() {
			defer func() { _ = recover() }()
			for i := 0; i < 64; i++ {
				push(&h, node.New(64-i, i, 0, 1))
			}
		}()
		for i := 0; i < h.Len(); i++ {
			if int(h.At(i).Index) != i {
				t.Fatalf("limit %d: node at %d records %d", limit, i, h.At(i).Index)
			}
		}
	}
}

func TestPanicDuringSiftDownLeavesAValidContainer(t *testing.T) {
	for limit := 1; limit < 30; limit++ {
		h, arm := failingHeap(limit)
		for i := 0; i < 64; i++ {
			push(&h, node.New(i, i, 0, 1))
		}
		arm()
		func() {
			defer func() { _ = recover() }()
			for h.Len() > 0 {
				pop(&h)
			}
		}()
		seen := map[*node.Node[int, int]]bool{}
		for i := 0; i < h.Len(); i++ {
			n := h.At(i)
			if int(n.Index) != i || seen[n] {
				t.Fatalf("limit %d: node at %d records %d (duplicate: %v)", limit, i, n.Index, seen[n])
			}
			seen[n] = true
		}
	}
}

// TestPanicDuringFixLeavesTheSameNodes: a node that changed value and
// sinks or rises when the comparator panics leaves the heap holding the
// same nodes, each at the index it records, and Init orders them again.
func TestPanicDuringFixLeavesTheSameNodesForInit(t *testing.T) {
	for _, value := range []int{-1, 1000} { // rises to the top, sinks to a leaf
		for limit := 1; limit < 30; limit++ {
			h, arm := failingHeap(limit)
			for i := 0; i < 100; i++ {
				push(&h, node.New(i, i, 0, 1))
			}
			at := 40
			if value > 0 {
				at = 0
			}
			h.At(at).Value = value
			before := map[*node.Node[int, int]]bool{}
			for i := 0; i < h.Len(); i++ {
				before[h.At(i)] = true
			}
			arm()
			func() {
				defer func() { _ = recover() }()
				h.Fix(h.At(at))
			}()
			seen := map[*node.Node[int, int]]bool{}
			for i := 0; i < h.Len(); i++ {
				n := h.At(i)
				if int(n.Index) != i || seen[n] || !before[n] {
					t.Fatalf("value %d, limit %d: node at %d records %d (repeated %v, new %v)", value, limit, i, n.Index, seen[n], !before[n])
				}
				seen[n] = true
			}
			if len(seen) != len(before) {
				t.Fatalf("value %d, limit %d: %d nodes left of %d", value, limit, len(seen), len(before))
			}
			h.cmp = cmp.Compare[int]
			h.Init()
			valid(t, &h)
		}
	}
}

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
	h := New[int, int](cmp.Compare[int], false)
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
	h.Delete(0) // the last node moves into the hole, unordered
	if h.Len() != 1 || h.At(0) != ns[1] || ns[1].Index != 0 || ns[0].Index != -1 {
		t.Fatal("Delete did not move the last node into the hole")
	}
}

func TestDownReportsWhetherTheNodeMoved(t *testing.T) {
	h := newIntHeap()
	for _, v := range []int{1, 2, 3} {
		h.Append(node.New(v, v, 0, 1))
	}
	if h.down(0) {
		t.Fatal("down moved a node that was in order")
	}
	h.At(0).Value = 9
	if !h.down(0) || h.At(0).Value != 2 {
		t.Fatal("Down did not sink the larger root below its smaller child")
	}
	valid(t, &h)
}

// The order is by value, then by fewer holders, and every sift keeps it:
// random values from a small range (so that ties are common) and random
// holder counts, changed and removed at random, and after each step no
// child may go before its parent in that order.
func TestSiftsKeepTheOrderOfValueThenHolders(t *testing.T) {
	rng := randv2.New(randv2.NewPCG(1, 2))
	h := New[int, int](cmp.Compare[int], false)
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
			n.Holders = int32(rng.IntN(4))
			h.Push(n)
			in = append(in, n)
			check("Push")
		case op == 2:
			n := in[rng.IntN(len(in))]
			n.Holders = int32(rng.IntN(4))
			h.Fix(n)
			check("Fix")
		default:
			j := rng.IntN(len(in))
			remove(&h, in[j])
			in[j] = in[len(in)-1]
			in = in[:len(in)-1]
			check("Remove")
		}
	}
}

// A lazy heap puts a removed top pushed back where it was, comparing it
// with its two children only, and any other call sifts first.

func TestALazyHeapPutsTheTopBackWithTwoComparisons(t *testing.T) {
	compared := 0
	h := New[int, int](func(a, b int) int { compared++; return cmp.Compare(a, b) }, true)
	for i := 0; i < 100; i++ {
		h.Push(node.New(i, i, 0, 1))
	}
	before := append([]*node.Node[int, int](nil), h.items...)
	top := h.Top()
	compared = 0
	h.Pop()
	if top.Index != -1 || h.Len() != 99 || compared != 0 {
		t.Fatalf("Pop: index %d, Len %d, %d comparisons; want -1, 99, none", top.Index, h.Len(), compared)
	}
	h.Push(top)
	if compared > 2 {
		t.Fatalf("pushing the top back compared %d times, want at most 2", compared)
	}
	for i, n := range before {
		if h.At(i) != n || int(n.Index) != i {
			t.Fatalf("node %d moved: the heap is not as it was", i)
		}
	}
}

func TestALazyHeapStaysInOrderWhateverComesBetween(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	h := New[int, int](cmp.Compare[int], true)
	var in, out []*node.Node[int, int]
	for step := 0; step < 5000; step++ {
		switch op := rng.Intn(5); {
		case op == 0 || len(in) == 0:
			n := node.New(rng.Intn(50), step, 0, 1)
			h.Push(n)
			in = append(in, n)
		case op == 1: // the common case: take the top, maybe give it back
			top := h.Pop()
			for k, n := range in {
				if n == top {
					in = append(in[:k], in[k+1:]...)
					break
				}
			}
			out = append(out, top)
		case op == 2 && len(out) > 0: // give back one taken, changed or not
			k := rng.Intn(len(out))
			n := out[k]
			out = append(out[:k], out[k+1:]...)
			if rng.Intn(2) == 0 {
				n.Value = rng.Intn(50)
			}
			h.Push(n)
			in = append(in, n)
		case op == 3:
			h.Top() // no change to a node in the heap while a sift waits
			n := in[rng.Intn(len(in))]
			n.Value = rng.Intn(50)
			h.Fix(n)
		default:
			k := rng.Intn(len(in))
			h.Remove(in[k])
			out = append(out, in[k])
			in = append(in[:k], in[k+1:]...)
		}
		if h.Len() != len(in) {
			t.Fatalf("step %d: heap holds %d, want %d", step, h.Len(), len(in))
		}
		if rng.Intn(3) != 0 {
			continue // leave a sift waiting, for the next step to meet
		}
		if top := h.Top(); top != nil {
			for _, n := range in {
				if n.Value < top.Value {
					t.Fatalf("step %d: top %d, but %d is in the heap", step, top.Value, n.Value)
				}
			}
		}
		valid(t, &h)
	}
}
