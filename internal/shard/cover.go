package shard

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/node"
)

// scanDepth bounds the search for a resource that covers a cost its
// shard's best does not: the first scanDepth entries of the heap's array,
// its top levels, which hold the best resources (and, among equals, those
// with the most budget left). A resource deeper down is not found until
// it rises, and the caller waits meanwhile, unless none of those will
// ever cover the cost: the search then goes on down the heap.
const scanDepth = 64

// Covering returns the best node among the first scanDepth of the heap
// that covers cost, or nil, with the earliest instant at which one of
// those will (node.Never if none ever will). A nil cost is the default,
// which every resource in the heap covers. Requires the lock; runs the
// comparator, and leaves the shard Broken if it panics.
func (s *Shard[T, ID]) Covering(cost config.Cost, now int64) (*node.Node[T, ID], int64) {
	top := s.Best()
	if top == nil {
		return nil, node.Never
	}
	if cost == nil {
		return top, now
	}
	if ok, _ := top.Budgets().Fits(cost, now); ok {
		return top, now
	}
	var best *node.Node[T, ID]
	soonest := int64(node.Never)
	s.Risk()
	// Past scanDepth only while nothing seen will ever cover the cost: a
	// waiter would otherwise wait for nothing, ahead of every other.
	for i := 0; i < s.Heap.Len() && (i < scanDepth || (best == nil && soonest == node.Never)); i++ {
		n := s.Heap.At(i)
		if ok, never := n.Budgets().Fits(cost, now); ok {
			if best == nil || s.Heap.Less(n, best) {
				best = n
			}
		} else if !never && best == nil {
			if w, ok := n.Budgets().Wait(cost, now); ok {
				soonest = min(soonest, node.After(now, w))
			}
		}
	}
	s.Safe()
	if best != nil {
		return best, now
	}
	return nil, soonest
}
