package scheduler

import (
	"fmt"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
)

// Acquire returns the best resource of the shard the strategy selects, or,
// when that shard is empty, of the next non-empty shard after it. Under the
// Shared policy the resource stays active; under Exclusive it is held
// until Release. It returns ErrNoResourceAvailable when no resource is
// active and ErrInvalidAcquireStrategy when the strategy returns an index
// out of range.
func (s *Scheduler[T, ID]) Acquire() (T, error) {
	var zero T
	if s.closed.Load() {
		return zero, crserrors.ErrSchedulerClosed
	}
	start := s.strategy.Select(s.view)
	if start < 0 || start >= len(s.shards) {
		return zero, fmt.Errorf("%w: shard %d of %d", crserrors.ErrInvalidAcquireStrategy, start, len(s.shards))
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
	if id == nil {
		return zero, crserrors.ErrNilAffinityIdentifier
	}
	s.ringOnce.Do(func() { s.ring = acquire.NewConsistentHashRing(len(s.shards)) })
	return s.take(s.ring.GetShard(acquire.HashIdentifier(id)))
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
	if v, ok := s.sweep(start); ok {
		return v, nil
	}
	for {
		before := s.arrivals()
		if v, ok := s.sweep(start); ok {
			return v, nil
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

func (s *Scheduler[T, ID]) sweep(start int) (T, bool) {
	for i := 0; i < len(s.shards); i++ {
		idx := start + i
		if idx >= len(s.shards) {
			idx -= len(s.shards)
		}
		sh := &s.shards[idx]
		if sh.active.Load() == 0 {
			continue
		}
		if v, key, ok := s.takeFrom(sh); ok {
			s.emit(events.EventAcquire, key)
			return v, true
		}
	}
	var zero T
	return zero, false
}

func (s *Scheduler[T, ID]) takeFrom(sh *shard[T, ID]) (v T, key ID, ok bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.repair()
	n := sh.heap.Top()
	if n == nil {
		return v, key, false
	}
	if s.policy == config.Exclusive {
		sh.deactivate(n, node.Held)
	}
	return n.Value, n.Key, true
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
