// Package prometheus exports a crs scheduler's state to Prometheus.
//
// It is a module of its own (github.com/crsched/crs/extensions/prometheus)
// so that the core keeps no third-party dependencies: only programs that
// import this package download client_golang.
//
// A Collector reads the scheduler's Stats once per scrape, and, when it is
// given one, the Snapshot of a metrics.TelemetryObserver for the event
// counters. It keeps no state of its own and never touches the scheduler
// between scrapes, so it costs nothing on the acquire path. Every label it
// sets has a bounded set of values (states, event types, shard indices up
// to config.MaxHeapCount): no label carries a resource key, unless
// WithBudgets asks for each resource's remaining budgets
// (crs_budget_remaining{resource, limit}), one series per resource and
// limit.
//
// The one label whose values are the user's is tenant: the waiters,
// grants and usage of each tenant (crs_tenant_waiters,
// crs_tenant_grants_total, crs_tenant_usage) and of each priority
// (crs_priority_*) are exported once calls name them
// (scheduler.WithTenant, WithPriority). Every tenant name becomes a label
// value and keeps its series for the life of the scheduler, so the
// number of series is the user's to bound: name tenants after teams or
// plans, not after end users.
//
//	telemetry := metrics.NewTelemetryObserver[string]()
//	sched, _ := scheduler.New(config.Config[*Worker, string]{
//		// ...
//		Observers: []events.Observer[string]{telemetry},
//	})
//	prometheus.MustRegister(crsprom.NewCollector(sched, telemetry))
//
// Several schedulers share a registry when each collector carries its own
// constant labels (WithConstLabels), e.g. a pool name.
//
// WithCRSNames exports the metrics of CRS v1.2.3's collector instead,
// under its names, for the dashboards and alerts of an upgrade; a
// registry can hold that collector beside the usual one.
package prometheus
