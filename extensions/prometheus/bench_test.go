package prometheus_test

import (
	"strconv"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/extensions/metrics"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkScrape measures one scrape of a scheduler with the most shards
// the core allows: Stats, Snapshot, and building every series.
func BenchmarkScrape(b *testing.B) {
	sched, err := newBenchPool(config.MaxHeapCount)
	if err != nil {
		b.Fatal(err)
	}
	defer sched.Shutdown()
	reg := prometheus.NewRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, metrics.NewTelemetryObserver[string]()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

func newBenchPool(shards int) (*pool, error) {
	sched, err := newSchedulerFor(config.Config[*worker, string]{HeapCount: shards})
	if err != nil {
		return nil, err
	}
	ws := make([]*worker, 4*shards)
	for i := range ws {
		ws[i] = &worker{id: strconv.Itoa(i), priority: i}
	}
	return sched, sched.BatchAdd(ws)
}
