package metrics_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// lastCounted is the highest event type TelemetryStats has a field for.
const lastCounted = events.EventResume

type worker struct {
	id       string
	priority int
}

func newScheduler(t *testing.T, obs events.Observer[string]) *scheduler.Scheduler[*worker, string] {
	t.Helper()
	sched, err := scheduler.New(config.Config[*worker, string]{
		Comparator:    func(a, b *worker) int { return a.priority - b.priority },
		KeyFunc:       func(w *worker) string { return w.id },
		AcquirePolicy: config.Exclusive,
		Observers:     []events.Observer[string]{obs},
	})
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	t.Cleanup(sched.Shutdown)
	return sched
}

func TestTelemetryCountsEachOperationOfARealScheduler(t *testing.T) {
	telemetry := metrics.NewTelemetryObserver[string]()
	sched := newScheduler(t, telemetry)

	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("add a", sched.Add(&worker{id: "a", priority: 1}))
	must("batch add b, c", sched.BatchAdd([]*worker{{id: "b", priority: 2}, {id: "c", priority: 3}}))
	held, err := sched.Acquire()
	must("acquire", err)
	_, err = sched.Acquire()
	must("second acquire", err)
	must("release", sched.Release(held.id))
	must("exclude c", sched.Exclude("c"))
	must("include c", sched.Include("c"))
	must("update c", sched.Update(&worker{id: "c", priority: 0}))
	must("remove c", sched.Remove("c"))
	// Failed operations emit nothing.
	if err := sched.Add(&worker{id: "a"}); err == nil {
		t.Fatal("duplicate Add succeeded")
	}

	// Shutdown delivers the queued events and waits for the dispatcher, so
	// every event has been counted once it returns.
	sched.Shutdown()
	if dropped := sched.Stats().DroppedEvents; dropped != 0 {
		t.Fatalf("scheduler dropped %d events; the counts below would be short", dropped)
	}
	want := metrics.TelemetryStats{
		AddCount:     3,
		AcquireCount: 2,
		ReleaseCount: 1,
		ExcludeCount: 1,
		IncludeCount: 1,
		RemoveCount:  1,
		UpdateCount:  1,
	}
	if got := telemetry.Snapshot(); got != want {
		t.Fatalf("Snapshot() = %+v, want %+v", got, want)
	}
}

func TestTelemetrySumsConcurrentEventsExactly(t *testing.T) {
	const (
		goroutines = 32
		rounds     = 500 // each round sends one event of every type
	)
	telemetry := metrics.NewTelemetryObserver[int]()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				for typ := events.EventAdd; typ <= lastCounted; typ++ {
					telemetry.OnEvent(events.Event[int]{Type: typ, ID: g})
				}
				_ = telemetry.Snapshot() // readers run alongside writers
			}
		}()
	}
	wg.Wait()

	const n = goroutines * rounds
	want := metrics.TelemetryStats{
		AddCount: n, AcquireCount: n, ReleaseCount: n, ExcludeCount: n,
		IncludeCount: n, RemoveCount: n, UpdateCount: n, ExpireCount: n,
		SuspendCount: n, EjectCount: n, ResumeCount: n,
	}
	if got := telemetry.Snapshot(); got != want {
		t.Fatalf("Snapshot() = %+v, want %+v", got, want)
	}
}

func TestTelemetryIgnoresEventTypesItDoesNotKnow(t *testing.T) {
	telemetry := metrics.NewTelemetryObserver[string]()
	for _, typ := range []events.EventType{-1, lastCounted + 1, 255} {
		telemetry.OnEvent(events.Event[string]{Type: typ, ID: "x"})
	}
	if got := telemetry.Snapshot(); got != (metrics.TelemetryStats{}) {
		t.Fatalf("Snapshot() after unknown events = %+v, want all zero", got)
	}
	// Known types are still counted afterwards.
	telemetry.OnEvent(events.Event[string]{Type: events.EventAcquire, ID: "x"})
	if got := telemetry.Snapshot(); got != (metrics.TelemetryStats{AcquireCount: 1}) {
		t.Fatalf("Snapshot() = %+v, want only AcquireCount: 1", got)
	}
}

func TestTelemetryDoesNotAllocate(t *testing.T) {
	telemetry := metrics.NewTelemetryObserver[string]()
	var obs events.Observer[string] = telemetry // called through the interface, as the dispatcher does
	e := events.Event[string]{Type: events.EventAcquire, ID: "key"}
	if allocs := testing.AllocsPerRun(1000, func() {
		obs.OnEvent(e)
		_ = telemetry.Snapshot()
	}); allocs != 0 {
		t.Fatalf("OnEvent + Snapshot allocate %.1f times per call, want 0", allocs)
	}
}

func TestTelemetryZeroValueIsUsable(t *testing.T) {
	var telemetry metrics.TelemetryObserver[string]
	telemetry.OnEvent(events.Event[string]{Type: events.EventRemove})
	if got := telemetry.Snapshot(); got != (metrics.TelemetryStats{RemoveCount: 1}) {
		t.Fatalf("Snapshot() = %+v, want RemoveCount: 1", got)
	}
}

func TestTelemetryCountsLeaseExpiries(t *testing.T) {
	telemetry := metrics.NewTelemetryObserver[string]()
	clock := fakeclock.New()
	sched, err := scheduler.New(config.Config[*worker, string]{
		Comparator:    func(a, b *worker) int { return a.priority - b.priority },
		KeyFunc:       func(w *worker) string { return w.id },
		AcquirePolicy: config.Exclusive,
		LeaseTTL:      time.Second,
		Clock:         clock,
		Observers:     []events.Observer[string]{telemetry},
	})
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	t.Cleanup(sched.Shutdown)
	if err := sched.Add(&worker{id: "a"}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if _, err := sched.Lease(context.Background()); err != nil {
		t.Fatalf("Lease: %v", err)
	}
	clock.Advance(2 * time.Second) // fires the expiry timer synchronously

	sched.Shutdown()
	want := metrics.TelemetryStats{AddCount: 1, AcquireCount: 1, ExpireCount: 1}
	if got := telemetry.Snapshot(); got != want {
		t.Fatalf("Snapshot() = %+v, want %+v", got, want)
	}
	if expired := sched.Stats().ExpiredLeases; expired != 1 {
		t.Fatalf("Stats().ExpiredLeases = %d, want 1 (the counts above would disagree with it)", expired)
	}
}

// A counter read into the wrong field would pass the tests that send
// every type equally often; this one sends each type alone.
func TestTelemetryFilesEachEventTypeInItsOwnField(t *testing.T) {
	fieldOf := map[events.EventType]string{}
	for typ := events.EventAdd; typ <= lastCounted; typ++ {
		telemetry := metrics.NewTelemetryObserver[string]()
		telemetry.OnEvent(events.Event[string]{Type: typ, ID: "x"})
		got := reflect.ValueOf(telemetry.Snapshot())
		var set []string
		for i := range got.NumField() {
			if n := got.Field(i).Uint(); n != 0 {
				set = append(set, got.Type().Field(i).Name)
			}
		}
		if len(set) != 1 {
			t.Fatalf("one %v event set fields %v, want exactly one", typ, set)
		}
		fieldOf[typ] = set[0]
	}
	seen := map[string]events.EventType{}
	for typ, field := range fieldOf {
		if other, dup := seen[field]; dup {
			t.Fatalf("%v and %v events both count in %s", other, typ, field)
		}
		seen[field] = typ
	}
	if n := reflect.TypeFor[metrics.TelemetryStats]().NumField(); n != len(fieldOf) {
		t.Fatalf("TelemetryStats has %d fields but %d event types are counted: a field is never set", n, len(fieldOf))
	}
}

func TestTelemetryCountsHealthEvents(t *testing.T) {
	telemetry := metrics.NewTelemetryObserver[string]()
	clock := fakeclock.New()
	sched, err := scheduler.New(config.Config[*worker, string]{
		Comparator:    func(a, b *worker) int { return a.priority - b.priority },
		KeyFunc:       func(w *worker) string { return w.id },
		AcquirePolicy: config.Exclusive,
		Ejection:      config.Ejection{ConsecutiveFailures: 1, BaseTime: time.Minute},
		Clock:         clock,
		Observers:     []events.Observer[string]{telemetry},
	})
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	t.Cleanup(sched.Shutdown)
	if err := sched.BatchAdd([]*worker{{id: "a", priority: 1}, {id: "b", priority: 2}}); err != nil {
		t.Fatalf("BatchAdd: %v", err)
	}
	if err := sched.Suspend("b", time.Minute); err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	lease, err := sched.Lease(context.Background()) // a: b rests
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	if err := lease.Fail(); err != nil { // one failure ejects a
		t.Fatalf("Fail: %v", err)
	}
	clock.Advance(2 * time.Minute) // both come back

	sched.Shutdown()
	want := metrics.TelemetryStats{AddCount: 2, AcquireCount: 1, ReleaseCount: 1, SuspendCount: 1, EjectCount: 1, ResumeCount: 2}
	if got := telemetry.Snapshot(); got != want {
		t.Fatalf("Snapshot() = %+v, want %+v", got, want)
	}
}
