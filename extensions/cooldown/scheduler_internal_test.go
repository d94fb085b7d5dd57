package cooldown

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/scheduler"
)

// These tests run the Manager as an observer of a real scheduler, with
// fake timers. Events are asynchronous, so the tests wait for delivery
// with a fence instead of sleeping.

type resource struct {
	id       string
	priority int
}

type testScheduler = scheduler.Scheduler[*resource, string]

// schedulerController is the wrapper from the package documentation.
type schedulerController struct {
	sched *testScheduler
}

func (c *schedulerController) Exclude(id string) error { return c.sched.Exclude(id) }
func (c *schedulerController) Include(id string) error { return c.sched.Include(id) }

// fence lets a test wait until the dispatcher has delivered every event
// emitted so far: it adds and removes a marker resource, and events reach
// observers in order, so once the marker's removal arrives everything
// queued before it has been handled.
type fence struct {
	arrived chan string
	next    atomic.Int64
}

func (f *fence) OnEvent(e events.Event[string]) {
	if e.Type == events.EventRemove && strings.HasPrefix(e.ID, "fence-") {
		f.arrived <- e.ID
	}
}

func (f *fence) wait(t *testing.T, sched *testScheduler) {
	t.Helper()
	marker := fmt.Sprint("fence-", f.next.Add(1))
	if err := sched.Add(&resource{id: marker, priority: 1 << 30}); err != nil {
		t.Fatalf("add fence marker: %v", err)
	}
	if err := sched.Remove(marker); err != nil {
		t.Fatalf("remove fence marker: %v", err)
	}
	select {
	case got := <-f.arrived:
		if got != marker {
			t.Fatalf("fence received %s, want %s", got, marker)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("event %s not delivered after 10s (dropped events: %d)", marker, sched.Stats().DroppedEvents)
	}
}

// newCooledScheduler wires an Exclusive scheduler to a Manager with fake
// timers. extra observers run before the Manager.
func newCooledScheduler(t *testing.T, extra ...events.Observer[string]) (*testScheduler, *Manager[string], *fakeClock, *fence) {
	t.Helper()
	ctrl := &schedulerController{}
	m, clock := newTestManager[string](ctrl, time.Minute)
	f := &fence{arrived: make(chan string, 1)}
	sched, err := scheduler.New(config.Config[*resource, string]{
		Comparator:     func(a, b *resource) int { return a.priority - b.priority },
		KeyFunc:        func(r *resource) string { return r.id },
		AcquirePolicy:  config.Exclusive,
		Observers:      append(extra, m, f),
		EventQueueSize: 1 << 16,
	})
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	ctrl.sched = sched
	t.Cleanup(func() {
		sched.Shutdown()
		m.Close()
	})
	return sched, m, clock, f
}

func mustAcquire(t *testing.T, sched *testScheduler, want string) {
	t.Helper()
	got, err := sched.Acquire()
	if err != nil {
		t.Fatalf("Acquire: %v, want %s", err, want)
	}
	if got.id != want {
		t.Fatalf("Acquire = %s, want %s", got.id, want)
	}
}

func TestReleasedResourceSitsOutItsCooldownOnAScheduler(t *testing.T) {
	sched, m, clock, fence := newCooledScheduler(t)
	if err := sched.BatchAdd([]*resource{{"best", 1}, {"next", 2}}); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, sched, "best")
	if err := sched.Release("best"); err != nil {
		t.Fatal(err)
	}
	fence.wait(t, sched)

	if st := sched.Stats(); st.ExcludedResources != 1 || m.Cooling() != 1 {
		t.Fatalf("after release: %d excluded, %d cooling; want 1 and 1", st.ExcludedResources, m.Cooling())
	}
	mustAcquire(t, sched, "next") // "best" is cooling
	if _, err := sched.Acquire(); !errors.Is(err, crserrors.ErrNoResourceAvailable) {
		t.Fatalf("Acquire with best cooling and next held: %v, want ErrNoResourceAvailable", err)
	}

	clock.fireAll()
	if m.Cooling() != 0 {
		t.Fatalf("Cooling() = %d after expiry, want 0", m.Cooling())
	}
	mustAcquire(t, sched, "best")
}

func TestResourceReacquiredBeforeTheEventGetsNoCooldownFromIt(t *testing.T) {
	// The documented window: the release event is still queued (held here
	// by a gate observer) when another caller acquires the resource again.
	open := make(chan struct{})
	var gated atomic.Bool
	gate := events.ObserverFunc[string](func(e events.Event[string]) {
		if e.Type == events.EventRelease && gated.CompareAndSwap(false, true) {
			<-open
		}
	})
	sched, m, clock, fence := newCooledScheduler(t, gate)
	if err := sched.Add(&resource{"a", 1}); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, sched, "a")
	if err := sched.Release("a"); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, sched, "a") // inside the window
	close(open)
	fence.wait(t, sched)

	if m.Cooling() != 0 || len(clock.all()) != 0 {
		t.Fatalf("cooling %d, timers %d after Exclude of a held resource; want 0 and 0", m.Cooling(), len(clock.all()))
	}
	if st := sched.Stats(); st.HeldResources != 1 {
		t.Fatalf("held = %d, want 1: the second holder keeps the resource", st.HeldResources)
	}
	// Its next release does start a cooldown.
	if err := sched.Release("a"); err != nil {
		t.Fatal(err)
	}
	fence.wait(t, sched)
	if m.Cooling() != 1 {
		t.Fatalf("Cooling() = %d after the second release, want 1", m.Cooling())
	}
}

func TestRemovedResourceIsNotIncludedBack(t *testing.T) {
	sched, m, clock, fence := newCooledScheduler(t)
	if err := sched.Add(&resource{"a", 1}); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, sched, "a")
	if err := sched.Release("a"); err != nil {
		t.Fatal(err)
	}
	fence.wait(t, sched)
	if err := sched.Remove("a"); err != nil {
		t.Fatal(err)
	}
	clock.fireAll() // Include fails with ErrResourceNotFound and is dropped

	if m.Cooling() != 0 || sched.Len() != 0 {
		t.Fatalf("cooling %d, Len %d; want 0 and 0", m.Cooling(), sched.Len())
	}
}

func TestConcurrentReleasesOnASchedulerLeaveEveryResourceCoolingOnce(t *testing.T) {
	const (
		resources = 16
		workers   = 8
		attempts  = 200
	)
	sched, m, clock, fence := newCooledScheduler(t)
	batch := make([]*resource, resources)
	for i := range batch {
		batch[i] = &resource{id: fmt.Sprint("r", i), priority: i}
	}
	if err := sched.BatchAdd(batch); err != nil {
		t.Fatal(err)
	}

	var (
		wg       sync.WaitGroup
		released sync.Map // ids released at least once
		failures atomic.Int64
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range attempts {
				r, err := sched.Acquire()
				if errors.Is(err, crserrors.ErrNoResourceAvailable) {
					continue // everything is held or cooling
				}
				if err != nil || sched.Release(r.id) != nil {
					failures.Add(1)
					continue
				}
				released.Store(r.id, true)
			}
		}()
	}
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d unexpected Acquire/Release errors", n)
	}
	fence.wait(t, sched)

	distinct := 0
	released.Range(func(any, any) bool { distinct++; return true })
	if distinct == 0 {
		t.Fatal("no resource was ever released; the test exercised nothing")
	}
	st := sched.Stats()
	// No timer has fired, so every released resource is excluded with
	// exactly one pending cooldown, and the rest were never acquired.
	if st.HeldResources != 0 || st.ExcludedResources != distinct || m.Cooling() != distinct || len(clock.pending()) != distinct {
		t.Fatalf("held %d, excluded %d, cooling %d, pending timers %d; want 0 and %d released resources for the rest",
			st.HeldResources, st.ExcludedResources, m.Cooling(), len(clock.pending()), distinct)
	}
	if st.DroppedEvents != 0 {
		t.Fatalf("%d events dropped", st.DroppedEvents)
	}

	clock.fireAll()
	if st := sched.Stats(); st.ActiveResources != resources || m.Cooling() != 0 {
		t.Fatalf("after expiry: %d active, %d cooling; want %d and 0", st.ActiveResources, m.Cooling(), resources)
	}
}
