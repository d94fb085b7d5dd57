package scheduler

import (
	"github.com/crsched/crs/acquire"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
)

// Acquire returns the best resource of the shard the strategy selects, or,
// when that shard is empty, of the next non-empty shard after it. Under the
// Shared policy the resource stays active; under Exclusive it takes one of
// the resource's slots until Release. It returns ErrNoResourceAvailable
// when no resource is active and ErrInvalidAcquireStrategy when the
// strategy returns an index out of range. AcquireContext waits instead.
func (s *Scheduler[T, ID]) Acquire() (T, error) {
	var zero T
	if s.closed.Load() {
		return zero, crserrors.ErrSchedulerClosed
	}
	start, err := s.strategyStart(nil)
	if err != nil {
		return zero, err
	}
	return s.take(start)
}

// AcquireByAffinity is Acquire starting from the shard that the consistent
// hash ring assigns to id, so that the same identifier always starts from
// the same shard. When that shard is empty it falls back to the following
// shards in order, so the fallback is deterministic too.
func (s *Scheduler[T, ID]) AcquireByAffinity(id acquire.AffinityIdentifier) (T, error) {
	var zero T
	if s.closed.Load() {
		return zero, crserrors.ErrSchedulerClosed
	}
	start, err := s.affinityStart(id)
	if err != nil {
		return zero, err
	}
	return s.take(start)
}

// take acquires from the first non-empty shard at or after start.
//
// Reporting ErrNoResourceAvailable needs care: shards are checked one after
// another, and a resource may arrive in a shard already checked while a
// later one is emptied, so that the pool was never empty at any one
// instant. Each shard counts its arrivals; when a sweep finds nothing, the
// sum of those counts taken before and after the sweep proves that nothing
// arrived in between (the counts only grow), and then every shard was empty
// at the end of the sweep. If something did arrive, sweep again: that
// resource was taken by another caller, so the system as a whole made
// progress.
func (s *Scheduler[T, ID]) take(start int) (T, error) {
	if g, ok := s.sweep(start, false); ok {
		return g.value, nil
	}
	for {
		before := s.arrivals()
		if g, ok := s.sweep(start, false); ok {
			return g.value, nil
		}
		if s.arrivals() == before {
			var zero T
			return zero, crserrors.ErrNoResourceAvailable
		}
	}
}

func (s *Scheduler[T, ID]) arrivals() uint64 {
	var sum uint64
	for i := range s.shards {
		sum += s.shards[i].arrivals.Load()
	}
	return sum
}

// sweep takes a hold (see hold) on the best resource of the first
// non-empty shard at or after start.
func (s *Scheduler[T, ID]) sweep(start int, lease bool) (grant[T, ID], bool) {
	for i := 0; i < len(s.shards); i++ {
		idx := start + i
		if idx >= len(s.shards) {
			idx -= len(s.shards)
		}
		sh := &s.shards[idx]
		if sh.active.Load() == 0 {
			continue
		}
		if g, ok := s.takeFrom(sh, lease); ok {
			s.emit(events.EventAcquire, g.node.Key)
			return g, true
		}
	}
	return grant[T, ID]{}, false
}

func (s *Scheduler[T, ID]) takeFrom(sh *shard[T, ID], lease bool) (grant[T, ID], bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.mend(sh)
	n := sh.heap.Top()
	if n == nil {
		return grant[T, ID]{}, false
	}
	return s.hold(sh, n, lease), true
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
	return int(v.shards[i].active.Load())
}
