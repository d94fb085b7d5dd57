package prometheus

import (
	"github.com/crsched/crs/extensions/metrics"
	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus"
)

// WithCRSNames makes the collector export the metrics of CRS v1.2.3's
// collector instead of this package's, with CRS's names, help texts and
// types, and no labels but WithConstLabels': the six gauges
// crs_heap_count, crs_resources_total, crs_resources_active,
// crs_resources_inactive, crs_heaps_empty and crs_heaps_non_empty, and,
// with telemetry, the seven counters crs_events_add_total …
// crs_events_update_total. It is for the dashboards and alerts of an
// upgrade from CRS: none of the names collides with this package's, so
// a registry can hold both collectors of one scheduler while the
// dashboards move to the new names.
//
//	reg.MustRegister(crsprom.NewCollector(sched, telemetry))
//	reg.MustRegister(crsprom.NewCollector(sched, telemetry, crsprom.WithCRSNames()))
//
// The names break Prometheus's conventions, as CRS's did (promlint flags
// the gauges crs_heap_count and crs_resources_total). The events CRS did
// not have (expire, suspend, eject, resume) are not counted, and
// crs_resources_inactive counts every resource out of the heaps: held,
// excluded, suspended, ejected or rate-limited. WithBudgets still adds
// crs_budget_remaining.
func WithCRSNames() Option {
	return func(o *options) error {
		o.crsNames = true
		return nil
	}
}

// crsScalarSpecs are CRS v1.2.3's gauges, as its extensions/prometheus
// exporter.go declares them.
var crsScalarSpecs = []scalarSpec{
	{"crs_heap_count", "Total number of heap shards in the scheduler", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.HeapCount) }},
	{"crs_resources_total", "Total number of resources registered in the scheduler", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.TotalResources) }},
	{"crs_resources_active", "Total number of resources currently active and available", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.ActiveResources) }},
	{"crs_resources_inactive", "Total number of resources currently inactive (acquired or cooling down)", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.InactiveResources) }},
	{"crs_heaps_empty", "Number of heap shards that are currently empty", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.EmptyHeaps) }},
	{"crs_heaps_non_empty", "Number of heap shards that currently contain at least one active resource", prometheus.GaugeValue,
		func(s *stats.Stats) float64 { return float64(s.NonEmptyHeaps) }},
}

// crsEventCounters are CRS v1.2.3's counters, a metric per event type.
var crsEventCounters = []struct {
	name, help string
	count      func(*metrics.TelemetryStats) uint64
}{
	{"crs_events_add_total", "Total number of resources added to the scheduler",
		func(t *metrics.TelemetryStats) uint64 { return t.AddCount }},
	{"crs_events_acquire_total", "Total number of successful acquires",
		func(t *metrics.TelemetryStats) uint64 { return t.AcquireCount }},
	{"crs_events_release_total", "Total number of resources released back to the scheduler",
		func(t *metrics.TelemetryStats) uint64 { return t.ReleaseCount }},
	{"crs_events_exclude_total", "Total number of resources manually excluded",
		func(t *metrics.TelemetryStats) uint64 { return t.ExcludeCount }},
	{"crs_events_include_total", "Total number of resources manually included",
		func(t *metrics.TelemetryStats) uint64 { return t.IncludeCount }},
	{"crs_events_remove_total", "Total number of resources permanently removed",
		func(t *metrics.TelemetryStats) uint64 { return t.RemoveCount }},
	{"crs_events_update_total", "Total number of resource updates",
		func(t *metrics.TelemetryStats) uint64 { return t.UpdateCount }},
}

// crsMetrics sets up CRS v1.2.3's metrics (WithCRSNames).
func (c *Collector) crsMetrics(desc descFunc) {
	c.scalars = scalars(desc, crsScalarSpecs)
	if c.telemetry == nil {
		return
	}
	for _, e := range crsEventCounters {
		c.counters = append(c.counters, counter{desc: desc(e.name, e.help), count: e.count})
	}
}
