package compare

import (
	"slices"
	"sync"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// TightPool is the fast single-lock baseline: one mutex, a binary min-heap
// of items written for this type (no heap.Interface, so no interface call
// per comparison or swap), each item knowing its index in the heap, and a
// map from key to item.
//
// The comparator stays a func value, like the library's: a heap that
// inlined `a.Priority < b.Priority` would measure a different contract
// (one resource type, one order) from the generic pool crs is.
//
// What it leaves out, deliberately, is what the library pays for beyond a
// heap: shards, states other than active and held, holders and capacity,
// waiters, events, and surviving a panicking comparator (one here leaves
// the mutex locked). The zero value is not usable; call NewTightPool.
type TightPool[T any, K comparable] struct {
	mu     sync.Mutex
	heap   []*tightItem[T]
	items  map[K]*tightItem[T]
	cmp    func(a, b T) int
	key    func(T) K
	policy config.AcquirePolicy
}

// tightItem is a resource in a TightPool.
type tightItem[T any] struct {
	v T
	// index is the item's position in the heap, or held while an exclusive
	// Acquire has it, so that Update and Release find it in O(1).
	index int
}

// held is the index of an item taken out of the heap by an exclusive
// Acquire.
const held = -1

// NewTightPool returns an empty pool ordered by cmp (negative: a first)
// and keyed by key, whose Acquire follows policy.
func NewTightPool[T any, K comparable](cmp func(a, b T) int, key func(T) K, policy config.AcquirePolicy) *TightPool[T, K] {
	return &TightPool[T, K]{items: make(map[K]*tightItem[T]), cmp: cmp, key: key, policy: policy}
}

// Add inserts v, active. It returns ErrDuplicateKey if v's key exists.
func (p *TightPool[T, K]) Add(v T) error {
	k := p.key(v)
	it := &tightItem[T]{v: v}
	p.mu.Lock()
	if _, dup := p.items[k]; dup {
		p.mu.Unlock()
		return crserrors.ErrDuplicateKey
	}
	p.items[k] = it
	it.index = len(p.heap)
	p.heap = append(p.heap, it)
	p.up(it.index)
	p.mu.Unlock()
	return nil
}

// BatchAdd inserts all of vs or none: ErrDuplicateKey if a key exists or
// repeats within vs. It takes the lock once, allocates the items in one
// slab, and, when the batch is at least as large as the heap, appends and
// re-heapifies in O(n) instead of sifting each item up.
func (p *TightPool[T, K]) BatchAdd(vs []T) error {
	slab := make([]tightItem[T], len(vs))
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) == 0 {
		// Sized once instead of grown by doubling, the one map-specific
		// saving a careful engineer gets for free on an empty pool.
		p.items = make(map[K]*tightItem[T], len(vs))
	}
	for i, v := range vs {
		// The key function runs under the lock: computing the keys first,
		// outside it, would cost a slice of keys per batch.
		k := p.key(v)
		if _, dup := p.items[k]; dup {
			for _, added := range vs[:i] {
				delete(p.items, p.key(added))
			}
			return crserrors.ErrDuplicateKey
		}
		slab[i].v = v
		p.items[k] = &slab[i]
	}
	n := len(p.heap)
	p.heap = slices.Grow(p.heap, len(vs))
	for i := range slab {
		slab[i].index = len(p.heap)
		p.heap = append(p.heap, &slab[i])
	}
	if len(vs) >= n {
		for i := len(p.heap)/2 - 1; i >= 0; i-- {
			p.down(i)
		}
		return nil
	}
	for i := n; i < len(p.heap); i++ {
		p.up(i)
	}
	return nil
}

// Update replaces the value with v's key and restores the heap order. A
// held resource keeps its new value until Release puts it back.
func (p *TightPool[T, K]) Update(v T) error {
	k := p.key(v)
	p.mu.Lock()
	it := p.items[k]
	if it == nil {
		p.mu.Unlock()
		return crserrors.ErrResourceNotFound
	}
	it.v = v
	if it.index != held && !p.down(it.index) {
		p.up(it.index)
	}
	p.mu.Unlock()
	return nil
}

// Acquire returns the best resource: under Shared it stays in the heap,
// under Exclusive it leaves it until Release. ErrNoResourceAvailable if
// the heap is empty.
func (p *TightPool[T, K]) Acquire() (T, error) {
	p.mu.Lock()
	if len(p.heap) == 0 {
		p.mu.Unlock()
		var zero T
		return zero, crserrors.ErrNoResourceAvailable
	}
	it := p.heap[0]
	if p.policy == config.Exclusive {
		p.popTop()
	}
	v := it.v
	p.mu.Unlock()
	return v, nil
}

// Release puts a resource taken by an exclusive Acquire back in the heap.
func (p *TightPool[T, K]) Release(k K) error {
	if p.policy != config.Exclusive {
		return crserrors.ErrNotExclusive
	}
	p.mu.Lock()
	it := p.items[k]
	switch {
	case it == nil:
		p.mu.Unlock()
		return crserrors.ErrResourceNotFound
	case it.index != held:
		p.mu.Unlock()
		return crserrors.ErrResourceNotInactive
	}
	it.index = len(p.heap)
	p.heap = append(p.heap, it)
	p.up(it.index)
	p.mu.Unlock()
	return nil
}

// Len returns the number of resources, held ones included.
func (p *TightPool[T, K]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.items)
}

// popTop removes the top of the heap and marks it held.
func (p *TightPool[T, K]) popTop() {
	h := p.heap
	top, last := h[0], len(h)-1
	top.index = held
	h[0] = h[last]
	h[last] = nil // the backing array must not keep a held item alive
	p.heap = h[:last]
	if last > 0 {
		h[0].index = 0
		p.down(0)
	}
}

// up sifts the item at i toward the root. It moves a hole instead of
// swapping: each level costs one comparison and one write, and the item
// is written once, at its final place.
func (p *TightPool[T, K]) up(i int) {
	h := p.heap
	it := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		pt := h[parent]
		if p.cmp(it.v, pt.v) >= 0 {
			break
		}
		h[i] = pt
		pt.index = i
		i = parent
	}
	h[i] = it
	it.index = i
}

// down sifts the item at i toward the leaves, moving a hole like up, and
// reports whether it moved.
func (p *TightPool[T, K]) down(i int) bool {
	h := p.heap
	n := len(h)
	it, start := h[i], i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && p.cmp(h[r].v, h[c].v) < 0 {
			c = r
		}
		child := h[c]
		if p.cmp(child.v, it.v) >= 0 {
			break
		}
		h[i] = child
		child.index = i
		i = c
	}
	h[i] = it
	it.index = i
	return i > start
}
