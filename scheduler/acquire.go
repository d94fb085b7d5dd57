package scheduler

import (
	"context"

	"github.com/crsched/crs/acquire"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/waiting"
)

// Acquire returns the best resource of the shard the strategy selects, or,
// when that shard is empty, of the next non-empty shard after it. Under the
// Shared policy the resource stays active; under Exclusive it takes one of
// the resource's slots until Release. It returns ErrNoResourceAvailable
// when no resource is active and ErrInvalidAcquireStrategy when the
// strategy returns an index out of range. AcquireContext waits instead.
func (s *Scheduler[T, ID]) Acquire() (T, error) {
	var zero T
	if s.closed.Load() { // begin, written out: see below
		return zero, crserrors.ErrSchedulerClosed
	}
	start, err := s.strategyStart()
	if err != nil {
		return zero, err
	}
	if s.lockFree && !s.global {
		// A shared acquisition changes nothing: the first published top
		// is the answer, read with no lock and no write. This is the
		// request's first sweep, written out here because a shared
		// Acquire measured slower through the calls.
		for i := range len(s.shards) {
			sh := &s.shards[s.search.Wrap(start+i)]
			n, v, _, ok := sh.Peek()
			if !ok {
				n, v, _ = s.search.LockedPeek(sh)
			}
			if n != nil {
				s.acquired(n)
				return v, nil
			}
		}
	}
	g := waiting.Grant[T, ID]{Tenant: s.defTenant}
	err = s.request(noWait, start, nil, false, &g)
	return g.Value, err
}

// AcquireByAffinity returns the resource that id maps to, so that the same
// identifier keeps getting the same resource while that resource is
// available, whatever the priorities do. While it is not (held, resting,
// excluded, removed), the identifier gets the next available resource in
// an order fixed by the identifier, so the fallback is deterministic too.
// Identifiers spread evenly over the resources. Priority plays no part,
// except when no resource in the identifier's order is available, when it
// returns the best available like Acquire.
func (s *Scheduler[T, ID]) AcquireByAffinity(id acquire.AffinityIdentifier) (T, error) {
	g := waiting.Grant[T, ID]{Tenant: s.defTenant}
	if id == nil { // before the closed flag, as CRS checked them
		return g.Value, crserrors.ErrNilAffinityIdentifier
	}
	start, err := s.begin(id)
	if err == nil {
		err = s.request(noWait, start, id, false, &g)
	}
	return g.Value, err
}

// begin is the start of every acquisition: it checks that the scheduler
// is open and asks the strategy for the shard to start from (an affinity
// identifier needs none: its candidates come first, then shard 0 on).
func (s *Scheduler[T, ID]) begin(id acquire.AffinityIdentifier) (int, error) {
	if s.closed.Load() {
		return 0, crserrors.ErrSchedulerClosed
	}
	if id != nil {
		return 0, nil
	}
	return s.strategyStart()
}

// noWait is the context of an acquisition that does not wait: none.
var noWait context.Context

// request is the one path of every acquisition after begin: Acquire's
// and AcquireByAffinity's (ctx noWait), AcquireContext's,
// Lease's and their affinity forms' (they wait until ctx ends). It takes
// a hold into g, for the cost g.Cost and as a lease if lease is set.
// The fast case, a resource available and nobody ahead in the order of
// service, is the if at its top. (The grant goes into g, down the calls,
// rather than back up as a result: a struct returned through three calls
// is copied at each, which was slow enough to matter.)
func (s *Scheduler[T, ID]) request(ctx context.Context, start int, id acquire.AffinityIdentifier, lease bool, g *waiting.Grant[T, ID]) error {
	if !s.room.MustQueue(g) && s.search.Search(start, id, lease, g) {
		s.acquired(g.Node)
		return nil
	}
	if ctx != noWait {
		var err error
		*g, err = s.room.Wait(ctx, start, id, lease, waiting.Grant[T, ID]{Cost: g.Cost, Tenant: g.Tenant, Priority: g.Priority})
		return err
	}
	if s.room.MustQueue(g) {
		return crserrors.ErrNoResourceAvailable // the strict order (see waiting.Room.MustQueue)
	}
	if err := s.search.ProveEmpty(start, lease, g); err != nil {
		return err
	}
	s.acquired(g.Node)
	return nil
}

// strategyStart asks the strategy for the first shard to look in, and
// checks the shard it names. The default strategy is acquire.RoundRobin's
// rotation, asked without the interface (see docs/BENCHMARKS.md).
func (s *Scheduler[T, ID]) strategyStart() (int, error) {
	if s.strategy == nil {
		return s.rotation.Next(len(s.shards)), nil
	}
	start := s.strategy.Select(s.view)
	if start < 0 || start >= len(s.shards) {
		return 0, crserrors.ErrInvalidAcquireStrategy
	}
	return start, nil
}

// shardView is the scheduler seen as an acquire.ShardView. It is a
// conversion of the scheduler pointer, so passing it to a strategy as an
// interface does not allocate.
type shardView[T any, ID comparable] Scheduler[T, ID]

func (v *shardView[T, ID]) ShardCount() int { return len(v.shards) }

func (v *shardView[T, ID]) ActiveCount(i int) int {
	if i < 0 || i >= len(v.shards) {
		return 0
	}
	return int(v.shards[i].Active.Load())
}
