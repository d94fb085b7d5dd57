package compare

import (
	"container/heap"
	"sync"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// HeapPool is the textbook baseline: one mutex around container/heap (the
// PriorityQueue of its package example, index kept in the item for
// heap.Fix) and a map from key to item. Every comparison, swap, push and
// pop goes through heap.Interface, which is what it costs compared with
// TightPool. Like TightPool it has no shards, states, holders, waiters or
// events. The zero value is not usable; call NewHeapPool.
type HeapPool[T any, K comparable] struct {
	mu     sync.Mutex
	heap   heapItems[T]
	items  map[K]*heapItem[T]
	key    func(T) K
	policy config.AcquirePolicy
}

// heapItem is a resource in a HeapPool; index is its position in the heap,
// or held.
type heapItem[T any] struct {
	v     T
	index int
}

// heapItems is the heap.Interface over the items.
type heapItems[T any] struct {
	s   []*heapItem[T]
	cmp func(a, b T) int
}

func (h *heapItems[T]) Len() int           { return len(h.s) }
func (h *heapItems[T]) Less(i, j int) bool { return h.cmp(h.s[i].v, h.s[j].v) < 0 }
func (h *heapItems[T]) Swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.s[i].index = i
	h.s[j].index = j
}
func (h *heapItems[T]) Push(x any) {
	it := x.(*heapItem[T])
	it.index = len(h.s)
	h.s = append(h.s, it)
}
func (h *heapItems[T]) Pop() any {
	last := len(h.s) - 1
	it := h.s[last]
	h.s[last] = nil // the backing array must not keep a held item alive
	h.s = h.s[:last]
	it.index = held
	return it
}

// NewHeapPool returns an empty pool ordered by cmp (negative: a first)
// and keyed by key, whose Acquire follows policy.
func NewHeapPool[T any, K comparable](cmp func(a, b T) int, key func(T) K, policy config.AcquirePolicy) *HeapPool[T, K] {
	return &HeapPool[T, K]{heap: heapItems[T]{cmp: cmp}, items: make(map[K]*heapItem[T]), key: key, policy: policy}
}

// Add inserts v, active. It returns ErrDuplicateKey if v's key exists.
func (p *HeapPool[T, K]) Add(v T) error {
	k := p.key(v)
	it := &heapItem[T]{v: v}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.items[k]; dup {
		return crserrors.ErrDuplicateKey
	}
	p.items[k] = it
	heap.Push(&p.heap, it)
	return nil
}

// BatchAdd inserts all of vs or none: ErrDuplicateKey if a key exists or
// repeats within vs. Under one lock it maps the items, then pushes them one
// by one, or, when the batch is at least as large as the heap, appends them
// and calls heap.Init.
func (p *HeapPool[T, K]) BatchAdd(vs []T) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	added := make([]*heapItem[T], 0, len(vs))
	for i, v := range vs {
		k := p.key(v)
		if _, dup := p.items[k]; dup {
			for _, prev := range vs[:i] {
				delete(p.items, p.key(prev))
			}
			return crserrors.ErrDuplicateKey
		}
		it := &heapItem[T]{v: v}
		p.items[k] = it
		added = append(added, it)
	}
	if len(added) >= p.heap.Len() {
		for _, it := range added {
			it.index = len(p.heap.s)
			p.heap.s = append(p.heap.s, it)
		}
		heap.Init(&p.heap)
		return nil
	}
	for _, it := range added {
		heap.Push(&p.heap, it)
	}
	return nil
}

// Update replaces the value with v's key and restores the heap order. A
// held resource keeps its new value until Release puts it back.
func (p *HeapPool[T, K]) Update(v T) error {
	k := p.key(v)
	p.mu.Lock()
	defer p.mu.Unlock()
	it := p.items[k]
	if it == nil {
		return crserrors.ErrResourceNotFound
	}
	it.v = v
	if it.index != held {
		heap.Fix(&p.heap, it.index)
	}
	return nil
}

// Acquire returns the best resource: under Shared it stays in the heap,
// under Exclusive it leaves it until Release. ErrNoResourceAvailable if
// the heap is empty.
func (p *HeapPool[T, K]) Acquire() (T, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.heap.Len() == 0 {
		var zero T
		return zero, crserrors.ErrNoResourceAvailable
	}
	if p.policy == config.Exclusive {
		return heap.Pop(&p.heap).(*heapItem[T]).v, nil
	}
	return p.heap.s[0].v, nil
}

// Release puts a resource taken by an exclusive Acquire back in the heap.
func (p *HeapPool[T, K]) Release(k K) error {
	if p.policy != config.Exclusive {
		return crserrors.ErrNotExclusive
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	it := p.items[k]
	switch {
	case it == nil:
		return crserrors.ErrResourceNotFound
	case it.index != held:
		return crserrors.ErrResourceNotInactive
	}
	heap.Push(&p.heap, it)
	return nil
}

// Len returns the number of resources, held ones included.
func (p *HeapPool[T, K]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.items)
}
