package scheduler

import (
	"fmt"
	"slices"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/histogram"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/stats"
)

// Stats returns a snapshot of the pool. Each shard is read under its own
// lock, one after another (see stats.Stats).
func (s *Scheduler[T, ID]) Stats() stats.Stats {
	st := stats.Stats{
		HeapCount:       len(s.shards),
		AcquirePolicy:   policyName(s.policy),
		AcquireStrategy: strategyName(s.strategy),
		HeapSizes:       make([]int, len(s.shards)),
	}
	for i := range s.shards {
		c := s.shards[i].counts()
		st.HeapSizes[i] = c.active
		st.ActiveResources += c.active
		st.HeldResources += c.held
		st.ExcludedResources += c.excluded
		st.DrainingResources += c.draining
		st.SuspendedResources += c.resting[node.Suspended]
		st.EjectedResources += c.resting[node.Ejected]
		st.RateLimitedResources += c.resting[node.RateLimited]
		st.Holders += c.holders
		if c.active == 0 {
			st.EmptyHeaps++
		}
	}
	st.NonEmptyHeaps = st.HeapCount - st.EmptyHeaps
	st.InactiveResources = st.HeldResources + st.ExcludedResources +
		st.SuspendedResources + st.EjectedResources + st.RateLimitedResources
	st.TotalResources = st.ActiveResources + st.InactiveResources
	if s.events != nil {
		st.DroppedEvents = s.events.Dropped()
		st.ObserverPanics = s.events.Panics()
	}
	st.Waiters = s.waiters.Len()
	var counts []uint64
	counts, st.WaitTime, st.CancelledWaits = s.waiters.Totals()
	st.WaitHistogram = stats.Histogram{Bounds: slices.Clone(histogram.Bounds), Counts: counts}
	st.Waits = st.WaitHistogram.Total()
	st.LimitWaits = s.limitWaits.Load()
	st.ExpiredLeases = s.expired.Load()
	st.Suspensions = s.totals.suspensions.Load()
	st.Ejections = s.totals.ejections.Load()
	st.Failures = s.totals.failures.Load()
	return st
}

type shardCounts struct {
	active, held, excluded, draining, holders int
	resting                                   [node.RestKinds]int
}

func (s *shard[T, ID]) counts() shardCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return shardCounts{s.heap.Len(), s.held, s.excluded, s.draining, s.holders, s.resting}
}

// policyName spells the policy as CRS's Stats did. (AcquirePolicy.String
// spells it as configuration and crsload's flags do, in lower case.)
func policyName(p config.AcquirePolicy) string {
	if p == config.Exclusive {
		return "Exclusive"
	}
	return "Shared"
}

// strategyName is the strategy's String, or "CustomStrategy", as CRS's
// Stats named it.
func strategyName(st any) string {
	if named, ok := st.(fmt.Stringer); ok {
		return named.String()
	}
	return "CustomStrategy"
}
