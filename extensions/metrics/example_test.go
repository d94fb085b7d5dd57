package metrics_test

import (
	"fmt"
	"log"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
	"github.com/crsched/crs/scheduler"
)

func ExampleNewTelemetryObserver() {
	telemetry := metrics.NewTelemetryObserver[string]()
	sched, err := scheduler.New(config.Config[string, string]{
		Comparator: func(a, b string) int { return len(a) - len(b) },
		KeyFunc:    func(s string) string { return s },
		Observers:  []events.Observer[string]{telemetry},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.BatchAdd([]string{"proxy-a", "proxy-bb"}); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		if _, err := sched.Acquire(); err != nil {
			log.Fatal(err)
		}
	}
	// Events reach observers asynchronously; Shutdown delivers the queued
	// ones before returning. A long-running program would just read
	// Snapshot periodically.
	sched.Shutdown()

	s := telemetry.Snapshot()
	fmt.Printf("adds=%d acquires=%d releases=%d\n", s.AddCount, s.AcquireCount, s.ReleaseCount)
	// Output: adds=2 acquires=3 releases=0
}
