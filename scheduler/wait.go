package scheduler

import (
	"context"
	"fmt"

	"github.com/crsched/crs/acquire"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/waitq"
)

// AcquireContext is Acquire that waits instead of failing when no resource
// is available: until one is released, included or added (it is handed to
// waiters in the order they started waiting), until ctx ends (it returns
// ctx.Err(), wrapped), or until Shutdown (ErrSchedulerClosed). Under the
// Shared policy it waits only while no resource is active. A resource
// acquired this way under the Exclusive policy is returned with Release.
func (s *Scheduler[T, ID]) AcquireContext(ctx context.Context) (T, error) {
	g, err := s.obtain(ctx, nil, false)
	return g.value, err
}

// AcquireByAffinityContext is AcquireByAffinity that waits like
// AcquireContext. A caller that has to wait takes whichever resource comes
// free first.
func (s *Scheduler[T, ID]) AcquireByAffinityContext(ctx context.Context, id acquire.AffinityIdentifier) (T, error) {
	if id == nil {
		var zero T
		return zero, crserrors.ErrNilAffinityIdentifier
	}
	g, err := s.obtain(ctx, id, false)
	return g.value, err
}

// strategyStart asks the strategy for the first shard to look in.
func (s *Scheduler[T, ID]) strategyStart(acquire.AffinityIdentifier) (int, error) {
	start := s.strategy.Select(s.view)
	if start < 0 || start >= len(s.shards) {
		return 0, fmt.Errorf("%w: shard %d of %d", crserrors.ErrInvalidAcquireStrategy, start, len(s.shards))
	}
	return start, nil
}

// search takes a hold on a resource: for id, the one it maps to or the next
// available in its order, else (and without id) the best of the shard the
// strategy picks, or of the next non-empty shards.
func (s *Scheduler[T, ID]) search(start int, id acquire.AffinityIdentifier, lease bool) (grant[T, ID], bool) {
	if id != nil {
		if g, ok := s.sweepAffinity(id, lease); ok {
			return g, true
		}
	}
	return s.sweep(start, lease)
}

// obtain takes a hold (see search) and waits for a resource when there is
// none. With id set it acquires by affinity.
func (s *Scheduler[T, ID]) obtain(ctx context.Context, id acquire.AffinityIdentifier, lease bool) (grant[T, ID], error) {
	var none grant[T, ID]
	if s.closed.Load() {
		return none, crserrors.ErrSchedulerClosed
	}
	start := 0
	if id == nil {
		var err error
		if start, err = s.strategyStart(nil); err != nil {
			return none, err
		}
	}
	if g, ok := s.search(start, id, lease); ok {
		return g, nil
	}

	w := waitq.NewWaiter[grant[T, ID]](lease)
	if !s.waiters.Push(w) {
		return none, crserrors.ErrSchedulerClosed
	}
	// Look again now that givers can see this waiter: a resource that
	// became available before then was not offered to it (see serve).
	if g, ok := s.search(start, id, lease); ok {
		if !s.waiters.Remove(w) {
			s.giveBack(<-w.C) // served meanwhile too: keep one
		}
		return g, nil
	}

	began := s.clock.Now()
	select {
	case g := <-w.C:
		s.waiters.Waited(s.clock.Now().Sub(began), false)
		return g, g.err
	case <-ctx.Done():
		if !s.waiters.Remove(w) {
			// Served at the instant the context ended: pass the resource
			// on rather than lose it.
			if g := <-w.C; g.err == nil {
				s.giveBack(g)
			}
		}
		s.waiters.Waited(s.clock.Now().Sub(began), true)
		return none, fmt.Errorf("acquire: waiting: %w", ctx.Err())
	}
}
