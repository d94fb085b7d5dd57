package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/waitq"
)

// AcquireContext is Acquire that waits instead of failing when no resource
// is available: until one is released, included or added (it is handed to
// waiters in the order they started waiting), until ctx ends (it returns
// ctx.Err(), wrapped, unless a resource was handed to it at that instant,
// which it returns), or until Shutdown (ErrSchedulerClosed). Under the
// Shared policy it waits only while no resource is active. A resource
// acquired this way under the Exclusive policy is returned with Release.
//
// It calls Acquire first, so that taking a free resource costs what
// Acquire does; only a caller that found none goes on to queue.
func (s *Scheduler[T, ID]) AcquireContext(ctx context.Context) (T, error) {
	if v, err := s.Acquire(); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		return v, err
	}
	g, err := s.obtain(ctx, nil, false, nil)
	return g.value, err
}

// AcquireByAffinityContext is AcquireByAffinity that waits like
// AcquireContext. A caller that has to wait takes whichever resource comes
// free first.
func (s *Scheduler[T, ID]) AcquireByAffinityContext(ctx context.Context, id acquire.AffinityIdentifier) (T, error) {
	if v, err := s.AcquireByAffinity(id); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		return v, err
	}
	g, err := s.obtain(ctx, id, false, nil)
	return g.value, err
}

// search takes a hold on a resource: for id, the one it maps to or the next
// available in its order, else (and without id) the best of the shard the
// strategy picks, or of the next non-empty shards.
func (s *Scheduler[T, ID]) search(start int, id acquire.AffinityIdentifier, lease bool, g *grant[T, ID]) bool {
	return id != nil && s.sweepAffinity(id, lease, g) || s.sweep(start, lease, g)
}

// obtain takes a hold (see search) and waits for a resource when there is
// none. With id set it acquires by affinity.
//
// A waiter never holds two resources and never gives one back: a resource
// given back would be held, for a moment, by no caller, and another caller
// could fail to find it after the giver returned. So after queueing, when
// a resource turns out to be available after all, the waiter leaves the
// queue and searches again rather than taking it while still queued; and
// a waiter served at the instant its context ends keeps the resource.
//
// With budgets configured (s.budgeted) callers are served in strict FIFO
// order: a caller does not search while others wait, and a queued one
// searches again only as the oldest. A resource may then be active while
// callers wait, its budgets short of the oldest one's cost: that waiter
// arms the wakes (see probe), and whoever makes it the oldest without
// serving it kicks them (see kick).
func (s *Scheduler[T, ID]) obtain(ctx context.Context, id acquire.AffinityIdentifier, lease bool, cost config.Cost) (grant[T, ID], error) {
	var none grant[T, ID]
	if s.closed.Load() {
		return none, crserrors.ErrSchedulerClosed
	}
	start := 0
	if id == nil {
		var err error
		if start, err = s.strategyStart(); err != nil {
			return none, err
		}
	}
	var w *waitq.Waiter[grant[T, ID]]
	defer func() {
		// Every return below, and a panic in search, comes with w in no
		// queue and its grant, if a giver popped it, received: no giver
		// has it any more (see waitq).
		if w != nil {
			s.waiters.Put(w)
		}
	}()
	oldest := false // the caller left the queue as its oldest waiter
	for {
		g := grant[T, ID]{cost: cost}
		found := (!s.budgeted || oldest || s.waiters.Len() == 0) && s.search(start, id, lease, &g)
		if oldest && s.waiters.Len() > 0 {
			s.kick(-1) // it left the queue as its oldest: the next one has probed nothing
		}
		if found {
			return g, nil
		}
		if cost != nil && s.profiles.Exceeds(cost) {
			return none, fmt.Errorf("lease: %w", crserrors.ErrCostExceedsLimits)
		}
		if w == nil {
			w = s.waiters.Get(lease)
			w.Cost = cost
		}
		s.step(beforeQueue)
		if !s.waiters.Push(w) {
			return none, crserrors.ErrSchedulerClosed
		}
		s.step(queued)
		var stays bool
		if oldest, stays = s.stay(w, cost); stays {
			return s.await(ctx, w)
		}
		if !s.waiters.Remove(w) { // served meanwhile
			if g := <-w.C; g.node != nil || g.err != nil {
				return g, g.err
			}
			// Popped by a giver that could not serve it: search again.
		}
	}
}

// stay is the check of a caller just queued, w: givers see it from now
// on, but a resource that became available before then was not offered
// to it (see serve), so it searches again if there is one, and so too if
// a giver has told it to (Waiter.Commit fails: see Queue.PopCommitted).
// Otherwise it commits to waiting. It reports whether the caller is the
// oldest waiter (with budgets) and whether it stays in the queue.
func (s *Scheduler[T, ID]) stay(w *waitq.Waiter[grant[T, ID]], cost config.Cost) (oldest, stays bool) {
	if s.budgeted {
		if oldest = s.waiters.First(w); oldest && s.probe(cost) {
			return oldest, false
		}
	} else if s.anyActive() {
		return false, false
	}
	s.step(checked)
	if !w.Commit() {
		return oldest, false
	}
	s.step(committed)
	if (s.budgeted || s.rateLimit != nil) && s.limitsHold() {
		s.limitWaits.Add(1)
	}
	return oldest, true
}

// await waits for the grant of w, a caller committed to the queue, until
// ctx ends.
func (s *Scheduler[T, ID]) await(ctx context.Context, w *waitq.Waiter[grant[T, ID]]) (grant[T, ID], error) {
	var none grant[T, ID]
	began := s.clock.Now()
	select {
	case g := <-w.C:
		s.waiters.Waited(s.clock.Now().Sub(began), false)
		return g, g.err
	case <-ctx.Done():
		// A giver that popped this waiter but could not serve it sends
		// it nothing (no node, no error) once it finds it gone.
		removed := s.waiters.Remove(w)
		s.step(gaveUp)
		if !removed {
			if g := <-w.C; g.node != nil || g.err != nil {
				// Served at the instant the context ended: the hold is
				// the caller's already, and handing it back would leave
				// the resource, for a moment, held by no one.
				s.waiters.Waited(s.clock.Now().Sub(began), false)
				return g, g.err
			}
		}
		s.waiters.Waited(s.clock.Now().Sub(began), true)
		if s.budgeted && s.waiters.Len() > 0 {
			s.kick(-1) // this caller may have been the oldest
		}
		return none, fmt.Errorf("acquire: waiting: %w", ctx.Err())
	}
}

// waitStep is where a caller that found nothing is, for a test hook.
type waitStep uint8

const (
	beforeQueue waitStep = iota // searched, not yet queued
	queued                      // queued, not yet checked for an active resource
	checked                     // found none active, not yet committed
	committed                   // committed, about to wait
	gaveUp                      // its context ended: out of the queue, or popped by a giver
)

// step runs the test hook, if any.
func (s *Scheduler[T, ID]) step(at waitStep) {
	if s.hooks.waiting != nil {
		s.hooks.waiting(at)
	}
}

// anyActive reports whether some shard has an active resource.
func (s *Scheduler[T, ID]) anyActive() bool {
	for i := range s.shards {
		if s.shards[i].Active.Load() > 0 {
			return true
		}
	}
	return false
}
