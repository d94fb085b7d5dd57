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

	"github.com/crsched/crs/config"
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
// timer on time or late, in a scheduler of ejectionConfig that configure
// (if not nil) changes.
func eventsOfA(t *testing.T, late bool, configure func(*config.Config[*worker, string]), setup, op func(*scheduler.Scheduler[*worker, string])) string {
	t.Helper()
	clock := fakeclock.New()
	cfg := ejectionConfig(clock, 0)
	if configure != nil {
		configure(&cfg)
	}
	s, rec := observed(t, cfg)
	addAll(t, s, w("a", 1), w("b", 2))
	setup(s)
	if late {
		clock.Pause()
	}
	clock.Advance(30 * time.Second)
	op(s)
	clock.Resume()
	clock.Advance(0)
	mustInvariants(t, s)
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
	excludeSuspended := func(s *scheduler.Scheduler[*worker, string]) {
		if err := s.Exclude("a"); err != nil {
			t.Fatal(err)
		}
		suspend(s)
	}
	update := func(s *scheduler.Scheduler[*worker, string]) {
		if err := s.Update(w("a", 1)); err != nil {
			t.Fatal(err)
		}
	}
	release := func(*scheduler.Scheduler[*worker, string]) {
		if err := lease.Release(); err != nil {
			t.Fatal(err)
		}
	}
	cooldown := func(*scheduler.Scheduler[*worker, string]) {
		if err := lease.Cooldown(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	exclude := func(s *scheduler.Scheduler[*worker, string]) {
		if err := s.Exclude("a"); err != nil {
			t.Fatal(err)
		}
	}
	include := func(s *scheduler.Scheduler[*worker, string]) {
		if err := s.Include("a"); err != nil {
			t.Fatal(err)
		}
	}
	releaseCooldown := func(cfg *config.Config[*worker, string]) { cfg.ReleaseCooldown = time.Second }
	capacity := func(cfg *config.Config[*worker, string]) {
		cfg.Capacity = func(v *worker) int { return v.Capacity }
	}
	// A lease on a that fails after a's ejection is over ejects it again.
	var leases []scheduler.Lease[*worker, string]
	ejectHeld := func(s *scheduler.Scheduler[*worker, string]) {
		if err := s.Update(&worker{ID: "a", Priority: 1, Capacity: 6}); err != nil {
			t.Fatal(err)
		}
		leases = leases[:0]
		for range 6 {
			l := mustLease(t, s)
			if l.Key() != "a" {
				t.Fatalf("lease on %s, want a", l.Key())
			}
			leases = append(leases, l)
		}
		for i := range 5 { // the third ejects a; the others count toward the next ejection
			if err := leases[i].Fail(); err != nil {
				t.Fatal(err)
			}
		}
	}
	fail := func(*scheduler.Scheduler[*worker, string]) {
		if err := leases[5].Fail(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		configure func(*config.Config[*worker, string])
		setup, op func(*scheduler.Scheduler[*worker, string])
	}{
		{"release", nil, suspendHeld, release},
		{"update", nil, suspend, update},
		{"update after an ejection", nil, eject, update},
		// The operations below replace or clear the ended rest themselves.
		{"suspend", nil, suspend, suspend},
		{"suspend after an ejection", nil, eject, suspend},
		{"cooldown", nil, suspendHeld, cooldown},
		{"release with a release cooldown", releaseCooldown, suspendHeld, release},
		{"failure after an ejection", capacity, ejectHeld, fail},
		{"exclude", nil, suspend, exclude},
		{"exclude after an ejection", nil, eject, exclude},
		{"suspend of an excluded resource", nil, excludeSuspended, suspend},
		{"include of an excluded resource", nil, excludeSuspended, include},
	} {
		t.Run(c.name, func(t *testing.T) {
			onTime := eventsOfA(t, false, c.configure, c.setup, c.op)
			late := eventsOfA(t, true, c.configure, c.setup, c.op)
			if onTime != late || strings.Count(late, "Resume") != 1 {
				t.Fatalf("a's events with the timer on time %s, late %s; want the same, with one Resume", onTime, late)
			}
		})
	}
}

// An excluded resource's ejection ends when its time is up, as any
// other's: its end is reported, and the resource no longer counts as
// ejected, so that another may be ejected (it counted until Include).
func TestAnExcludedResourcesEjectionEndsOnTime(t *testing.T) {
	clock := fakeclock.New()
	cfg := ejectionConfig(clock, 0)
	cfg.Capacity = func(v *worker) int { return v.Capacity }
	s, rec := observed(t, cfg)
	addAll(t, s, w("a", 1), w("b", 2), w("c", 3))
	if err := s.Update(&worker{ID: "a", Priority: 1, Capacity: 4}); err != nil {
		t.Fatal(err)
	}
	var leases []scheduler.Lease[*worker, string]
	for range 3 {
		leases = append(leases, mustLease(t, s))
	}
	for i, l := range leases {
		if i == 2 { // a, excluded, is ejected by the third failure
			if err := s.Exclude("a"); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Fail(); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(30 * time.Second)
	// Of three resources, one excluded, one may be ejected: a no longer is.
	failTimes(t, s, "b", 3)
	wantState(t, s, "b", "resting")
	mustInvariants(t, s)
	s.Shutdown()
	if got := fmt.Sprint(rec.ids(events.EventEject), rec.ids(events.EventResume)); got != "[a b] [a]" {
		t.Fatalf("ejected, resumed: %s; want [a b] [a]", got)
	}
}

// Suspending a resource again while its suspension runs extends it: that
// suspension has not ended, and its one end is reported when the later
// deadline comes, whatever the timer's timing.
func TestExtendingARunningSuspensionReportsOneResume(t *testing.T) {
	for _, late := range []bool{false, true} {
		clock := fakeclock.New()
		s, rec := observed(t, healthConfig(clock))
		addAll(t, s, w("a", 1), w("b", 2))
		if err := s.Suspend("a", time.Second); err != nil {
			t.Fatal(err)
		}
		if late {
			clock.Pause()
		}
		clock.Advance(500 * time.Millisecond)
		if err := s.Suspend("a", time.Second); err != nil {
			t.Fatal(err)
		}
		clock.Advance(700 * time.Millisecond) // the first deadline has passed, the second not yet
		wantState(t, s, "a", "resting")
		if got := rec.ids(events.EventResume); len(got) != 0 {
			t.Fatalf("late %v: EventResume for %v while a's extended suspension runs", late, got)
		}
		clock.Resume()
		clock.Advance(0)
		wantState(t, s, "a", "resting")
		clock.Advance(time.Second)
		wantState(t, s, "a", "active")
		s.Shutdown()
		if got := rec.ids(events.EventResume); fmt.Sprint(got) != "[a]" {
			t.Fatalf("late %v: EventResume for %v, want [a] once", late, got)
		}
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
