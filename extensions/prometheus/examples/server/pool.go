package main

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/scheduler"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// upstream is a simulated backend. A value never changes once added: an
// observed latency goes in through Update with a new value.
type upstream struct {
	name     string
	latency  time.Duration // last observed; lower is handed out first
	slots    int
	failRate float64 // share of calls that fail
	perSec   float64 // hand-outs per second allowed; 0: unlimited
}

// with returns u as last observed taking latency: Update needs a new
// value, since the comparator may be reading the old one.
func (u *upstream) with(latency time.Duration) *upstream {
	v := *u
	v.latency = latency
	return &v
}

// The upstream at index flaky fails half its calls, so that the
// scheduler ejects it now and then; the one at metered takes 50 calls a
// second, so that it rests between tokens.
const (
	flaky   = 1
	metered = 2
)

type pool struct {
	sched     *scheduler.Scheduler[*upstream, string]
	telemetry *metrics.TelemetryObserver[string]
	registry  *prometheus.Registry
	names     []string // of the upstreams, in order
}

// poolName is the value of the pool label, as a program with several
// schedulers would set one per scheduler.
const poolName = "upstreams"

func newPool(shards, upstreams int, leaseTTL time.Duration) (*pool, error) {
	telemetry := metrics.NewTelemetryObserver[string]()
	sched, err := scheduler.New(config.Config[*upstream, string]{
		HeapCount:     shards,
		Comparator:    func(a, b *upstream) int { return cmp.Compare(a.latency, b.latency) },
		KeyFunc:       func(u *upstream) string { return u.name },
		AcquirePolicy: config.Exclusive,
		Capacity:      func(u *upstream) int { return u.slots },
		RateLimit:     func(u *upstream) (float64, int) { return u.perSec, 1 },
		LeaseTTL:      leaseTTL,
		// Two failures in a row take an upstream out for 2 s, then 4 s...
		// up to 20 s, a quarter of the pool at most.
		Ejection:  config.Ejection{ConsecutiveFailures: 2, BaseTime: 2 * time.Second, MaxTime: 20 * time.Second, MaxEjectedShare: 0.25},
		Observers: []events.Observer[string]{telemetry},
	})
	if err != nil {
		return nil, err
	}
	all := make([]*upstream, upstreams)
	names := make([]string, upstreams)
	for i := range all {
		names[i] = fmt.Sprintf("upstream-%02d", i)
		all[i] = &upstream{name: names[i], latency: time.Duration(i+1) * time.Millisecond, slots: 2, failRate: 0.01}
		switch i {
		case flaky:
			all[i].failRate = 0.5
		case metered:
			all[i].perSec = 50
		}
	}
	collector, err := crsprom.New(sched, telemetry, crsprom.WithConstLabels(prometheus.Labels{"pool": poolName}))
	if err == nil {
		err = sched.BatchAdd(all)
	}
	if err != nil {
		sched.Shutdown()
		return nil, err
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collector) // a fresh registry: no conflict possible
	return &pool{sched: sched, telemetry: telemetry, registry: registry, names: names}, nil
}

// handler serves the registry on /metrics. ContinueOnError serves what
// could be collected even if one metric failed.
func (p *pool) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	return mux
}
