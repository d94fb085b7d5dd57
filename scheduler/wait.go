package scheduler

import (
	"context"
	"errors"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
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
	return g.Value, err
}

// AcquireByAffinityContext is AcquireByAffinity that waits like
// AcquireContext. A caller that has to wait takes whichever resource comes
// free first.
func (s *Scheduler[T, ID]) AcquireByAffinityContext(ctx context.Context, id acquire.AffinityIdentifier) (T, error) {
	if v, err := s.AcquireByAffinity(id); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		return v, err
	}
	g, err := s.obtain(ctx, id, false, nil)
	return g.Value, err
}

// obtain takes a hold, and waits for one when it finds none (see
// waiting.Room.Wait). With id set it acquires by affinity.
func (s *Scheduler[T, ID]) obtain(ctx context.Context, id acquire.AffinityIdentifier, lease bool, cost config.Cost) (waiting.Grant[T, ID], error) {
	g := waiting.Grant[T, ID]{Cost: cost}
	if s.closed.Load() {
		return g, crserrors.ErrSchedulerClosed
	}
	start := 0
	if id == nil {
		var err error
		if start, err = s.strategyStart(); err != nil {
			return g, err
		}
	}
	if !s.room.MustQueue() && s.search(start, id, lease, &g) {
		return g, nil
	}
	return s.room.Wait(ctx, start, id, lease, cost)
}

// search takes a hold: for id, on the resource it maps to or the next
// available in its order, else (and without id) on the best of the
// shard the strategy picked, or of the next non-empty shards.
func (s *Scheduler[T, ID]) search(start int, id acquire.AffinityIdentifier, lease bool, g *waiting.Grant[T, ID]) bool {
	return id != nil && s.sweepAffinity(id, lease, g) || s.sweep(start, lease, g)
}

// host is the scheduler seen by its waiting room (waiting.Host). It is
// a conversion of the scheduler pointer, so that the room's calls need
// no closures and the scheduler's method set stays its public API.
type host[T any, ID comparable] Scheduler[T, ID]

func (h *host[T, ID]) Now() int64 { return (*Scheduler[T, ID])(h).now() }

func (h *host[T, ID]) Hold(sh *shard.Shard[T, ID], n *node.Node[T, ID], lease bool, g *waiting.Grant[T, ID]) {
	(*Scheduler[T, ID])(h).hold(sh, n, lease, g)
}

func (h *host[T, ID]) Acquired(n *node.Node[T, ID]) { (*Scheduler[T, ID])(h).acquired(n) }

func (h *host[T, ID]) Wake(i int, at int64) { h.deadlines.Schedule(at, wake[T, ID](i)) }

func (h *host[T, ID]) Search(start int, id acquire.AffinityIdentifier, lease bool, cost config.Cost) (waiting.Grant[T, ID], bool) {
	g := waiting.Grant[T, ID]{Cost: cost}
	found := (*Scheduler[T, ID])(h).search(start, id, lease, &g)
	return g, found
}
