// A program outside the repository that uses the Prometheus extension as
// users do.
package main

import (
	"log"

	"github.com/crsched/crs/config"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/scheduler"
	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	sched, err := scheduler.New(config.Config[string, string]{
		Comparator: func(a, b string) int { return 0 },
		KeyFunc:    func(s string) string { return s },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sched.Shutdown()
	registry := prometheus.NewRegistry()
	registry.MustRegister(crsprom.NewCollector(sched, nil))
	if _, err := registry.Gather(); err != nil {
		log.Fatal(err)
	}
}
