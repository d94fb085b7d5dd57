package scheduler

import (
	"fmt"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
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
	n, sh := s.find(id)
	if n == nil {
		return crserrors.ErrResourceNotFound
	}
	// The step is a direct call rather than a closure run by transition,
	// as in Update: Release is the other operation by key made most often.
	rest, served, err := s.release(sh, n)
	yieldTo(served)
	if err != nil {
		return err
	}
	s.emit(events.EventRelease, id)
	if rest != noEvent {
		s.emit(rest, id)
	}
	return nil
}

// release is Release's step (see transition): it locks sh, and returns
// the event of a rest the release began, if any.
func (s *Scheduler[T, ID]) release(sh *shard.Shard[T, ID], n *node.Node[T, ID]) (events.EventType, bool, error) {
	sh.Lock()
	defer sh.Unlock()
	s.room.Repair(sh, n)
	if n.State == node.Removed { // a draining resource's holds still end
		return noEvent, false, crserrors.ErrResourceNotFound
	}
	switch {
	case n.Anonymous() > 0:
		rest := s.unhold(sh, n, -1, shard.Ending{How: shard.Succeeded})
		return rest, s.room.Len() > 0 && s.room.ServeAfter(sh), nil
	case n.Holders > 0:
		return noEvent, false, crserrors.ErrResourceLeased
	case n.State == node.Active:
		return noEvent, false, crserrors.ErrResourceNotInactive
	default:
		return noEvent, false, crserrors.ErrResourceNotHeld
	}
}

// Exclude takes an active or resting resource out of the pool until
// Include; its current holders keep their holds, and a suspension or
// ejection it was serving ends (a rate-limit rest is kept). It returns
// ErrResourceNotActive if the resource is held (every slot taken) or
// already excluded.
func (s *Scheduler[T, ID]) Exclude(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return s.transition(id, events.EventExclude, func(sh *shard.Shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		c, err := sh.Exclude(n, s.now())
		s.report(n, c)
		return false, err
	})
}

// Include returns an excluded resource to the pool, or ends a suspension
// or ejection early, and hands the resource to the oldest waiter if there
// is one; it also clears the resource's failure count. It returns
// ErrResourceNotInactive if the resource is active, and
// ErrResourceNotExcluded if it is held (including it would hand it to a
// second holder) or only waits for its next rate-limit token (which no one
// may hand out early).
func (s *Scheduler[T, ID]) Include(id ID) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return s.transition(id, events.EventInclude, func(sh *shard.Shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		c, err := sh.Include(n, s.now())
		if err != nil {
			return false, err
		}
		s.report(n, c)
		return s.room.ServeAfter(sh), nil
	})
}

// Suspend makes a resource unavailable until d from now; it then comes
// back by itself and is handed to the oldest waiter. Suspending a resource
// that already rests keeps the later deadline. A resource with holders
// stops taking new ones now, and rests when the last one releases if the
// deadline has not passed. Include ends a suspension early. It returns
// ErrInvalidDuration for d <= 0.
func (s *Scheduler[T, ID]) Suspend(id ID, d time.Duration) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if d <= 0 {
		return opError("suspend", id, fmt.Errorf("%w: %v", crserrors.ErrInvalidDuration, d))
	}
	err := s.transition(id, events.EventSuspend, func(sh *shard.Shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		s.report(n, sh.Suspend(n, s.now(), s.after(d)))
		s.totals.suspensions.Add(1)
		return false, nil
	})
	if err != nil {
		// Suspend is not CRS's: its error may say which call failed.
		return opError("suspend", id, err)
	}
	return nil
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
	defer s.affinity.Changed(id)
	err := s.transition(id, events.EventRemove, func(sh *shard.Shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		s.report(n, sh.Remove(n))
		if s.budgeted { // in the same step, as add counts it
			s.profiles.Change(n.Budgets().Limits(), -1)
		}
		return false, nil
	})
	if err == nil && s.room.Len() > 0 {
		s.room.Kick(-1) // the oldest waiter's cost may now exceed every resource's limits
	}
	return err
}

// Update replaces the value of the resource with the same key, whatever
// its state, restores the priority order if it is active, and applies the
// capacity the new value gives.
func (s *Scheduler[T, ID]) Update(v T) error {
	if s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	if node.IsNil(s.nilness, v) {
		return crserrors.ErrNilResource
	}
	id := s.key(v)
	capacity := s.capacityOf(v)
	limits, err := s.limitsOf(v)
	if err != nil {
		return opError("update", id, err)
	}
	n, sh := s.find(id)
	if n == nil {
		return crserrors.ErrResourceNotFound
	}
	// The step is a direct call rather than a closure run by transition:
	// Update is the operation by key that callers make most often.
	served, moved, err := s.update(sh, n, v, capacity, limits)
	yieldTo(served)
	if err != nil {
		return err
	}
	if moved && s.room.Len() > 0 {
		s.room.Kick(-1) // the oldest waiter's cost may now exceed every resource's limits
	}
	s.emit(events.EventUpdate, id)
	return nil
}

// update is Update's step (see transition): it locks sh. It reports
// whether the resource moved to other profiles (see budget.Profiles), which it
// does in the same step as the change of its limits.
func (s *Scheduler[T, ID]) update(sh *shard.Shard[T, ID], n *node.Node[T, ID], v T, capacity int32, limits []config.Limit) (served, moved bool, err error) {
	sh.Lock()
	defer sh.Unlock()
	if !s.enter(sh, n) {
		return false, false, crserrors.ErrResourceNotFound
	}
	var was []config.Limit
	if s.budgeted {
		was = n.Budgets().Limits()
	}
	c := sh.Update(n, v, capacity, limits, (*host[T, ID])(s))
	if c.Resumed != 0 || c.RestWas != n.RestUntil { // not the common case
		s.report(n, c)
	}
	moved = s.budgeted && s.profiles.Move(was, n.Budgets().Limits())
	return s.room.Len() > 0 && s.room.ServeAfter(sh), moved, nil
}

// transition runs step on the node for id under its shard's lock, then,
// with the lock released, lets a waiter that step served run and emits the
// event. step returns a sentinel error to refuse the transition, changing
// nothing. The sentinel is returned as it is: the operations of CRS's API
// returned theirs unwrapped, code ported from it compares them with ==,
// and a refusal is common enough that it should not allocate.
func (s *Scheduler[T, ID]) transition(id ID, event events.EventType, step func(*shard.Shard[T, ID], *node.Node[T, ID]) (served bool, err error)) error {
	served, err := s.locked(id, step)
	yieldTo(served)
	if err != nil {
		return err
	}
	s.emit(event, id)
	return nil
}

func (s *Scheduler[T, ID]) locked(id ID, step func(*shard.Shard[T, ID], *node.Node[T, ID]) (bool, error)) (bool, error) {
	n, sh := s.find(id)
	if n == nil {
		return false, crserrors.ErrResourceNotFound
	}
	sh.Lock()
	defer sh.Unlock()
	if !s.enter(sh, n) {
		return false, crserrors.ErrResourceNotFound
	}
	return step(sh, n)
}

// enter prepares sh, just locked, for an operation on n (see waiting.Room.Repair),
// and reports whether n is still there: neither removed nor draining.
func (s *Scheduler[T, ID]) enter(sh *shard.Shard[T, ID], n *node.Node[T, ID]) bool {
	s.room.Repair(sh, n)
	return !gone(n)
}

// Len is the number of resources in the scheduler, whatever their state.
//
// Add and Remove change the count and the shards at different moments, so
// Len reads the count between two reads of the shards' versions that show
// no change in progress or completed in between: the count then matches
// what Acquire and Get see at that instant. If changes keep coming, it
// stops them by locking every shard.
func (s *Scheduler[T, ID]) Len() int {
	return int(shard.Stable(s.shards, s.pool.Size.Load))
}

// Get returns the current value of the resource with key id, whatever its
// state.
func (s *Scheduler[T, ID]) Get(id ID) (T, error) {
	// Not through locked, as Update: a read by key is common, and the
	// closure call measured slower.
	var zero T
	if s.closed.Load() {
		return zero, crserrors.ErrSchedulerClosed
	}
	n, sh := s.find(id)
	if n == nil {
		return zero, crserrors.ErrResourceNotFound
	}
	sh.Lock()
	defer sh.Unlock()
	if !s.enter(sh, n) {
		return zero, crserrors.ErrResourceNotFound
	}
	return n.Value, nil
}
