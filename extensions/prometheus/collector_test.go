package prometheus_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// knownStateText is what the scheduler of knownState exports, every
// series with its value.
const knownStateText = `
# HELP crs_comparator_panics_total Comparator panics the scheduler recovered because no caller could be told: on its timer, or while handing a resource to a waiter after the operation that freed it took effect.
# TYPE crs_comparator_panics_total counter
crs_comparator_panics_total 0
# HELP crs_ejections_total Ejections of resources after consecutive failures (config.Ejection).
# TYPE crs_ejections_total counter
crs_ejections_total 1
# HELP crs_events_dropped_total Events dropped because the scheduler's event queue was full; observers never saw them.
# TYPE crs_events_dropped_total counter
crs_events_dropped_total 0
# HELP crs_events_total Scheduler events seen by the telemetry observer, by type. Events dropped from a full queue are in crs_events_dropped_total instead.
# TYPE crs_events_total counter
crs_events_total{type="acquire"} 6
crs_events_total{type="add"} 8
crs_events_total{type="eject"} 1
crs_events_total{type="exclude"} 7
crs_events_total{type="expire"} 1
crs_events_total{type="include"} 6
crs_events_total{type="release"} 3
crs_events_total{type="remove"} 1
crs_events_total{type="resume"} 0
crs_events_total{type="suspend"} 1
crs_events_total{type="update"} 1
# HELP crs_holders Holds outstanding: exclusive acquisitions not yet released plus leases.
# TYPE crs_holders gauge
crs_holders 2
# HELP crs_lease_failures_total Failures reported with Lease.Fail.
# TYPE crs_lease_failures_total counter
crs_lease_failures_total 1
# HELP crs_leases_expired_total Leases reclaimed by the scheduler at their deadline.
# TYPE crs_leases_expired_total counter
crs_leases_expired_total 1
# HELP crs_limit_waits_total Waits that limits (Config.Limits, RateLimit) caused: a resource had a free slot, but it rested for its limits or its budgets did not cover the oldest waiter's cost.
# TYPE crs_limit_waits_total counter
crs_limit_waits_total 0
# HELP crs_observer_panics_total Panics recovered from observers.
# TYPE crs_observer_panics_total counter
crs_observer_panics_total 1
# HELP crs_resources Resources by state; draining ones were removed while held and leave with their last holder.
# TYPE crs_resources gauge
crs_resources{state="active"} 2
crs_resources{state="draining"} 1
crs_resources{state="ejected"} 1
crs_resources{state="excluded"} 1
crs_resources{state="held"} 1
crs_resources{state="other"} 0
crs_resources{state="rate_limited"} 1
crs_resources{state="suspended"} 1
# HELP crs_scheduler_info Always 1; labels give the scheduler's acquire policy and strategy.
# TYPE crs_scheduler_info gauge
crs_scheduler_info{policy="Exclusive",strategy="RoundRobin"} 1
# HELP crs_shard_active_resources Active (acquirable) resources in each heap shard.
# TYPE crs_shard_active_resources gauge
crs_shard_active_resources{shard="0"} 1
crs_shard_active_resources{shard="1"} 1
# HELP crs_shards Heap shards of the scheduler (Config.HeapCount).
# TYPE crs_shards gauge
crs_shards 2
# HELP crs_suspensions_total Suspensions: Suspend calls and cooldowns (ReleaseCooldown, Lease.Cooldown).
# TYPE crs_suspensions_total counter
crs_suspensions_total 1
# HELP crs_wait_duration_seconds How long calls waited for a resource, including waits their context ended.
# TYPE crs_wait_duration_seconds histogram
crs_wait_duration_seconds_bucket{le="1e-06"} 2
crs_wait_duration_seconds_bucket{le="2e-06"} 2
crs_wait_duration_seconds_bucket{le="5e-06"} 2
crs_wait_duration_seconds_bucket{le="1e-05"} 2
crs_wait_duration_seconds_bucket{le="2e-05"} 2
crs_wait_duration_seconds_bucket{le="5e-05"} 2
crs_wait_duration_seconds_bucket{le="0.0001"} 2
crs_wait_duration_seconds_bucket{le="0.0002"} 2
crs_wait_duration_seconds_bucket{le="0.0005"} 2
crs_wait_duration_seconds_bucket{le="0.001"} 2
crs_wait_duration_seconds_bucket{le="0.002"} 2
crs_wait_duration_seconds_bucket{le="0.005"} 2
crs_wait_duration_seconds_bucket{le="0.01"} 2
crs_wait_duration_seconds_bucket{le="0.02"} 2
crs_wait_duration_seconds_bucket{le="0.05"} 2
crs_wait_duration_seconds_bucket{le="0.1"} 2
crs_wait_duration_seconds_bucket{le="0.2"} 2
crs_wait_duration_seconds_bucket{le="0.5"} 2
crs_wait_duration_seconds_bucket{le="1"} 2
crs_wait_duration_seconds_bucket{le="2"} 2
crs_wait_duration_seconds_bucket{le="5"} 2
crs_wait_duration_seconds_bucket{le="10"} 2
crs_wait_duration_seconds_bucket{le="+Inf"} 2
crs_wait_duration_seconds_sum 0
crs_wait_duration_seconds_count 2
# HELP crs_waiters Callers waiting for a resource now.
# TYPE crs_waiters gauge
crs_waiters 0
# HELP crs_waits_cancelled_total Waits ended by the caller's context before a resource came.
# TYPE crs_waits_cancelled_total counter
crs_waits_cancelled_total 1
# HELP crs_waits_total Calls that had to wait for a resource, however the wait ended.
# TYPE crs_waits_total counter
crs_waits_total 2
`

func TestCollectorExportsAKnownState(t *testing.T) {
	sched, telemetry := knownState(t)
	if err := testutil.CollectAndCompare(crsprom.NewCollector(sched, telemetry), strings.NewReader(knownStateText)); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorCountsDroppedEvents(t *testing.T) {
	telemetry := metrics.NewTelemetryObserver[string]()
	entered, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	// Holds the dispatcher inside the first event, so that the queue fills
	// at a known point.
	gate := events.ObserverFunc[string](func(events.Event[string]) {
		first.Do(func() {
			close(entered)
			<-release
		})
	})
	sched := newPool(t, config.Config[*worker, string]{
		EventQueueSize: 1,
		Observers:      []events.Observer[string]{telemetry, gate},
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release) // before Shutdown, which waits for the dispatcher
		}
	})

	must(t, "Add a", sched.Add(&worker{"a", 1})) // taken by the dispatcher
	<-entered
	must(t, "Add b", sched.Add(&worker{"b", 1})) // fills the queue of one
	must(t, "Add c", sched.Add(&worker{"c", 1})) // dropped
	must(t, "Add d", sched.Add(&worker{"d", 1})) // dropped
	close(release)
	sched.Shutdown()

	const want = `
# HELP crs_events_dropped_total Events dropped because the scheduler's event queue was full; observers never saw them.
# TYPE crs_events_dropped_total counter
crs_events_dropped_total 2
# HELP crs_events_total Scheduler events seen by the telemetry observer, by type. Events dropped from a full queue are in crs_events_dropped_total instead.
# TYPE crs_events_total counter
crs_events_total{type="acquire"} 0
crs_events_total{type="add"} 2
crs_events_total{type="eject"} 0
crs_events_total{type="exclude"} 0
crs_events_total{type="expire"} 0
crs_events_total{type="include"} 0
crs_events_total{type="release"} 0
crs_events_total{type="remove"} 0
crs_events_total{type="resume"} 0
crs_events_total{type="suspend"} 0
crs_events_total{type="update"} 0
`
	c := crsprom.NewCollector(sched, telemetry)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "crs_events_dropped_total", "crs_events_total"); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorWithoutTelemetryExportsNoEventCounters(t *testing.T) {
	sched := newPool(t, config.Config[*worker, string]{})
	var noTelemetry *metrics.TelemetryObserver[string] // a nil pointer counts as none
	for name, telemetry := range map[string]crsprom.TelemetrySource{"nil": nil, "nil pointer": noTelemetry} {
		c, err := crsprom.New(sched, telemetry)
		if err != nil {
			t.Fatalf("%s telemetry: New: %v", name, err)
		}
		if n := testutil.CollectAndCount(c, "crs_events_total"); n != 0 {
			t.Errorf("%s telemetry: %d crs_events_total series, want none", name, n)
		}
		if n := testutil.CollectAndCount(c, "crs_shards"); n != 1 {
			t.Errorf("%s telemetry: %d crs_shards series, want 1: the stats are exported without telemetry", name, n)
		}
		if d := describe(c); strings.Contains(d, `"crs_events_total"`) {
			t.Errorf("%s telemetry: Describe lists crs_events_total, which Collect never sends", name)
		}
	}
}

func describe(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var all []string
	for d := range ch {
		all = append(all, d.String())
	}
	return strings.Join(all, "\n")
}

func TestNewRefusesAMissingStatsSource(t *testing.T) {
	var nilScheduler *pool
	for name, source := range map[string]crsprom.StatsSource{"nil": nil, "nil pointer": nilScheduler} {
		c, err := crsprom.New(source, nil)
		if !errors.Is(err, crsprom.ErrNilStats) || c != nil {
			t.Errorf("New(%s, nil) = %v, %v; want nil, ErrNilStats", name, c, err)
		}
	}
}

func TestNewCollectorPanicsWithTheErrorOfNew(t *testing.T) {
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, crsprom.ErrNilStats) {
			t.Fatalf("NewCollector(nil, nil) panicked with %v, want an error wrapping ErrNilStats", err)
		}
	}()
	crsprom.NewCollector(nil, nil)
	t.Fatal("NewCollector(nil, nil) returned")
}

// countingSource counts the calls a scrape makes, to hold the collector to
// one Stats and one Snapshot per scrape.
type countingSource struct {
	crsprom.StatsSource
	crsprom.TelemetrySource
	statsCalls, snapshotCalls atomic.Int32
}

func (s *countingSource) Stats() stats.Stats {
	s.statsCalls.Add(1)
	return s.StatsSource.Stats()
}

func (s *countingSource) Snapshot() metrics.TelemetryStats {
	s.snapshotCalls.Add(1)
	return s.TelemetrySource.Snapshot()
}

func TestCollectorReadsStatsAndTelemetryOncePerScrape(t *testing.T) {
	sched, telemetry := knownState(t)
	source := &countingSource{StatsSource: sched, TelemetrySource: telemetry}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(crsprom.NewCollector(source, source))
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("Gather: %v", err)
	}
	if s, n := source.statsCalls.Load(), source.snapshotCalls.Load(); s != 1 || n != 1 {
		t.Fatalf("one scrape made %d Stats and %d Snapshot calls, want 1 and 1", s, n)
	}
}

// fixedStats is a stats source that returns the same snapshot every time.
type fixedStats stats.Stats

func (f fixedStats) Stats() stats.Stats { return stats.Stats(f) }

// gatherErrors gathers reg and returns its collection errors one by one.
func gatherErrors(t *testing.T, reg prometheus.Gatherer) []error {
	t.Helper()
	_, err := reg.Gather()
	if err == nil {
		return nil
	}
	// A single error comes unwrapped from its MultiError.
	var multi prometheus.MultiError
	if errors.As(err, &multi) {
		return multi
	}
	return []error{err}
}

func TestCollectorRefusesMalformedStatsMetricByMetric(t *testing.T) {
	tooManyShards := make([]int, config.MaxHeapCount+1)
	for name, st := range map[string]stats.Stats{
		"counts do not match bounds": {HeapCount: 1, HeapSizes: []int{0},
			WaitHistogram: stats.Histogram{Bounds: []time.Duration{time.Millisecond}, Counts: []uint64{1}}},
		"bounds not ascending": {HeapCount: 1, HeapSizes: []int{0},
			WaitHistogram: stats.Histogram{Bounds: []time.Duration{time.Second, time.Millisecond}, Counts: []uint64{1, 1, 1}}},
		"more shards than the core allows": {HeapCount: len(tooManyShards), HeapSizes: tooManyShards},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(crsprom.NewCollector(fixedStats(st), nil))
		errs := gatherErrors(t, reg)
		if len(errs) != 1 || !errors.Is(errs[0], crsprom.ErrInvalidStats) {
			t.Errorf("%s: gather errors %v, want one ErrInvalidStats", name, errs)
		}
		// The other metrics are still exported (Gather returns them with
		// its error, for a handler in ContinueOnError mode).
		families, _ := reg.Gather()
		if !hasFamily(families, "crs_shards") {
			t.Errorf("%s: crs_shards missing beside the refused metric", name)
		}
	}
}

func TestCollectorMakesAStrategyNameAValidLabelValue(t *testing.T) {
	st := stats.Stats{AcquirePolicy: "shared", AcquireStrategy: "mine\xff"}
	const want = `
# HELP crs_scheduler_info Always 1; labels give the scheduler's acquire policy and strategy.
# TYPE crs_scheduler_info gauge
crs_scheduler_info{policy="shared",strategy="mine` + "\uFFFD" + `"} 1
`
	if err := testutil.CollectAndCompare(crsprom.NewCollector(fixedStats(st), nil), strings.NewReader(want), "crs_scheduler_info"); err != nil {
		t.Fatal(err)
	}
}

func hasFamily(families []*dto.MetricFamily, name string) bool {
	for _, mf := range families {
		if mf.GetName() == name {
			return true
		}
	}
	return false
}

// crsEraStats fills only the fields stats.Stats had in CRS v1.2.3, as a
// custom stats source written for CRS does (the values of CRS's own
// exporter test).
var crsEraStats = stats.Stats{
	HeapCount:         4,
	TotalResources:    10,
	ActiveResources:   8,
	InactiveResources: 2,
	EmptyHeaps:        1,
	NonEmptyHeaps:     3,
}

func TestCollectorExportsTheInactiveResourcesOfACRSEraSource(t *testing.T) {
	const want = `
# HELP crs_resources Resources by state; draining ones were removed while held and leave with their last holder.
# TYPE crs_resources gauge
crs_resources{state="active"} 8
crs_resources{state="draining"} 0
crs_resources{state="ejected"} 0
crs_resources{state="excluded"} 0
crs_resources{state="held"} 0
crs_resources{state="other"} 2
crs_resources{state="rate_limited"} 0
crs_resources{state="suspended"} 0
`
	if err := testutil.CollectAndCompare(crsprom.NewCollector(fixedStats(crsEraStats), nil), strings.NewReader(want), "crs_resources"); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorCountsAsOtherOnlyTheInactiveResourcesNoStateHas(t *testing.T) {
	for name, tc := range map[string]struct {
		st    stats.Stats
		other float64
	}{
		"every state given":               {stats.Stats{InactiveResources: 5, HeldResources: 1, ExcludedResources: 1, SuspendedResources: 1, EjectedResources: 1, RateLimitedResources: 1}, 0},
		"some states given":               {stats.Stats{InactiveResources: 5, HeldResources: 2}, 3},
		"states but no InactiveResources": {stats.Stats{HeldResources: 2, ExcludedResources: 1}, 0},
		"draining is not inactive":        {stats.Stats{InactiveResources: 1, DrainingResources: 4}, 1},
	} {
		c := crsprom.NewCollector(fixedStats(tc.st), nil)
		if got := resourcesByState(t, c)["other"]; got != tc.other {
			t.Errorf("%s: crs_resources{state=\"other\"} = %v, want %v", name, got, tc.other)
		}
	}
}
