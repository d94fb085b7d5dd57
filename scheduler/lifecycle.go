package scheduler

import (
	"fmt"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
)

// Release returns a resource taken by Acquire under the Exclusive policy
// to the pool. It returns ErrNotExclusive under the Shared policy,
// ErrResourceNotInactive if the resource is active, and ErrResourceNotHeld
// if it is excluded rather than held.
func (s *Scheduler[T, ID]) Release(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if s.policy != config.Exclusive {
		return crserrors.ErrNotExclusive
	}
	return s.transition("release", id, events.EventRelease, func(sh *shard[T, ID], n *node.Node[T, ID]) error {
		switch n.State {
		case node.Active:
			return crserrors.ErrResourceNotInactive
		case node.Excluded:
			return crserrors.ErrResourceNotHeld
		}
		sh.activate(n, node.Held)
		return nil
	})
}

// Exclude takes an active resource out of the pool until Include. It
// returns ErrResourceNotActive if the resource is held or already excluded.
func (s *Scheduler[T, ID]) Exclude(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return s.transition("exclude", id, events.EventExclude, func(sh *shard[T, ID], n *node.Node[T, ID]) error {
		if n.State != node.Active {
			return crserrors.ErrResourceNotActive
		}
		sh.deactivate(n, node.Excluded)
		return nil
	})
}

// Include returns an excluded resource to the pool. It returns
// ErrResourceNotInactive if the resource is active and
// ErrResourceNotExcluded if it is held by a caller (including it would
// hand it to a second holder).
func (s *Scheduler[T, ID]) Include(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return s.transition("include", id, events.EventInclude, func(sh *shard[T, ID], n *node.Node[T, ID]) error {
		switch n.State {
		case node.Active:
			return crserrors.ErrResourceNotInactive
		case node.Held:
			return crserrors.ErrResourceNotExcluded
		}
		sh.activate(n, node.Excluded)
		return nil
	})
}

// Remove deletes a resource for good, whatever its state. A holder's later
// Release of it returns ErrResourceNotFound.
func (s *Scheduler[T, ID]) Remove(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return s.transition("remove", id, events.EventRemove, func(sh *shard[T, ID], n *node.Node[T, ID]) error {
		if n.State == node.Active {
			sh.deactivate(n, node.Removed)
		} else {
			sh.move(n, node.Removed)
		}
		s.nodes.Delete(id)
		return nil
	})
}

// Update replaces the value of the resource with the same key, whatever
// its state, and restores the priority order if it is active.
func (s *Scheduler[T, ID]) Update(v T) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if s.isNil(v) {
		return fmt.Errorf("update: %w", crserrors.ErrNilResource)
	}
	return s.transition("update", s.key(v), events.EventUpdate, func(sh *shard[T, ID], n *node.Node[T, ID]) error {
		sh.replace(n, v)
		return nil
	})
}

// transition runs step on the node for id under its shard's lock, then
// emits the event once the lock is released. step returns a sentinel error
// to refuse the transition, changing nothing.
func (s *Scheduler[T, ID]) transition(op string, id ID, event events.EventType, step func(*shard[T, ID], *node.Node[T, ID]) error) error {
	if err := s.locked(id, step); err != nil {
		return opError(op, id, err)
	}
	s.emit(event, id)
	return nil
}

func (s *Scheduler[T, ID]) locked(id ID, step func(*shard[T, ID], *node.Node[T, ID]) error) error {
	n, sh := s.find(id)
	if n == nil {
		return crserrors.ErrResourceNotFound
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.repair()
	if n.State == node.Removed {
		return crserrors.ErrResourceNotFound
	}
	return step(sh, n)
}
