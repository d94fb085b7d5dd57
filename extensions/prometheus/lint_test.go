package prometheus_test

import (
	"testing"

	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsPassPromlint(t *testing.T) {
	sched, telemetry := knownState(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, telemetry, poolLabel("gpus")))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatalf("GatherAndLint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// The lint above must be able to fail: the seed's gauges break the two
// rules this exporter was rewritten for.
func TestPromlintFlagsTheSeedsNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"crs_resources_total", "crs_heap_count"} {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "as the seed exported it"})
		reg.MustRegister(g)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatalf("GatherAndLint: %v", err)
	}
	flagged := map[string]bool{}
	for _, p := range problems {
		flagged[p.Metric] = true
	}
	for _, name := range []string{"crs_resources_total", "crs_heap_count"} {
		if !flagged[name] {
			t.Errorf("promlint did not flag the gauge %s (problems: %v)", name, problems)
		}
	}
}
