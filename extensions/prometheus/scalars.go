package prometheus

import (
	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus"
)

// scalarSpec is a metric without labels of its own, read from one field
// of stats.Stats.
type scalarSpec struct {
	name, help string
	kind       prometheus.ValueType
	value      func(*stats.Stats) float64
}

// The counters come from the scheduler's own monotonic counts, so they
// reset only when the scheduler is created again, which Prometheus's
// rate() handles as a counter reset.
var scalarSpecs = []scalarSpec{
	{nameShards, "Heap shards of the scheduler (Config.HeapCount).", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.HeapCount) }},
	{nameHolders, "Holds outstanding: exclusive acquisitions not yet released plus leases.", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.Holders) }},
	{nameWaiters, "Callers waiting for a resource now.", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.Waiters) }},
	{nameWaits, "Calls that had to wait for a resource, however the wait ended.", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.Waits) }},
	{nameWaitsCancelled, "Waits ended by the caller's context before a resource came.", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.CancelledWaits) }},
	{nameLimitWaits, "Waits that limits (Config.Limits, RateLimit) caused: a resource had a free slot, but it rested for its limits or its budgets did not cover the oldest waiter's cost.", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.LimitWaits) }},
	{nameLeasesExpired, "Leases reclaimed by the scheduler at their deadline.", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.ExpiredLeases) }},
	{nameEventsDropped, "Events dropped because the scheduler's event queue was full; observers never saw them.", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.DroppedEvents) }},
	{nameObserverPanics, "Panics recovered from observers.", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.ObserverPanics) }},
	{nameComparatorPanics, "Comparator panics the scheduler recovered because no caller could be told: on its timer, or while handing a resource to a waiter after the operation that freed it took effect.", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.ComparatorPanics) }},
	{nameSuspensions, "Suspensions: Suspend calls and cooldowns (ReleaseCooldown, Lease.Cooldown).", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.Suspensions) }},
	{nameEjections, "Ejections of resources after consecutive failures (config.Ejection).", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.Ejections) }},
	{nameFailures, "Failures reported with Lease.Fail.", prometheus.CounterValue,
		func(s *stats.Stats) float64 { return float64(s.Failures) }},
}
