package prometheus

// Metric names, in one place. The README's table and the dashboard are
// checked against what the collector exports by the tests. They follow
// https://prometheus.io/docs/practices/naming/: counters end in _total,
// gauges do not, durations are in seconds, and what varies within one
// meaning (a state, an event type, a shard) is a label, not a name.
const (
	nameShards           = "crs_shards"
	nameResources        = "crs_resources"
	nameShardActive      = "crs_shard_active_resources"
	nameHolders          = "crs_holders"
	nameWaiters          = "crs_waiters"
	nameWaits            = "crs_waits_total"
	nameWaitsCancelled   = "crs_waits_cancelled_total"
	nameLimitWaits       = "crs_limit_waits_total"
	nameWaitDuration     = "crs_wait_duration_seconds"
	nameLeasesExpired    = "crs_leases_expired_total"
	nameEvents           = "crs_events_total"
	nameEventsDropped    = "crs_events_dropped_total"
	nameObserverPanics   = "crs_observer_panics_total"
	nameComparatorPanics = "crs_comparator_panics_total"
	nameSuspensions      = "crs_suspensions_total"
	nameEjections        = "crs_ejections_total"
	nameFailures         = "crs_lease_failures_total"
	nameInfo             = "crs_scheduler_info"
	nameBudget           = "crs_budget_remaining"
	nameTenantWaiters    = "crs_tenant_waiters"
	nameTenantGrants     = "crs_tenant_grants_total"
	nameTenantUsage      = "crs_tenant_usage"
	namePriorityWaiters  = "crs_priority_waiters"
	namePriorityGrants   = "crs_priority_grants_total"
	namePriorityUsage    = "crs_priority_usage"
)

// Label names set by the collector; with the histogram's le and the
// summary's quantile, a constant label must not take any of them.
const (
	labelState    = "state"
	labelShard    = "shard"
	labelType     = "type"
	labelPolicy   = "policy"
	labelStrategy = "strategy"
	labelResource = "resource" // only with WithBudgets
	labelLimit    = "limit"    // only with WithBudgets
	labelTenant   = "tenant"   // a name of the user's: see the package doc
	labelPriority = "priority"
)

var ownLabels = []string{labelState, labelShard, labelType, labelPolicy, labelStrategy, labelResource, labelLimit, labelTenant, labelPriority, "le", "quantile"}
