package cooldown

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
)

func release(id string) events.Event[string] {
	return events.Event[string]{Type: events.EventRelease, ID: id}
}

func assertCalls(t *testing.T, ctrl *recordingController, want ...string) {
	t.Helper()
	if got := ctrl.recorded(); !slices.Equal(got, want) {
		t.Fatalf("controller calls = %q, want %q", got, want)
	}
}

func TestReleaseExcludesAtOnceAndIncludesWhenTheTimerFires(t *testing.T) {
	ctrl := &recordingController{}
	m, clock := newTestManager[string](ctrl, 5*time.Second)

	m.OnEvent(release("a"))
	assertCalls(t, ctrl, "exclude a")
	pending := clock.pending()
	if len(pending) != 1 || pending[0].duration != 5*time.Second {
		t.Fatalf("armed timers = %d (first %v), want one of 5s", len(pending), pending)
	}
	if got := m.Cooling(); got != 1 {
		t.Fatalf("Cooling() = %d while the timer is pending, want 1", got)
	}

	clock.fireAll()
	assertCalls(t, ctrl, "exclude a", "include a")
	if got := m.Cooling(); got != 0 {
		t.Fatalf("Cooling() = %d after the timer fired, want 0", got)
	}
}

func TestOnlyReleaseEventsStartACooldown(t *testing.T) {
	ctrl := &recordingController{}
	m, clock := newTestManager[string](ctrl, time.Second)
	for _, typ := range []events.EventType{
		events.EventAdd, events.EventAcquire, events.EventExclude, events.EventInclude,
		events.EventRemove, events.EventUpdate, events.EventUpdate + 1, -1,
	} {
		m.OnEvent(events.Event[string]{Type: typ, ID: "a"})
	}
	assertCalls(t, ctrl)
	if n := len(clock.all()); n != 0 {
		t.Fatalf("%d timers armed by non-release events, want 0", n)
	}
}

func TestFailedExcludeSchedulesNoInclude(t *testing.T) {
	// The resource was acquired again (or removed) before the release
	// event arrived; including it later would hand a held resource back
	// to the pool or undo someone else's exclusion.
	ctrl := &recordingController{excludeErr: crserrors.ErrResourceNotActive}
	m, clock := newTestManager[string](ctrl, time.Second)

	m.OnEvent(release("a"))
	if n := len(clock.all()); n != 0 {
		t.Fatalf("%d timers armed after a failed Exclude, want 0", n)
	}
	if got := m.Cooling(); got != 0 {
		t.Fatalf("Cooling() = %d after a failed Exclude, want 0", got)
	}
	assertCalls(t, ctrl, "exclude a")
}

func TestCloseStopsPendingIncludesAndIgnoresLaterEvents(t *testing.T) {
	ctrl := &recordingController{}
	m, clock := newTestManager[string](ctrl, time.Minute)
	m.OnEvent(release("a"))
	m.OnEvent(release("b"))
	armed := clock.all()

	interrupted := m.Close()
	slices.Sort(interrupted)
	if !slices.Equal(interrupted, []string{"a", "b"}) {
		t.Fatalf("Close() = %q, want the cooling resources [a b]", interrupted)
	}
	if n := len(clock.pending()); n != 0 {
		t.Fatalf("%d timers still pending after Close, want 0", n)
	}
	// A callback that lost the race with Stop (already running when Close
	// stopped its timer) must not include either.
	for _, timer := range armed {
		timer.callback()
	}
	m.OnEvent(release("c"))
	assertCalls(t, ctrl, "exclude a", "exclude b")
	if got := m.Cooling(); got != 0 {
		t.Fatalf("Cooling() = %d after Close, want 0", got)
	}
	if again := m.Close(); len(again) != 0 {
		t.Fatalf("second Close() = %q, want nothing", again)
	}
}

func TestReleaseOfACoolingResourceRestartsItsCooldown(t *testing.T) {
	// Someone included "a" early, acquired and released it again: the new
	// release starts a fresh cooldown, and the first timer must not end it.
	ctrl := &recordingController{}
	m, clock := newTestManager[string](ctrl, time.Second)
	m.OnEvent(release("a"))
	first := clock.all()[0]
	m.OnEvent(release("a"))

	if !first.stopped {
		t.Fatal("first timer not stopped when the cooldown restarted")
	}
	first.callback() // as if it fired just before being stopped
	assertCalls(t, ctrl, "exclude a", "exclude a")
	if got := m.Cooling(); got != 1 {
		t.Fatalf("Cooling() = %d, want 1", got)
	}
	if fired := clock.fireAll(); fired != 1 {
		t.Fatalf("fired %d timers, want only the restarted one", fired)
	}
	assertCalls(t, ctrl, "exclude a", "exclude a", "include a")
}

func TestNonPositiveDurationDisablesCooldown(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		ctrl := &recordingController{}
		m, clock := newTestManager[string](ctrl, d)
		m.OnEvent(release("a"))
		if calls := ctrl.recorded(); len(calls) != 0 || len(clock.all()) != 0 {
			t.Errorf("duration %v: controller calls %q, timers %d; want none", d, calls, len(clock.all()))
		}
	}
}

func TestNewManagerPanicsOnNilController(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewManager(nil, ...) did not panic")
		}
	}()
	NewManager[string](nil, time.Second)
}

func TestConcurrentReleasesAndExpiriesCoolEveryResourceOnce(t *testing.T) {
	const resources = 64
	ctrl := &recordingController{}
	m, clock := newTestManager[string](ctrl, time.Second)

	var wg sync.WaitGroup
	for i := range resources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.OnEvent(release(fmt.Sprint("r", i)))
			_ = m.Cooling()
		}()
	}
	// Timers expire while releases are still arriving.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 10 {
			clock.fireAll()
		}
	}()
	wg.Wait()
	clock.fireAll()

	if got := m.Cooling(); got != 0 {
		t.Fatalf("Cooling() = %d after all timers fired, want 0", got)
	}
	excludes, includes := map[string]int{}, map[string]int{}
	for _, call := range ctrl.recorded() {
		var op, id string
		fmt.Sscan(call, &op, &id)
		if op == "exclude" {
			excludes[id]++
		} else {
			includes[id]++
			if excludes[id] == 0 {
				t.Fatalf("%s included before it was excluded", id)
			}
		}
	}
	for i := range resources {
		id := fmt.Sprint("r", i)
		if excludes[id] != 1 || includes[id] != 1 {
			t.Errorf("%s: %d excludes, %d includes; want 1 each", id, excludes[id], includes[id])
		}
	}
}
