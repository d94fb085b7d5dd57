// Package heap is a binary min-heap of nodes that keeps each node's
// position in the node itself, so a node can be fixed or removed in
// O(log n) without a search. It is shaped like container/heap, without
// the interface calls.
//
// Append and Delete change which nodes the heap holds and call no user
// code; Push, Remove, Fix, Up and Init also restore the order and call the
// comparator, which is user code and may panic. The sifts move nodes by
// swapping two of them at a time, each swap after the comparison that
// decides it, so a panic leaves the heap a valid container (every node at
// the index it records, no node lost or repeated), only out of order: the
// caller undoes its structural move with Append or Delete and has Init
// run before the order is next relied on.
//
// A lazy heap (see New) leaves the sift after a Pop to the next call that
// needs the order, so that a top popped and pushed back
// before anything else happens to the heap costs two comparisons instead
// of two sifts: the common exclusive use of a resource. The sift that
// waits runs in Top, Append, Push, Remove and Fix, with their
// comparisons. It compares the values it finds, so a caller must not
// change a node in the heap while a sift waits.
package heap

import "github.com/crsched/crs/internal/node"

// Heap orders nodes by cmp on their values, smallest first; among equal
// values, the node whose budgets are full again first (Node.FullAt: the
// most budget left), then the one with fewer holders, so equally good
// resources share the load.
type Heap[T any, ID comparable] struct {
	items []*node.Node[T, ID]
	cmp   func(a, b T) int
	lazy  bool
	// taken is the top that a lazy Pop took out while the sift that
	// fills its place waits: the root holds the node that was last, and
	// every other node is where it was. nil otherwise.
	taken *node.Node[T, ID]
}

// New returns an empty heap ordered by cmp; lazy as described in the
// package documentation. A lazy heap's root is not its best node between
// a Pop and the next call that sifts, so only a caller that reads the
// root through Top may use one.
func New[T any, ID comparable](cmp func(a, b T) int, lazy bool) Heap[T, ID] {
	return Heap[T, ID]{cmp: cmp, lazy: lazy}
}

// Len is the number of nodes in the heap.
func (h *Heap[T, ID]) Len() int { return len(h.items) }

// Top is the smallest node, or nil when the heap is empty.
func (h *Heap[T, ID]) Top() *node.Node[T, ID] {
	h.settle()
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// At returns the node at index i.
func (h *Heap[T, ID]) At(i int) *node.Node[T, ID] { return h.items[i] }

// Grow makes room for n more nodes without reallocating.
func (h *Heap[T, ID]) Grow(n int) {
	if free := cap(h.items) - len(h.items); free < n {
		grown := make([]*node.Node[T, ID], len(h.items), len(h.items)+n)
		copy(grown, h.items)
		h.items = grown
	}
}

// Append places n at the end without ordering it. It compares nothing
// unless a sift waits.
func (h *Heap[T, ID]) Append(n *node.Node[T, ID]) {
	h.settle()
	n.Index = int32(len(h.items))
	h.items = append(h.items, n)
}

// Delete takes the node at index i out of the heap by moving the last node
// into its place, without ordering that node. It compares nothing.
func (h *Heap[T, ID]) Delete(i int) {
	last := len(h.items) - 1
	removed := h.items[i]
	if i != last {
		h.items[i] = h.items[last]
		h.items[i].Index = int32(i)
	}
	h.items[last] = nil // let the garbage collector have removed nodes
	h.items = h.items[:last]
	removed.Index = -1
}

// Return puts n back at the end of the heap without ordering it and
// without running a sift that waits, which is forgotten: for undoing a
// step in which the comparator panicked. The heap is then only a valid
// container, and its caller has Init run before the order is relied on.
func (h *Heap[T, ID]) Return(n *node.Node[T, ID]) {
	h.taken = nil
	n.Index = int32(len(h.items))
	h.items = append(h.items, n)
}

// Push adds n to the heap in order. The top that a lazy Pop took out
// goes back to the root, the node moved there back to the end, and it
// sinks if it no longer goes before its children.
func (h *Heap[T, ID]) Push(n *node.Node[T, ID]) {
	if n == h.taken {
		h.taken = nil
		if len(h.items) > 0 {
			moved := h.items[0]
			moved.Index = int32(len(h.items))
			h.items = append(h.items, moved)
		} else {
			h.items = append(h.items, nil)
		}
		h.items[0], n.Index = n, 0
		h.down(0)
		return
	}
	h.Append(n)
	h.Up(int(n.Index))
}

// Pop takes the top out of the heap, which must not be empty, and
// restores the order around the node moved into its place (a lazy heap
// does that later). The top is out once the sift begins, even if the
// comparator panics.
func (h *Heap[T, ID]) Pop() *node.Node[T, ID] {
	top := h.Top()
	if h.lazy {
		h.Delete(0)
		h.taken = top
		return top
	}
	h.Remove(top)
	return top
}

// Remove takes n out of the heap and restores the order around the node
// moved into its place. n is out once the sift begins, even if the
// comparator panics.
func (h *Heap[T, ID]) Remove(n *node.Node[T, ID]) {
	h.settle()
	i := int(n.Index)
	h.Delete(i)
	if i < len(h.items) {
		h.fix(i)
	}
}

// Fix restores the order after n changed value or holder count.
func (h *Heap[T, ID]) Fix(n *node.Node[T, ID]) {
	h.settle()
	h.fix(int(n.Index))
}

func (h *Heap[T, ID]) fix(i int) {
	if !h.down(i) {
		h.Up(i)
	}
}

// Waiting returns the top that a lazy Pop took out while the sift that
// fills its place waits, or nil.
func (h *Heap[T, ID]) Waiting() *node.Node[T, ID] { return h.taken }

// settle runs the sift that a lazy Pop left, if any.
func (h *Heap[T, ID]) settle() {
	if h.taken != nil {
		h.taken = nil
		if len(h.items) > 0 {
			h.down(0)
		}
	}
}

// Init orders the whole heap in O(n).
func (h *Heap[T, ID]) Init() {
	h.taken = nil
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// Up moves the node at index i toward the root while it goes before its
// parent. Call it only after an Append, with no sift waiting.
func (h *Heap[T, ID]) Up(i int) {
	items, n := h.items, h.items[i]
	for i > 0 {
		parent := (i - 1) / 2
		p := items[parent]
		if !h.Less(n, p) {
			break
		}
		items[i], items[parent] = p, n
		p.Index, n.Index = int32(i), int32(parent)
		i = parent
	}
}

// down moves the node at index i toward the leaves while a child goes
// before it, and reports whether it moved.
func (h *Heap[T, ID]) down(i int) bool {
	items, n, start := h.items, h.items[i], i
	for {
		child := 2*i + 1
		if child >= len(items) {
			break
		}
		c := items[child]
		if right := child + 1; right < len(items) && h.Less(items[right], c) {
			child, c = right, items[right]
		}
		if !h.Less(c, n) {
			break
		}
		items[i], items[child] = c, n
		c.Index, n.Index = int32(i), int32(child)
		i = child
	}
	return i > start
}

// Less reports whether a goes before b in the heap order: the comparator,
// then the earlier FullAt, then fewer holders.
func (h *Heap[T, ID]) Less(a, b *node.Node[T, ID]) bool {
	if c := h.cmp(a.Value, b.Value); c != 0 {
		return c < 0
	}
	fa, fb := a.FullAt(), b.FullAt()
	return fa < fb || fa == fb && a.Holders < b.Holders
}
