package prometheus_test

import (
	"strings"
	"testing"

	"github.com/crsched/crs/extensions/metrics"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Code written for CRS v1.2.3 names the collector's arguments by CRS's
// names; a scheduler and a telemetry observer still satisfy them.
var (
	_ crsprom.MetricsProvider   = (*pool)(nil)
	_ crsprom.TelemetryProvider = (*metrics.TelemetryObserver[string])(nil)
)

// knownStateCRSText is what the scheduler of knownState exports under
// CRS v1.2.3's names: CRS's help texts and types, and the same counts as
// knownStateText.
const knownStateCRSText = `
# HELP crs_events_acquire_total Total number of successful acquires
# TYPE crs_events_acquire_total counter
crs_events_acquire_total 6
# HELP crs_events_add_total Total number of resources added to the scheduler
# TYPE crs_events_add_total counter
crs_events_add_total 8
# HELP crs_events_exclude_total Total number of resources manually excluded
# TYPE crs_events_exclude_total counter
crs_events_exclude_total 7
# HELP crs_events_include_total Total number of resources manually included
# TYPE crs_events_include_total counter
crs_events_include_total 6
# HELP crs_events_release_total Total number of resources released back to the scheduler
# TYPE crs_events_release_total counter
crs_events_release_total 3
# HELP crs_events_remove_total Total number of resources permanently removed
# TYPE crs_events_remove_total counter
crs_events_remove_total 1
# HELP crs_events_update_total Total number of resource updates
# TYPE crs_events_update_total counter
crs_events_update_total 1
# HELP crs_heap_count Total number of heap shards in the scheduler
# TYPE crs_heap_count gauge
crs_heap_count 2
# HELP crs_heaps_empty Number of heap shards that are currently empty
# TYPE crs_heaps_empty gauge
crs_heaps_empty 0
# HELP crs_heaps_non_empty Number of heap shards that currently contain at least one active resource
# TYPE crs_heaps_non_empty gauge
crs_heaps_non_empty 2
# HELP crs_resources_active Total number of resources currently active and available
# TYPE crs_resources_active gauge
crs_resources_active 2
# HELP crs_resources_inactive Total number of resources currently inactive (acquired or cooling down)
# TYPE crs_resources_inactive gauge
crs_resources_inactive 5
# HELP crs_resources_total Total number of resources registered in the scheduler
# TYPE crs_resources_total gauge
crs_resources_total 7
`

func TestWithCRSNamesExportsCRSsMetrics(t *testing.T) {
	sched, telemetry := knownState(t)
	c := crsprom.NewCollector(sched, telemetry, crsprom.WithCRSNames())
	if err := testutil.CollectAndCompare(c, strings.NewReader(knownStateCRSText)); err != nil {
		t.Fatal(err)
	}
}

func TestWithCRSNamesWithoutTelemetryExportsTheGaugesOnly(t *testing.T) {
	c := crsprom.NewCollector(fixedStats(crsEraStats), nil, crsprom.WithCRSNames())
	for _, line := range strings.Split(describe(c), "\n") {
		if strings.Contains(line, `"crs_events_`) {
			t.Errorf("without telemetry, Describe lists %s, which Collect never sends", line)
		}
	}
	const want = `
# HELP crs_heap_count Total number of heap shards in the scheduler
# TYPE crs_heap_count gauge
crs_heap_count 4
# HELP crs_heaps_empty Number of heap shards that are currently empty
# TYPE crs_heaps_empty gauge
crs_heaps_empty 1
# HELP crs_heaps_non_empty Number of heap shards that currently contain at least one active resource
# TYPE crs_heaps_non_empty gauge
crs_heaps_non_empty 3
# HELP crs_resources_active Total number of resources currently active and available
# TYPE crs_resources_active gauge
crs_resources_active 8
# HELP crs_resources_inactive Total number of resources currently inactive (acquired or cooling down)
# TYPE crs_resources_inactive gauge
crs_resources_inactive 2
# HELP crs_resources_total Total number of resources registered in the scheduler
# TYPE crs_resources_total gauge
crs_resources_total 10
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// During an upgrade one registry holds both collectors of a scheduler:
// the names must not collide, and each must export what it does alone.
func TestBothNamingsOfOneSchedulerShareARegistry(t *testing.T) {
	sched, telemetry := knownState(t)
	reg := prometheus.NewPedanticRegistry()
	must(t, "register ours", reg.Register(crsprom.NewCollector(sched, telemetry)))
	must(t, "register CRS's", reg.Register(crsprom.NewCollector(sched, telemetry, crsprom.WithCRSNames())))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(knownStateText+knownStateCRSText)); err != nil {
		t.Fatal(err)
	}
}

// The other options apply under CRS's names: constant labels on every
// metric, and crs_budget_remaining beside CRS's gauges.
func TestWithCRSNamesKeepsTheOtherOptions(t *testing.T) {
	keys := tokensPool(t, fakeclock.New(), "a")
	c := crsprom.NewCollector(keys, nil, crsprom.WithCRSNames(), crsprom.WithBudgets(keys.Budgets), poolLabel("keys"))
	const want = `
# HELP crs_budget_remaining Units left now in each budget (Config.Limits) of each resource, negative in debt.
# TYPE crs_budget_remaining gauge
crs_budget_remaining{limit="requests",pool="keys",resource="a"} 10
crs_budget_remaining{limit="tokens",pool="keys",resource="a"} 600
# HELP crs_heap_count Total number of heap shards in the scheduler
# TYPE crs_heap_count gauge
crs_heap_count{pool="keys"} 2
# HELP crs_heaps_empty Number of heap shards that are currently empty
# TYPE crs_heaps_empty gauge
crs_heaps_empty{pool="keys"} 1
# HELP crs_heaps_non_empty Number of heap shards that currently contain at least one active resource
# TYPE crs_heaps_non_empty gauge
crs_heaps_non_empty{pool="keys"} 1
# HELP crs_resources_active Total number of resources currently active and available
# TYPE crs_resources_active gauge
crs_resources_active{pool="keys"} 1
# HELP crs_resources_inactive Total number of resources currently inactive (acquired or cooling down)
# TYPE crs_resources_inactive gauge
crs_resources_inactive{pool="keys"} 0
# HELP crs_resources_total Total number of resources registered in the scheduler
# TYPE crs_resources_total gauge
crs_resources_total{pool="keys"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
