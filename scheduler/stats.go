package scheduler

import (
	"fmt"
	"slices"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/histogram"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/stats"
)

// Stats returns a snapshot of the pool. Each shard is read under its own
// lock, one after another (see stats.Stats).
func (s *Scheduler[T, ID]) Stats() stats.Stats {
	st := stats.Stats{
		HeapCount:       len(s.shards),
		AcquirePolicy:   policyName(s.policy),
		AcquireStrategy: strategyName(s.strategy),
	}
	c, sizes := shard.Total(s.shards)
	st.HeapSizes = sizes
	for _, k := range sizes {
		if k == 0 {
			st.EmptyHeaps++
		}
	}
	st.ActiveResources, st.HeldResources, st.Holders = c.Active, c.Held, c.Holders
	st.ExcludedResources, st.DrainingResources = c.Excluded, c.Draining
	st.SuspendedResources = c.Resting[node.Suspended]
	st.EjectedResources = c.Resting[node.Ejected]
	st.RateLimitedResources = c.Resting[node.RateLimited]
	st.NonEmptyHeaps = st.HeapCount - st.EmptyHeaps
	st.InactiveResources = st.HeldResources + st.ExcludedResources +
		st.SuspendedResources + st.EjectedResources + st.RateLimitedResources
	st.TotalResources = st.ActiveResources + st.InactiveResources
	if s.events != nil {
		st.DroppedEvents = s.events.Dropped()
		st.ObserverPanics = s.events.Panics()
	}
	st.Waiters = s.room.Len()
	var counts []uint64
	var panics uint64
	counts, st.WaitTime, st.CancelledWaits, st.LimitWaits, panics = s.room.Totals()
	st.WaitHistogram = stats.Histogram{Bounds: slices.Clone(histogram.Bounds), Counts: counts}
	st.Waits = st.WaitHistogram.Total()
	st.ComparatorPanics = panics + s.deadlines.Panics()
	st.ExpiredLeases = s.expired.Load()
	st.Suspensions = s.totals.suspensions.Load()
	st.Ejections = s.totals.ejections.Load()
	st.Failures = s.totals.failures.Load()
	st.Tenants, st.Priorities = s.room.Shares()
	return st
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
// Stats named it; nil, the default rotation, is "RoundRobin".
func strategyName(st any) string {
	if st == nil {
		return "RoundRobin"
	}
	if named, ok := st.(fmt.Stringer); ok {
		return named.String()
	}
	return "CustomStrategy"
}

// Remaining returns the units left now in each budget of the resource
// with key id, by limit name: negative for a bucket in debt, empty for a
// resource without limits. It returns ErrResourceNotFound for an unknown
// key.
func (s *Scheduler[T, ID]) Remaining(id ID) (map[string]int64, error) {
	if s.closed.Load() {
		return nil, crserrors.ErrSchedulerClosed
	}
	var out map[string]int64
	_, err := s.locked(id, func(_ *shard.Shard[T, ID], n *node.Node[T, ID]) (bool, error) {
		out = make(map[string]int64, len(n.Budgets()))
		n.Budgets().Levels(s.now(), func(name string, _, level int64) { out[name] = level })
		return false, nil
	})
	return out, err
}

// Budget is one budget of a resource, as Scheduler.Budgets reports it.
type Budget struct {
	Limit     string // the limit's Name
	Max       int64
	Remaining int64 // units left; negative for a bucket in debt
}

// Budgets calls yield with the key and each budget of every resource
// that has limits, as of now, until yield returns false: what Remaining
// reports, for the whole pool at once (an exporter's scrape, say). A
// resource removed while held is left out. Each shard is read under its
// lock, into a copy, and yield runs with no lock held, so it may be slow
// or call the scheduler; a resource added or removed during the call may
// or may not be reported, and resources of different shards are read at
// different instants.
func (s *Scheduler[T, ID]) Budgets(yield func(ID, Budget) bool) {
	if !s.budgeted || s.closed.Load() {
		return
	}
	// The map's lock (if it takes one) comes after a shard's, never
	// before: collect the nodes first, then read each shard's.
	byShard := make([][]*node.Node[T, ID], len(s.shards))
	s.nodes.Range(func(_ ID, n *node.Node[T, ID]) {
		byShard[n.Shard] = append(byShard[n.Shard], n)
	})
	type entry struct {
		key ID
		b   Budget
	}
	var read []entry
	for i, nodes := range byShard {
		read = read[:0]
		func() {
			sh := &s.shards[i]
			sh.Lock()
			defer sh.Unlock()
			now := s.now()
			for _, n := range nodes {
				if gone(n) {
					continue
				}
				n.Budgets().Levels(now, func(name string, max, level int64) {
					read = append(read, entry{n.Key, Budget{name, max, level}})
				})
			}
		}()
		for _, e := range read {
			if !yield(e.key, e.b) {
				return
			}
		}
	}
}
