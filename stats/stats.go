// Package stats defines the snapshot returned by Scheduler.Stats.
package stats

import "time"

// Stats is a point-in-time snapshot of a scheduler. Each shard is read
// under its own lock, so the per-shard figures are consistent with each
// other; shards are read one after another, so totals may mix moments when
// other goroutines change the pool during the call.
type Stats struct {
	HeapCount int
	// TotalResources counts every resource that has been added and not
	// removed: ActiveResources + InactiveResources.
	TotalResources int
	// ActiveResources are in a heap and can be acquired.
	ActiveResources int
	// InactiveResources are out of the heaps: HeldResources +
	// ExcludedResources + SuspendedResources + EjectedResources +
	// RateLimitedResources.
	InactiveResources int
	// HeldResources have every slot taken (Exclusive policy) and wait for
	// a holder to release.
	HeldResources int
	// ExcludedResources were taken out of the pool by Exclude.
	ExcludedResources int
	// SuspendedResources rest until a deadline (Suspend, a cooldown), and
	// EjectedResources after repeated failures; RateLimitedResources wait
	// for their next token. All three are counted in InactiveResources.
	SuspendedResources   int
	EjectedResources     int
	RateLimitedResources int
	// DrainingResources were removed while held and still have holders;
	// they are not counted in TotalResources.
	DrainingResources int
	// Holders is the number of holds outstanding: exclusive acquisitions
	// not yet released plus leases (under either policy).
	Holders       int
	EmptyHeaps    int
	NonEmptyHeaps int
	// AcquirePolicy is "Shared" or "Exclusive", as in CRS.
	AcquirePolicy string
	// AcquireStrategy names the strategy as in CRS: "RoundRobin",
	// "Weighted", "Adaptive", "Local", a custom strategy's String(), or
	// "CustomStrategy" for one without.
	AcquireStrategy string
	// HeapSizes holds the number of active resources in each shard.
	HeapSizes []int
	// DroppedEvents counts events dropped because the queue was full or
	// the scheduler was shut down.
	DroppedEvents uint64
	// ObserverPanics counts panics recovered from Observer.OnEvent.
	ObserverPanics uint64
	// ComparatorPanics counts comparator panics that the scheduler
	// recovered because no caller could be told of them: on its own timer
	// (the step is undone and retried), or while it handed a resource to
	// a waiter after the operation that freed the resource had taken
	// effect. Every other comparator panic reaches the caller whose
	// operation it undid, and is not counted.
	ComparatorPanics uint64

	// Waiters is the number of callers waiting for a resource now.
	Waiters int
	// Waits counts calls that had to wait, however the wait ended.
	Waits uint64
	// CancelledWaits counts waits ended by their context.
	CancelledWaits uint64
	// LimitWaits counts the Waits that limits (config.Config.Limits and
	// RateLimit) caused: those that began while a resource with a free
	// slot was kept from the oldest waiter by its limits alone, because
	// it rested for them (a rate-limit token, a budget below one unit) or
	// its budgets fell short of that waiter's cost. The oldest waiter may
	// be the caller or, in the strict FIFO order of budgets, one it
	// queued behind. A wait for a resource whose every slot is taken is
	// not one of them, whatever its budgets hold.
	LimitWaits uint64
	// WaitTime is the total time spent waiting, over all Waits.
	WaitTime time.Duration
	// WaitHistogram distributes the Waits by how long they lasted.
	WaitHistogram Histogram
	// ExpiredLeases counts leases reclaimed at their deadline.
	ExpiredLeases uint64
	// Suspensions counts suspensions (Suspend and cooldowns), Ejections
	// ejections, and Failures the failures reported with Lease.Fail.
	Suspensions uint64
	Ejections   uint64
	Failures    uint64

	// Tenants and Priorities break the waiters and grants down by tenant
	// (by name, "" the default) and by priority (highest first), once a
	// call has named a tenant or a priority or config.Config.Tenants is
	// set; nil until then. Tenant names are the user's and become label
	// values of metrics (extensions/prometheus): keep their number
	// bounded.
	Tenants    []TenantStats
	Priorities []PriorityStats
}

// TenantStats is one tenant's share: its callers waiting now, the grants
// it has had, and their usage in share units (config.Config.ShareBy: one
// per grant without it), corrected by settlements.
type TenantStats struct {
	Name    string
	Waiters int
	Grants  uint64
	Usage   int64
}

// PriorityStats is TenantStats for one priority, over every tenant.
type PriorityStats struct {
	Priority int
	Waiters  int
	Grants   uint64
	Usage    int64
}

// Histogram is a distribution of durations over fixed buckets.
type Histogram struct {
	// Bounds are the buckets' inclusive upper bounds, ascending.
	Bounds []time.Duration
	// Counts has one entry per bound, plus a last one for durations above
	// the last bound. Counts are per bucket, not cumulative.
	Counts []uint64
}

// Total is the number of durations counted.
func (h Histogram) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}
