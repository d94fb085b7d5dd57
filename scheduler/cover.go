package scheduler

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// scanDepth bounds the search for a resource that covers a cost its
// shard's best does not: the first scanDepth entries of the heap's array,
// its top levels, which hold the best resources (and, among equals, those
// with the most budget left). A resource deeper down is not found until
// it rises, and the caller waits meanwhile, unless none of those will
// ever cover the cost: the search then goes on down the heap.
const scanDepth = 64

// covering returns the best node among the first scanDepth of sh's heap
// that covers cost, or nil, with the earliest instant at which one of
// those will (node.Never if none ever will). Requires sh.mu; runs the
// comparator.
func (s *Scheduler[T, ID]) covering(sh *shard.Shard[T, ID], cost config.Cost, now int64) (*node.Node[T, ID], int64) {
	top := sh.Best()
	if top == nil {
		return nil, node.Never
	}
	if cost == nil {
		return top, now // in the heap, a resource covers the default cost
	}
	if ok, _ := top.Budgets().Fits(cost, now); ok {
		return top, now
	}
	var best *node.Node[T, ID]
	soonest := int64(node.Never)
	sh.Broken = true
	// Past scanDepth only while nothing seen will ever cover the cost: a
	// waiter would otherwise wait for nothing, ahead of every other.
	for i := 0; i < sh.Heap.Len() && (i < scanDepth || (best == nil && soonest == node.Never)); i++ {
		n := sh.Heap.At(i)
		if ok, never := n.Budgets().Fits(cost, now); ok {
			if best == nil || sh.Heap.Less(n, best) {
				best = n
			}
		} else if !never && best == nil {
			if w, ok := n.Budgets().Wait(cost, now); ok {
				soonest = min(soonest, node.After(now, w))
			}
		}
	}
	sh.Broken = false
	if best != nil {
		return best, now
	}
	return nil, soonest
}

// wake makes the expiry timer serve sh's waiters at at, when a budget of
// sh may cover the oldest waiter's cost. It keeps one wake per shard
// armed, the earliest. Requires sh.mu.
func (s *Scheduler[T, ID]) wake(sh *shard.Shard[T, ID], at int64) {
	if at == node.Never || (sh.WakeAt != 0 && sh.WakeAt <= at) {
		return
	}
	sh.WakeAt = at
	s.deadlines.Schedule(at, wake[T, ID](sh.Index))
}

// kick makes the expiry timer serve the waiters of every shard but skip
// now: the oldest waiter changed where no giver serves it (it left, or
// the one before it was served from shard skip, which then armed its own
// wake), and another shard may cover its cost. The caller holds no lock,
// or shard skip's.
func (s *Scheduler[T, ID]) kick(skip int) {
	now := s.now()
	for i := range s.shards {
		if i != skip {
			s.deadlines.Schedule(now, wake[T, ID](i))
		}
	}
}

// woken serves sh's waiters at a wake (see wake, kick).
func (s *Scheduler[T, ID]) woken(sh *shard.Shard[T, ID]) {
	sh.Lock()
	defer sh.Unlock()
	s.repair(sh, nil)
	if sh.WakeAt <= s.now() {
		sh.WakeAt = 0
	}
	s.serve(sh)
}

// probe is the check of the oldest waiter, just queued: whether some
// shard has a resource that covers its cost now. If none does, it arms
// each shard's wake for the instant its budgets first will, so that the
// caller, committed, is served then without polling.
func (s *Scheduler[T, ID]) probe(cost config.Cost) (covered bool) {
	for i := range s.shards {
		sh := &s.shards[i]
		func() {
			sh.Lock()
			defer sh.Unlock()
			s.repair(sh, nil)
			n, at := s.covering(sh, cost, s.now())
			if n != nil {
				covered = true
				return
			}
			s.wake(sh, at)
		}()
		if covered {
			return true
		}
	}
	return false
}

// limitsHold reports, for a caller just committed to waiting, whether
// limits keep a resource with a free slot from the oldest waiter: one
// rests for them alone (see shard.heldBack) or, with budgets, one is
// active, which strict FIFO order would have handed to the oldest
// waiter were its budgets not short of that waiter's cost. It reads no
// lock, so a change under way may make it miss or count one wait.
func (s *Scheduler[T, ID]) limitsHold() bool {
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.HeldBack.Load() > 0 || s.budgeted && sh.Active.Load() > 0 {
			return true
		}
	}
	return false
}
