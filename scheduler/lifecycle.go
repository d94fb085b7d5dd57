package scheduler

import (
	"fmt"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
)

// Release ends a hold taken by Acquire or AcquireContext under the
// Exclusive policy, returning the slot to the pool or to the oldest
// waiter. It returns ErrNotExclusive under the Shared policy,
// ErrResourceNotInactive if the resource is active and not held,
// ErrResourceNotHeld if it is excluded and not held, and ErrResourceLeased
// if its only holds are leases (release those through their Lease). A
// resource removed while held may still be released: it leaves for good
// with its last hold.
func (s *Scheduler[T, ID]) Release(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if s.policy != config.Exclusive {
		return crserrors.ErrNotExclusive
	}
	return s.transition("release", id, true, events.EventRelease, func(sh *shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		switch {
		case n.Anonymous > 0:
			s.unhold(sh, n, -1)
			return s.serve(sh), nil
		case n.Holders > 0:
			return false, crserrors.ErrResourceLeased
		case n.State == node.Active:
			return false, crserrors.ErrResourceNotInactive
		default:
			return false, crserrors.ErrResourceNotHeld
		}
	})
}

// Exclude takes an active resource out of the pool until Include; its
// current holders keep their holds. It returns ErrResourceNotActive if the
// resource is held (every slot taken) or already excluded.
func (s *Scheduler[T, ID]) Exclude(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return s.transition("exclude", id, false, events.EventExclude, func(sh *shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		if n.State != node.Active {
			return false, crserrors.ErrResourceNotActive
		}
		sh.deactivate(n, node.Excluded)
		return false, nil
	})
}

// Include returns an excluded resource to the pool, or to the oldest
// waiter. It returns ErrResourceNotInactive if the resource is active and
// ErrResourceNotExcluded if it is held (including it would hand it to a
// second holder).
func (s *Scheduler[T, ID]) Include(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return s.transition("include", id, false, events.EventInclude, func(sh *shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		switch n.State {
		case node.Active:
			return false, crserrors.ErrResourceNotInactive
		case node.Held:
			return false, crserrors.ErrResourceNotExcluded
		}
		if sh.full(n) { // every slot was taken while it was excluded
			sh.setState(n, node.Held)
			return false, nil
		}
		sh.activate(n)
		return s.serve(sh), nil
	})
}

// Remove deletes a resource, whatever its state: it can no longer be
// acquired, read or changed, and Len no longer counts it. A resource with
// holders drains: its holders release it as usual, and its key stays taken
// (ErrDuplicateKey with ErrResourceDraining) until the last one does, so
// that the same key is never held by more callers than its capacity.
func (s *Scheduler[T, ID]) Remove(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return s.transition("remove", id, false, events.EventRemove, func(sh *shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		to := node.Removed
		if n.Holders > 0 {
			to = node.Draining
		}
		if n.State == node.Active {
			sh.deactivate(n, to)
		} else {
			sh.setState(n, to)
		}
		if to == node.Removed {
			s.nodes.Delete(id)
		}
		s.size.Add(-1)
		return false, nil
	})
}

// Update replaces the value of the resource with the same key, whatever
// its state, restores the priority order if it is active, and applies the
// capacity the new value gives.
func (s *Scheduler[T, ID]) Update(v T) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if s.isNil(v) {
		return fmt.Errorf("update: %w", crserrors.ErrNilResource)
	}
	id := s.key(v)
	capacity := s.capacityOf(v)
	return s.transition("update", id, false, events.EventUpdate, func(sh *shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		oldValue, oldCapacity := n.Value, n.Capacity
		n.Value, n.Capacity = v, capacity
		done := false
		defer func() {
			if !done {
				n.Value, n.Capacity = oldValue, oldCapacity
			}
		}()
		sh.place(n)
		done = true
		return s.serve(sh), nil
	})
}

// transition runs step on the node for id under its shard's lock, then,
// with the lock released, lets a waiter that step served run and emits the
// event. step returns a sentinel error to refuse the transition, changing
// nothing. Draining resources are found only when withDraining is set.
func (s *Scheduler[T, ID]) transition(op string, id ID, withDraining bool, event events.EventType, step func(*shard[T, ID], *node.Node[T, ID]) (served bool, err error)) error {
	served, err := s.locked(id, withDraining, step)
	yieldTo(served)
	if err != nil {
		return opError(op, id, err)
	}
	s.emit(event, id)
	return nil
}

func (s *Scheduler[T, ID]) locked(id ID, withDraining bool, step func(*shard[T, ID], *node.Node[T, ID]) (bool, error)) (bool, error) {
	n, sh := s.find(id)
	if n == nil {
		return false, crserrors.ErrResourceNotFound
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.mend(sh)
	if n.State == node.Removed || (n.State == node.Draining && !withDraining) {
		return false, crserrors.ErrResourceNotFound
	}
	return step(sh, n)
}
