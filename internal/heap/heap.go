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
package heap

import "github.com/crsched/crs/internal/node"

// Heap orders nodes by cmp on their values, smallest first; among equal
// values, the node with fewer holders comes first, so equally good
// resources share the load.
type Heap[T any, ID comparable] struct {
	items []*node.Node[T, ID]
	cmp   func(a, b T) int
}

// New returns an empty heap ordered by cmp.
func New[T any, ID comparable](cmp func(a, b T) int) Heap[T, ID] {
	return Heap[T, ID]{cmp: cmp}
}

// Len is the number of nodes in the heap.
func (h *Heap[T, ID]) Len() int { return len(h.items) }

// Top is the smallest node, or nil when the heap is empty.
func (h *Heap[T, ID]) Top() *node.Node[T, ID] {
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

// Append places n at the end without ordering it.
func (h *Heap[T, ID]) Append(n *node.Node[T, ID]) {
	n.Index = len(h.items)
	h.items = append(h.items, n)
}

// Delete takes the node at index i out of the heap by moving the last node
// into its place, without ordering that node.
func (h *Heap[T, ID]) Delete(i int) {
	last := len(h.items) - 1
	removed := h.items[i]
	if i != last {
		h.items[i] = h.items[last]
		h.items[i].Index = i
	}
	h.items[last] = nil // let the garbage collector have removed nodes
	h.items = h.items[:last]
	removed.Index = -1
}

// Push adds n to the heap in order.
func (h *Heap[T, ID]) Push(n *node.Node[T, ID]) {
	h.Append(n)
	h.Up(n.Index)
}

// Remove takes the node at index i out of the heap and restores the order
// around the node moved into its place. If the comparator panics, the
// node is out all the same.
func (h *Heap[T, ID]) Remove(i int) {
	h.Delete(i)
	if i < len(h.items) {
		h.Fix(i)
	}
}

// Fix restores the order after the node at index i changed value or
// holder count.
func (h *Heap[T, ID]) Fix(i int) {
	if !h.down(i) {
		h.Up(i)
	}
}

// Init orders the whole heap in O(n).
func (h *Heap[T, ID]) Init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// Up moves the node at index i toward the root while it goes before its
// parent.
func (h *Heap[T, ID]) Up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.swap(i, parent)
		i = parent
	}
}

// down moves the node at index i toward the leaves while a child goes
// before it, and reports whether it moved.
func (h *Heap[T, ID]) down(i int) bool {
	start, size := i, len(h.items)
	for {
		child := 2*i + 1
		if child >= size {
			break
		}
		if right := child + 1; right < size && h.less(right, child) {
			child = right
		}
		if !h.less(child, i) {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}

// Less reports whether a goes before b in the heap order: the comparator,
// then fewer holders first.
func (h *Heap[T, ID]) Less(a, b *node.Node[T, ID]) bool {
	if c := h.cmp(a.Value, b.Value); c != 0 {
		return c < 0
	}
	return a.Holders < b.Holders
}

// less is Less by index, written out: a call per comparison costs more
// than the comparison.
func (h *Heap[T, ID]) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	c := h.cmp(a.Value, b.Value)
	return c < 0 || c == 0 && a.Holders < b.Holders
}

func (h *Heap[T, ID]) swap(i, j int) {
	a, b := h.items[i], h.items[j]
	h.items[i], h.items[j] = b, a
	a.Index, b.Index = j, i
}
