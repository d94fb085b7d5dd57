package scheduler

import (
	"fmt"

	"github.com/crsched/crs/stats"
)

// Stats returns a snapshot of the pool. Each shard is read under its own
// lock, one after another (see stats.Stats).
func (s *Scheduler[T, ID]) Stats() stats.Stats {
	st := stats.Stats{
		HeapCount:       len(s.shards),
		AcquirePolicy:   s.policy.String(),
		AcquireStrategy: strategyName(s.strategy),
		HeapSizes:       make([]int, len(s.shards)),
	}
	for i := range s.shards {
		active, held, excluded := s.shards[i].counts()
		st.HeapSizes[i] = active
		st.ActiveResources += active
		st.HeldResources += held
		st.ExcludedResources += excluded
		if active == 0 {
			st.EmptyHeaps++
		}
	}
	st.NonEmptyHeaps = st.HeapCount - st.EmptyHeaps
	st.InactiveResources = st.HeldResources + st.ExcludedResources
	st.TotalResources = st.ActiveResources + st.InactiveResources
	if s.events != nil {
		st.DroppedEvents = s.events.Dropped()
		st.ObserverPanics = s.events.Panics()
	}
	return st
}

func (s *shard[T, ID]) counts() (active, held, excluded int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heap.Len(), s.held, s.excluded
}

func strategyName(st any) string {
	if named, ok := st.(fmt.Stringer); ok {
		return named.String()
	}
	return fmt.Sprintf("%T", st)
}
