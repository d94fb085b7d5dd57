package prometheus

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/extensions/metrics"
	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus"
)

// StatsSource is what the collector reads the pool from: a
// *scheduler.Scheduler[T, ID] of any T and ID.
type StatsSource interface {
	Stats() stats.Stats
}

// TelemetrySource is what the collector reads event counts from: a
// *metrics.TelemetryObserver[ID] registered in the scheduler's
// Config.Observers. Give each scheduler its own observer when you export
// several: an observer shared by two schedulers counts both.
type TelemetrySource interface {
	Snapshot() metrics.TelemetryStats
}

// MetricsProvider is CRS v1.2.3's name for StatsSource, kept so that
// code written for CRS compiles.
//
// Deprecated: Use StatsSource.
type MetricsProvider = StatsSource

// TelemetryProvider is CRS v1.2.3's name for TelemetrySource, kept so
// that code written for CRS compiles.
//
// Deprecated: Use TelemetrySource.
type TelemetryProvider = TelemetrySource

// Collector is a prometheus.Collector for one scheduler. It is safe for
// concurrent scrapes and holds no state between them: each Collect reads
// the scheduler's Stats once and the telemetry's Snapshot once, and
// builds the metrics from those two values.
type Collector struct {
	stats     StatsSource
	telemetry TelemetrySource // nil: no event counters

	descs    []*prometheus.Desc // every descriptor, once, for Describe
	scalars  []scalar
	pool     *poolDescs  // nil with WithCRSNames
	shares   *shareDescs // nil with WithCRSNames
	counters []counter   // nil without telemetry
	budgets  budgetSource
	budget   *prometheus.Desc // nil without WithBudgets
}

type scalar struct {
	desc *prometheus.Desc
	spec *scalarSpec
}

// counter is one series of event counts: with this package's names, one
// value of crs_events_total's type label; with CRS's, a metric per type.
type counter struct {
	desc   *prometheus.Desc
	labels []string
	count  func(*metrics.TelemetryStats) uint64
}

// poolDescs are this package's labelled metrics of the pool.
type poolDescs struct {
	resources, shardActive, waitDuration, info *prometheus.Desc
}

// descFunc makes a descriptor with the collector's constant labels.
type descFunc func(name, help string, labels ...string) *prometheus.Desc

// New returns a collector that exports source's stats and, unless
// telemetry is nil, its event counts. It returns ErrNilStats if source is
// nil (or a nil pointer) and ErrInvalidLabel for a bad WithConstLabels. A
// nil pointer for telemetry counts as nil.
func New(source StatsSource, telemetry TelemetrySource, opts ...Option) (*Collector, error) {
	if isNil(source) {
		return nil, ErrNilStats
	}
	var o options
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	c := &Collector{stats: source}
	if !isNil(telemetry) {
		c.telemetry = telemetry
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		d := prometheus.NewDesc(name, help, labels, o.constLabels)
		c.descs = append(c.descs, d)
		return d
	}
	if o.crsNames {
		c.crsMetrics(desc)
	} else {
		c.ownMetrics(desc)
	}
	if o.budgets != nil {
		c.budgets = o.budgets
		c.budget = desc(nameBudget, "Units left now in each budget (Config.Limits) of each resource, negative in debt.", labelResource, labelLimit)
	}
	// NewDesc reports its own problems only through Err; with the names
	// above and checked labels there are none, unless a future edit adds
	// one, which this turns into an error rather than a failed scrape.
	for _, d := range c.descs {
		if err := d.Err(); err != nil {
			return nil, fmt.Errorf("crs/prometheus: %w", err)
		}
	}
	return c, nil
}

// ownMetrics sets up this package's metrics.
func (c *Collector) ownMetrics(desc descFunc) {
	c.scalars = scalars(desc, scalarSpecs)
	c.pool = &poolDescs{
		resources:    desc(nameResources, "Resources by state; draining ones were removed while held and leave with their last holder.", labelState),
		shardActive:  desc(nameShardActive, "Active (acquirable) resources in each heap shard.", labelShard),
		waitDuration: desc(nameWaitDuration, "How long calls waited for a resource, including waits their context ended."),
		info:         desc(nameInfo, "Always 1; labels give the scheduler's acquire policy and strategy.", labelPolicy, labelStrategy),
	}
	c.shares = newShareDescs(desc)
	if c.telemetry == nil {
		return
	}
	events := desc(nameEvents, "Scheduler events seen by the telemetry observer, by type. Events dropped from a full queue are in "+nameEventsDropped+" instead.", labelType)
	for _, e := range eventCounters {
		c.counters = append(c.counters, counter{events, []string{e.label}, e.count})
	}
}

func scalars(desc descFunc, specs []scalarSpec) []scalar {
	out := make([]scalar, len(specs))
	for i := range specs {
		out[i] = scalar{desc(specs[i].name, specs[i].help), &specs[i]}
	}
	return out
}

// NewCollector is New for callers that cannot handle an error, with the
// seed's signature: NewCollector(sched, telemetry) compiles as it did. It
// panics with New's error (ErrNilStats, ErrInvalidLabel), like
// prometheus.MustRegister.
func NewCollector(source StatsSource, telemetry TelemetrySource, opts ...Option) *Collector {
	c, err := New(source, telemetry, opts...)
	if err != nil {
		panic(err)
	}
	return c
}

// Describe implements prometheus.Collector. The set of metrics is fixed
// when the collector is made, so the registry can check it for conflicts
// at registration.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats.Stats()

	for _, s := range c.scalars {
		ch <- constMetric(s.desc, s.spec.kind, s.spec.value(&st))
	}
	if c.pool != nil {
		c.pool.collect(ch, &st)
		c.shares.collect(ch, &st)
	}
	if c.telemetry != nil {
		t := c.telemetry.Snapshot()
		for _, e := range c.counters {
			ch <- constMetric(e.desc, prometheus.CounterValue, float64(e.count(&t)), e.labels...)
		}
	}
	if c.budgets != nil {
		// The scheduler calls this with no lock held (Scheduler.Budgets):
		// the registry may take its time reading ch.
		c.budgets(func(resource, limit string, remaining int64) bool {
			ch <- constMetric(c.budget, prometheus.GaugeValue, float64(remaining), resource, limit)
			return true
		})
	}
}

// collect exports the resources by state, the shards, the wait histogram
// and the scheduler's info.
func (p *poolDescs) collect(ch chan<- prometheus.Metric, st *stats.Stats) {
	for _, state := range resourceStates {
		ch <- constMetric(p.resources, prometheus.GaugeValue, float64(state.count(st)), state.name)
	}
	p.collectShards(ch, st.HeapSizes)
	ch <- waitHistogram(p.waitDuration, st.WaitHistogram, st.WaitTime)
	ch <- constMetric(p.info, prometheus.GaugeValue, 1, labelValue(st.AcquirePolicy), labelValue(st.AcquireStrategy))
}

// collectShards exports one series per shard. The core allows at most
// config.MaxHeapCount shards; a source reporting more is refused rather
// than allowed to grow the series count without bound.
func (p *poolDescs) collectShards(ch chan<- prometheus.Metric, sizes []int) {
	if len(sizes) > config.MaxHeapCount {
		ch <- prometheus.NewInvalidMetric(p.shardActive, fmt.Errorf(
			"%w: %d shards, at most %d", ErrInvalidStats, len(sizes), config.MaxHeapCount))
		return
	}
	for i, n := range sizes {
		ch <- constMetric(p.shardActive, prometheus.GaugeValue, float64(n), strconv.Itoa(i))
	}
}

// constMetric reports a metric that cannot be built as a collection error
// for that metric alone, instead of panicking in the scrape.
func constMetric(desc *prometheus.Desc, kind prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, kind, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// labelValue makes a name from the scheduler (a custom strategy's String,
// say) a valid label value.
func labelValue(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// isNil reports a nil interface or an interface holding a nil pointer,
// whose methods would panic at the first scrape rather than here.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
