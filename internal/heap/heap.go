// Package heap is a binary min-heap of nodes that keeps each node's
// position in the node itself, so a node can be fixed or removed in
// O(log n) without a search.
//
// It separates structural moves from ordering. Append and Delete change
// which nodes the heap holds and call no user code; Up, Down, Fix and Init
// restore the order and call the comparator, which is user code and may
// panic. Whenever it panics, every node is still at the index it records,
// so the heap is a valid container, only out of order; the caller marks it
// for Init and carries on. This is what lets the scheduler
// survive a panicking comparator without losing or duplicating a resource.
package heap

import (
	"math/bits"

	"github.com/crsched/crs/internal/node"
)

// Heap orders nodes by cmp on their values, smallest first; among equal
// values, the node with fewer holders comes first, so equally good
// resources share the load.
type Heap[T any, ID comparable] struct {
	items []*node.Node[T, ID]
	cmp   func(a, b T) int
	// taken is the node TakeTop took out, while the heap is as TakeTop
	// left it: in order but for the root, the node that was last. Until
	// Settle (or Return, or Init) only Len and Taken may be used; nil
	// otherwise.
	taken *node.Node[T, ID]
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

// Append places n at the end without ordering it (structural).
func (h *Heap[T, ID]) Append(n *node.Node[T, ID]) {
	n.Index = len(h.items)
	h.items = append(h.items, n)
}

// Delete takes the node at index i out of the heap by moving the last node
// into its place (structural). If i < Len() afterwards, the moved node may
// be out of order and the caller must Fix(i).
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

// TakeTop takes the top out of the heap like Delete(0), but leaves the
// node moved into its place unsifted until Settle (structural). Until
// then Return can put the top back in O(1), exactly where it was: a
// resource taken and given back before anything else happens to its
// heap, the common exclusive use, costs neither sift.
func (h *Heap[T, ID]) TakeTop() {
	top := h.items[0]
	h.Delete(0)
	h.taken = top
}

// Taken returns the node TakeTop took out if the heap is not settled
// since, or nil.
func (h *Heap[T, ID]) Taken() *node.Node[T, ID] { return h.taken }

// Settle sifts down the node that TakeTop moved to the root.
func (h *Heap[T, ID]) Settle() {
	if h.taken == nil {
		return
	}
	h.taken = nil
	if len(h.items) > 1 {
		h.Down(0)
	}
}

// Return undoes TakeTop if n is the node it took out and the heap is not
// settled since, and reports whether it did (structural): n goes back to
// the root and the node moved there back to the end. If n's value or
// holders changed meanwhile, the caller must Fix(0).
func (h *Heap[T, ID]) Return(n *node.Node[T, ID]) bool {
	if n == nil || h.taken != n {
		return false
	}
	h.taken = nil
	if len(h.items) == 0 {
		h.Append(n)
		return true
	}
	moved := h.items[0]
	h.Append(moved)
	h.items[0], n.Index = n, 0
	return true
}

// Fix restores the order after the node at index i changed or moved.
// A node that does not sink climbs level by level, not by Up's gallop: a
// changed value may belong anywhere, most nodes sit near the leaves, and
// so most such nodes stay or rise a few levels, where the gallop compares
// ancestors past the node's place (rising two levels, it compares four,
// up to four levels up, where climbing compares three). Update, whose
// every call ends here, takes 4 to 5 % less that way (docs/BENCHMARKS.md,
// "Fix climbs").
func (h *Heap[T, ID]) Fix(i int) {
	if !h.Down(i) {
		h.climb(i)
	}
}

// climb moves the node at index i toward the root while it goes before
// its parent, comparing with one ancestor after another; like Up, it
// compares before it writes.
func (h *Heap[T, ID]) climb(i int) {
	items := h.items
	n := items[i]
	levels := 0
	for j := i; j > 0; levels++ {
		j = (j - 1) / 2
		a := items[j]
		if c := h.cmp(n.Value, a.Value); c > 0 || c == 0 && n.Holders >= a.Holders {
			break
		}
	}
	h.raise(i, levels)
}

// Up moves the node at index i toward the root while it goes before its
// parent.
//
// The ancestors of i are in order, so it searches their path for the
// node's place instead of comparing level by level: it gallops up (one,
// two, four levels...) until it overshoots or reaches the root, then
// bisects. A node that stays or rises a level costs one or two
// comparisons, as in a plain sift; one that rises to the root of a heap
// of depth d about log2(d), where a plain sift compares d times. Then it
// shifts the nodes it passes down a level.
//
// Every comparison comes before the first write, so a comparator that
// panics leaves the heap exactly as it was.
func (h *Heap[T, ID]) Up(i int) { h.up(i, false) }

// UpTopFirst is Up for a node that probably goes to the top, such as a
// resource given back with the priority it was taken at: it compares the
// node with the top first, and searches the path below only if it does
// not go there (one comparison more than Up).
func (h *Heap[T, ID]) UpTopFirst(i int) { h.up(i, true) }

func (h *Heap[T, ID]) up(i int, topFirst bool) {
	items := h.items
	n := items[i]
	// n rises lo levels and not hi; the path above it is in order, so
	// whether n goes before the ancestor k levels up is true up to some k
	// and false past it.
	depth := bits.Len(uint(i+1)) - 1
	lo, hi := 0, depth+1
	if topFirst && depth > 1 {
		t := items[0]
		if c := h.cmp(n.Value, t.Value); c < 0 || c == 0 && n.Holders < t.Holders {
			lo = depth
		} else {
			hi = depth
		}
	}
	gallop := true
	for k := 1; lo+1 < hi; {
		// Numbered from one, a node's parent is half its number.
		a := items[(i+1)>>k-1]
		if c := h.cmp(n.Value, a.Value); c < 0 || c == 0 && n.Holders < a.Holders {
			lo = k
		} else {
			hi, gallop = k, false
		}
		if gallop {
			k = min(2*k, hi-1)
		} else {
			k = (lo + hi) / 2
		}
	}
	h.raise(i, lo)
}

// raise moves the node at index i up the given number of levels, shifting
// each node it passes down a level.
func (h *Heap[T, ID]) raise(i, levels int) {
	items := h.items
	n := items[i]
	for ; levels > 0; levels-- {
		parent := (i - 1) / 2
		p := items[parent]
		items[i], p.Index = p, i
		i = parent
	}
	items[i], n.Index = n, i
}

// Down moves the node at index i toward the leaves while a child goes
// before it, and reports whether it moved.
//
// Past the first level it sifts bottom-up (Floyd's refinement): it
// follows the smaller children to a leaf, one comparison a level, then
// climbs back to the first node on that path that goes before the moving
// node, which is where a plain sift would have stopped. A plain sift
// compares twice a level, and a node that sinks (the last leaf moved to
// the top by a Delete, above all) usually sinks nearly to the bottom,
// so the climb back is short. The first level is compared the plain way,
// since most calls on a heap in order stop there.
//
// Every comparison comes before the first write, so a comparator that
// panics leaves the heap exactly as it was.
func (h *Heap[T, ID]) Down(i int) bool {
	items := h.items
	size := len(items)
	n := items[i]
	// The comparisons are written out, as in Up: neither a helper nor
	// Less is inlined into a generic method, and a call per comparison
	// costs more than the comparison.
	child := 2*i + 1
	if child >= size {
		return false
	}
	c := items[child]
	if right := child + 1; right < size {
		r := items[right]
		if o := h.cmp(r.Value, c.Value); o < 0 || o == 0 && r.Holders < c.Holders {
			child, c = right, r
		}
	}
	if o := h.cmp(c.Value, n.Value); o > 0 || o == 0 && c.Holders >= n.Holders {
		return false
	}
	// n goes below child: follow the smaller children to a leaf.
	to := child
	for {
		left := 2*to + 1
		if left >= size {
			break
		}
		next := left
		if right := left + 1; right < size {
			l, r := items[left], items[right]
			if o := h.cmp(r.Value, l.Value); o < 0 || o == 0 && r.Holders < l.Holders {
				next = right
			}
		}
		to = next
	}
	// Climb back to the deepest node on that path that goes before n.
	for to != child {
		t := items[to]
		if o := h.cmp(t.Value, n.Value); o < 0 || o == 0 && t.Holders < n.Holders {
			break
		}
		to = (to - 1) / 2
	}
	// Shift the path from child to to up a level, and put n at to.
	moving := n
	for {
		displaced := items[to]
		items[to], moving.Index = moving, to
		if to == i {
			return true
		}
		moving = displaced
		to = (to - 1) / 2
	}
}

// Init orders the whole heap in O(n) (Floyd's method).
func (h *Heap[T, ID]) Init() {
	h.taken = nil
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.Down(i)
	}
}

// Less reports whether a goes before b in the heap order: the comparator,
// then fewer holders first (Up and Down write it out).
func (h *Heap[T, ID]) Less(a, b *node.Node[T, ID]) bool {
	if c := h.cmp(a.Value, b.Value); c != 0 {
		return c < 0
	}
	return a.Holders < b.Holders
}
