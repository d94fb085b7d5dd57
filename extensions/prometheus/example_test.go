package prometheus_test

import (
	"fmt"
	"log"
	"os"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/scheduler"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

func ExampleNewCollector() {
	telemetry := metrics.NewTelemetryObserver[string]()
	sched, err := scheduler.New(config.Config[string, string]{
		HeapCount:     2,
		Comparator:    func(a, b string) int { return len(a) - len(b) },
		KeyFunc:       func(s string) string { return s },
		AcquirePolicy: config.Exclusive,
		Observers:     []events.Observer[string]{telemetry},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sched.Shutdown()
	if err := sched.BatchAdd([]string{"proxy-a", "proxy-bb", "proxy-ccc"}); err != nil {
		log.Fatal(err)
	}
	if _, err := sched.Acquire(); err != nil {
		log.Fatal(err)
	}

	// One registry can hold the collectors of several schedulers, each
	// with its own pool label. A program serves it with
	// http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})).
	reg := prometheus.NewRegistry()
	reg.MustRegister(crsprom.NewCollector(sched, telemetry,
		crsprom.WithConstLabels(prometheus.Labels{"pool": "proxies"})))

	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range families {
		switch mf.GetName() {
		case "crs_resources", "crs_shard_active_resources":
			if _, err := expfmt.MetricFamilyToText(os.Stdout, mf); err != nil {
				log.Fatal(err)
			}
		}
	}
	fmt.Println("# ...")
	// Output:
	// # HELP crs_resources Resources by state; draining ones were removed while held and leave with their last holder.
	// # TYPE crs_resources gauge
	// crs_resources{pool="proxies",state="active"} 2
	// crs_resources{pool="proxies",state="draining"} 0
	// crs_resources{pool="proxies",state="ejected"} 0
	// crs_resources{pool="proxies",state="excluded"} 0
	// crs_resources{pool="proxies",state="held"} 1
	// crs_resources{pool="proxies",state="other"} 0
	// crs_resources{pool="proxies",state="rate_limited"} 0
	// crs_resources{pool="proxies",state="suspended"} 0
	// # HELP crs_shard_active_resources Active (acquirable) resources in each heap shard.
	// # TYPE crs_shard_active_resources gauge
	// crs_shard_active_resources{pool="proxies",shard="0"} 1
	// crs_shard_active_resources{pool="proxies",shard="1"} 1
	// # ...
}
