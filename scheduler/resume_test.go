package scheduler_test

// The end of a suspension or ejection, and its EventResume: reported
// once, whether the timer or an operation on the resource finds it over
// first.

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// A suspension that is over ends at the first step that places the
// resource, here its release, even before its timer fires (the timer
// goroutine is late): its end is reported then, once, whichever comes
// first.
func TestASuspensionEndedByAReleaseIsReportedOnce(t *testing.T) {
	clock := fakeclock.New()
	s, rec := observed(t, healthConfig(clock))
	addAll(t, s, w("a", 1))
	releaseWithItsTimerLate(t, s, clock)
	clock.Resume()
	clock.Advance(0) // the late timer fires
	wantState(t, s, "a", "active")
	s.Shutdown()
	if resumed := rec.ids(events.EventResume); fmt.Sprint(resumed) != "[a]" {
		t.Fatalf("EventResume for %v; want [a]: the release ended a's suspension", resumed)
	}
}

// A resource removed while suspended is gone: the end of its suspension
// must not report it available again, whether it left at once (idle) or
// drains (held).
func TestASuspensionOfARemovedResourceEndsWithoutResume(t *testing.T) {
	clock := fakeclock.New()
	s, rec := observed(t, healthConfig(clock))
	addAll(t, s, w("idle", 2), w("held", 1))
	l := mustLease(t, s)
	if l.Key() != "held" {
		t.Fatalf("lease on %s, want held", l.Key())
	}
	for _, id := range []string{"idle", "held"} {
		if err := s.Suspend(id, time.Second); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove(id); err != nil && !errors.Is(err, crserrors.ErrResourceDraining) {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Second)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	if resumed := rec.ids(events.EventResume); len(resumed) != 0 {
		t.Fatalf("EventResume for %v after they were removed", resumed)
	}
}

// The events of resource a when op runs after a's rest is over, with the
// timer on time or late.
func eventsOfA(t *testing.T, late bool, setup, op func(*scheduler.Scheduler[*worker, string])) string {
	t.Helper()
	clock := fakeclock.New()
	s, rec := observed(t, ejectionConfig(clock, 0))
	addAll(t, s, w("a", 1), w("b", 2))
	setup(s)
	if late {
		clock.Pause()
	}
	clock.Advance(30 * time.Second)
	op(s)
	clock.Resume()
	clock.Advance(0)
	s.Shutdown()
	var out []events.EventType
	for _, e := range rec.events() {
		if e.ID == "a" {
			out = append(out, e.Type)
		}
	}
	return fmt.Sprint(out)
}

func TestTheEndOfARestIsReportedWhateverTheTimersTiming(t *testing.T) {
	var lease scheduler.Lease[*worker, string]
	suspendHeld := func(s *scheduler.Scheduler[*worker, string]) {
		lease = mustLease(t, s)
		if err := s.Suspend("a", time.Second); err != nil {
			t.Fatal(err)
		}
	}
	suspend := func(s *scheduler.Scheduler[*worker, string]) {
		if err := s.Suspend("a", time.Second); err != nil {
			t.Fatal(err)
		}
	}
	eject := func(s *scheduler.Scheduler[*worker, string]) { failTimes(t, s, "a", 3) }
	update := func(s *scheduler.Scheduler[*worker, string]) {
		if err := s.Update(w("a", 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		setup, op func(*scheduler.Scheduler[*worker, string])
	}{
		{"release", suspendHeld, func(*scheduler.Scheduler[*worker, string]) {
			if err := lease.Release(); err != nil {
				t.Fatal(err)
			}
		}},
		{"update", suspend, update},
		{"update after an ejection", eject, update},
	} {
		t.Run(c.name, func(t *testing.T) {
			onTime, late := eventsOfA(t, false, c.setup, c.op), eventsOfA(t, true, c.setup, c.op)
			if onTime != late || !strings.Contains(late, "Resume") {
				t.Fatalf("a's events with the timer on time %s, late %s; want the same, with the Resume", onTime, late)
			}
		})
	}
}

// A comparator that panics in the update which finds a suspension over
// leaves the suspension as it was (see place): its end is not reported
// then, but once, when the timer ends it.
func TestAPanickedUpdateReportsNoResumeForTheRestItKeeps(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	var panics atomic.Bool
	cfg.Comparator = func(x, y *worker) int {
		if panics.Load() {
			panic("comparator")
		}
		return byPriority(x, y)
	}
	s, rec := observed(t, cfg)
	addAll(t, s, w("a", 1), w("b", 2))
	if err := s.Suspend("a", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Pause()
	clock.Advance(2 * time.Second)
	panics.Store(true)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the update did not panic")
			}
		}()
		_ = s.Update(w("a", 1))
	}()
	panics.Store(false)
	if got := rec.ids(events.EventResume); len(got) != 0 {
		t.Fatalf("EventResume for %v after the update panicked", got)
	}
	clock.Resume()
	clock.Advance(0)
	wantState(t, s, "a", "active")
	s.Shutdown()
	if got := rec.ids(events.EventResume); fmt.Sprint(got) != "[a]" {
		t.Fatalf("EventResume for %v, want [a] from the timer", got)
	}
}
