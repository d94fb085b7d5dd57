package heap

import (
	"cmp"
	"fmt"
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
	})
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
			if h.At(i).Index != i {
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
			if n.Index != i || seen[n] {
				t.Fatalf("limit %d: node at %d records %d (duplicate: %v)", limit, i, n.Index, seen[n])
			}
			seen[n] = true
		}
	}
}

// swap exchanges the nodes at i and j, as the textbook sifts do.
func swap(h *Heap[int, int], i, j int) {
	a, b := h.items[i], h.items[j]
	h.items[i], h.items[j] = b, a
	a.Index, b.Index = j, i
}

// plainUp is the textbook sift: swap with the parent while the node goes
// before it. Up must place nodes exactly where it would.
func plainUp(h *Heap[int, int], i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.Less(h.At(i), h.At(parent)) {
			return
		}
		swap(h, i, parent)
		i = parent
	}
}

// tiedPair returns two equal heaps of size nodes with few distinct values
// and holder counts, so that ties are common and the tie-break matters.
// It builds them with the textbook sift, so that they do not depend on
// the code under test.
func tiedPair(rng *rand.Rand, size int) (got, want Heap[int, int]) {
	got, want = newIntHeap(), newIntHeap()
	for k := 0; k < size; k++ {
		value, holders := rng.Intn(8), rng.Intn(3)
		for _, h := range []*Heap[int, int]{&got, &want} {
			n := node.New(value, k, 0, 4)
			n.Holders = holders
			h.Append(n)
			plainUp(h, n.Index)
		}
	}
	return got, want
}

// sameLayout fails unless got holds the same keys as want, index by
// index, and every node of got records its index.
func sameLayout(t *testing.T, got, want *Heap[int, int], what string) {
	t.Helper()
	for j := 0; j < got.Len(); j++ {
		if got.At(j).Key != want.At(j).Key || got.At(j).Index != j {
			t.Fatalf("%s left key %d at %d, the plain sift key %d", what, got.At(j).Key, j, want.At(j).Key)
		}
	}
}

// ups are the ways a node rises: Up's search, with and without the top
// first, and Fix's climb.
var ups = []struct {
	name string
	up   func(*Heap[int, int], int)
}{
	{"Up", (*Heap[int, int]).Up},
	{"UpTopFirst", (*Heap[int, int]).UpTopFirst},
	{"climb", (*Heap[int, int]).climb},
}

// Up and UpTopFirst search the path instead of walking it, and climb
// compares before it moves anything: with ties in value and in holders, a
// node given any new value, nodes appended one by one, and a node that
// rises to the root all end where the plain sift puts them.
func TestUpPlacesNodesWhereAPlainSiftWould(t *testing.T) {
	for _, u := range ups {
		rng := rand.New(rand.NewSource(5))
		for trial := 0; trial < 300; trial++ {
			size := 1 + rng.Intn(300)
			got, want := tiedPair(rng, size)
			i := rng.Intn(size)
			value := rng.Intn(10) - 1
			if trial%4 == 0 {
				value = -1 // before every node: rises to the root
			}
			g, w := got.At(i), want.At(i)
			g.Value, w.Value = value, value
			u.up(&got, i)
			plainUp(&want, i)
			sameLayout(t, &got, &want, fmt.Sprintf("%s, trial %d: from %d to value %d", u.name, trial, i, value))
			plainDown(&got, g.Index)  // a value that went up sinks instead:
			plainDown(&want, w.Index) // the next sift needs the order whole

			n := node.New(rng.Intn(8), size, 0, 4)
			n.Holders = rng.Intn(3)
			m := node.New(n.Value, size, 0, 4)
			m.Holders = n.Holders
			got.Append(n)
			u.up(&got, n.Index)
			want.Append(m)
			plainUp(&want, m.Index)
			sameLayout(t, &got, &want, fmt.Sprintf("%s, trial %d: appending value %d", u.name, trial, n.Value))
		}
	}
}

// Up and climb compare before they write, so a comparator that panics at
// any point of a sift leaves every node where it was.
func TestPanicDuringUpChangesNothing(t *testing.T) {
	for _, u := range ups {
		for _, value := range []int{-1, 40} { // to the top, and to the middle
			for limit := 1; limit < 20; limit++ {
				h, arm := failingHeap(limit)
				for i := 0; i < 100; i++ {
					push(&h, node.New(i, i, 0, 1))
				}
				h.At(99).Value = value
				before := append([]*node.Node[int, int](nil), h.items...)
				arm()
				panicked := func() (panicked bool) {
					defer func() { panicked = recover() != nil }()
					u.up(&h, 99)
					return false
				}()
				if !panicked {
					continue // the sift ended before the limit: nothing to check
				}
				for i, n := range before {
					if h.At(i) != n || n.Index != i {
						t.Fatalf("%s to %d, limit %d: the panicking sift moved the node at %d", u.name, value, limit, i)
					}
				}
			}
		}
	}
}

// plainDown is the textbook sift: compare both children, swap with the
// smaller while it goes before the node. Down must place nodes exactly
// where it would.
func plainDown(h *Heap[int, int], i int) {
	for {
		child := 2*i + 1
		if child >= h.Len() {
			return
		}
		if right := child + 1; right < h.Len() && h.Less(h.At(right), h.At(child)) {
			child = right
		}
		if !h.Less(h.At(child), h.At(i)) {
			return
		}
		swap(h, i, child)
		i = child
	}
}

// Down sifts bottom-up: it finds a leaf first and climbs back. With an
// order that is consistent (value, then holders, with many ties), the
// node must end where the plain sift puts it, and every other node too.
func TestDownPlacesNodesWhereAPlainSiftWould(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for trial := 0; trial < 300; trial++ {
		size := 1 + rng.Intn(200)
		got, want := tiedPair(rng, size)
		i := rng.Intn(size)
		key, value := got.At(i).Key, rng.Intn(10)
		got.At(i).Value, want.At(i).Value = value, value
		moved := got.Down(i)
		plainDown(&want, i)
		sameLayout(t, &got, &want, fmt.Sprintf("trial %d: Down(%d) to value %d", trial, i, value))
		if stayed := got.At(i).Key == key; moved == stayed {
			t.Fatalf("trial %d: Down reported moved=%v", trial, moved)
		}
	}
}

// Down compares before it writes, so a comparator that panics at any
// point of a sift leaves every node where it was.
func TestPanicDuringDownChangesNothing(t *testing.T) {
	for limit := 1; limit < 20; limit++ {
		h, arm := failingHeap(limit)
		for i := 0; i < 100; i++ {
			push(&h, node.New(i, i, 0, 1))
		}
		h.At(0).Value = 1000
		before := append([]*node.Node[int, int](nil), h.items...)
		arm()
		panicked := func() (panicked bool) {
			defer func() { panicked = recover() != nil }()
			h.Down(0)
			return false
		}()
		if !panicked {
			continue // the sift ended before the limit: nothing to check
		}
		for i, n := range before {
			if h.At(i) != n || n.Index != i {
				t.Fatalf("limit %d: the panicking sift moved the node at %d", limit, i)
			}
		}
	}
}
