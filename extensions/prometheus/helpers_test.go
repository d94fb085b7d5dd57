package prometheus_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
	"github.com/prometheus/client_golang/prometheus"
)

type worker struct {
	id       string
	priority int // lower is handed out first
}

type pool = scheduler.Scheduler[*worker, string]

func newPool(t *testing.T, cfg config.Config[*worker, string]) *pool {
	t.Helper()
	sched, err := newSchedulerFor(cfg)
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	t.Cleanup(sched.Shutdown)
	return sched
}

// newSchedulerFor completes cfg with the workers' order and key.
func newSchedulerFor(cfg config.Config[*worker, string]) (*pool, error) {
	cfg.Comparator = func(a, b *worker) int { return a.priority - b.priority }
	cfg.KeyFunc = func(w *worker) string { return w.id }
	return scheduler.New(cfg)
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// untilWaiting returns once n callers wait in sched. The count is the
// only signal the scheduler gives that a caller has queued; it is read in
// a loop that yields, with no sleep and no deadline of its own.
func untilWaiting(sched *pool, n int) {
	for sched.Stats().Waiters != n {
		runtime.Gosched()
	}
}

// knownState builds a scheduler whose every exported figure is fixed, one
// resource in each state:
//
//	shard 0: a held (by a served waiter), c suspended, e draining, g active
//	shard 1: b ejected, d rate-limited, f active, h excluded
//
// with 2 waits (1 cancelled, both of zero length on the fake clock), 1
// expired lease, 1 failure, 1 observer panic, and the events listed in
// knownStateText, all delivered: it returns the scheduler shut down, so
// that nothing moves any more.
func knownState(t *testing.T) (*pool, *metrics.TelemetryObserver[string]) {
	t.Helper()
	telemetry := metrics.NewTelemetryObserver[string]()
	panicOnRemove := events.ObserverFunc[string](func(e events.Event[string]) {
		if e.Type == events.EventRemove {
			panic("observer bug")
		}
	})
	clock := fakeclock.New()
	sched := newPool(t, config.Config[*worker, string]{
		HeapCount:     2,
		AcquirePolicy: config.Exclusive,
		LeaseTTL:      time.Minute,
		Ejection:      config.Ejection{ConsecutiveFailures: 1, BaseTime: time.Hour},
		RateLimit: func(w *worker) (float64, int) {
			if w.id == "d" {
				return 1.0 / 3600, 1 // one hand-out an hour
			}
			return 0, 0 // unlimited
		},
		Clock:     clock,
		Observers: []events.Observer[string]{telemetry, panicOnRemove},
	})
	ctx := context.Background()

	// Round robin placement: a, c, e, g in shard 0; b, d, f, h in shard 1.
	must(t, "BatchAdd", sched.BatchAdd([]*worker{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}, {"e", 5}, {"f", 6}, {"g", 7}, {"h", 8}}))
	for _, id := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		must(t, "Exclude "+id, sched.Exclude(id))
	}
	// From here on, each step makes available only the resource it takes,
	// whichever shard the strategy starts from.
	_, err := sched.Acquire() // a
	must(t, "Acquire a", err)

	// A wait ended by its context.
	waitCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		_, err := sched.AcquireContext(waitCtx)
		done <- err
	}()
	untilWaiting(sched, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait returned %v, want context.Canceled", err)
	}

	// A wait served by a release: a goes straight to the waiter.
	go func() {
		_, err := sched.AcquireContext(ctx)
		done <- err
	}()
	untilWaiting(sched, 1)
	must(t, "Release a", sched.Release("a"))
	must(t, "served wait", <-done)

	// b: a lease left to expire, then a lease that fails, which ejects it
	// (for an hour: the clock does not move again).
	must(t, "Include b", sched.Include("b"))
	lease := mustLease(t, sched, "b")
	clock.Advance(2 * time.Minute)
	lease = mustLease(t, sched, "b")
	must(t, "Fail b", lease.Fail())

	// c: suspended for an hour.
	must(t, "Include c", sched.Include("c"))
	must(t, "Suspend c", sched.Suspend("c", time.Hour))

	// d: its one token of the hour taken, it rests once released.
	must(t, "Include d", sched.Include("d"))
	_, err = sched.Acquire()
	must(t, "Acquire d", err)
	must(t, "Release d", sched.Release("d"))

	// e: removed while held, so it drains.
	must(t, "Include e", sched.Include("e"))
	_, err = sched.Acquire()
	must(t, "Acquire e", err)
	must(t, "Remove e", sched.Remove("e"))

	must(t, "Include f", sched.Include("f"))
	must(t, "Include g", sched.Include("g"))
	must(t, "Update g", sched.Update(&worker{"g", 0}))

	sched.Shutdown() // delivers every queued event
	return sched, telemetry
}

func mustLease(t *testing.T, sched *pool, want string) scheduler.Lease[*worker, string] {
	t.Helper()
	lease, err := sched.Lease(context.Background())
	must(t, "Lease", err)
	if lease.Key() != want {
		t.Fatalf("lease on %q, want %q", lease.Key(), want)
	}
	return lease
}

// seriesBy returns the values of c's series of the gauge or counter
// named name, by the value of their label label.
func seriesBy(t *testing.T, c prometheus.Collector, name, label string) map[string]float64 {
	t.Helper()
	by := map[string]float64{}
	for _, mf := range gather(t, c) {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					by[l.GetValue()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	return by
}

// resourcesByState returns the crs_resources series of c by state.
func resourcesByState(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	return seriesBy(t, c, "crs_resources", "state")
}

// eventCounts returns the crs_events_total series of c by type.
func eventCounts(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	return seriesBy(t, c, "crs_events_total", "type")
}
