package scheduler_test

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

var bg = context.Background()

func leaseConfig(ttl time.Duration, clock *fakeclock.Clock) config.Config[*worker, string] {
	cfg := baseConfig(2, config.Exclusive)
	cfg.LeaseTTL = ttl
	cfg.Clock = clock
	return cfg
}

func mustLease(t *testing.T, s *scheduler.Scheduler[*worker, string]) scheduler.Lease[*worker, string] {
	t.Helper()
	l, err := s.Lease(bg)
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	return l
}

func TestLeaseHoldsUntilReleasedOnce(t *testing.T) {
	s := newScheduler(t, baseConfig(2, config.Exclusive))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	if l.Key() != "a" || l.Value().ID != "a" {
		t.Fatalf("lease on %s / %v", l.Key(), l.Value())
	}
	wantState(t, s, "a", "held")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
	wantErr(t, "second Release", l.Release(), crserrors.ErrLeaseReleased)
	wantState(t, s, "a", "active")
}

func TestStaleLeaseNeverActsOnALaterLease(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1))
	first := mustLease(t, s)
	copyOfFirst := first
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	second := mustLease(t, s)
	wantErr(t, "copy of released lease", copyOfFirst.Release(), crserrors.ErrLeaseReleased)
	wantErr(t, "extend through copy of released lease", copyOfFirst.Extend(time.Minute), crserrors.ErrLeaseReleased)
	wantState(t, s, "a", "held")
	if err := second.Release(); err != nil {
		t.Fatalf("the later lease was disturbed: %v", err)
	}
}

func TestReleaseByKeyRefusesToEndALease(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	wantErr(t, "Release(id) of a leased resource", s.Release("a"), crserrors.ErrResourceLeased)
	wantState(t, s, "a", "held")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestZeroLeaseIsAlreadyReleased(t *testing.T) {
	var l scheduler.Lease[*worker, string]
	wantErr(t, "Release of zero Lease", l.Release(), crserrors.ErrLeaseReleased)
	if l.Key() != "" || l.Value() != nil {
		t.Fatal("zero Lease has a key or value")
	}
}

func TestSharedLeaseCountsInFlightUse(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Shared))
	addAll(t, s, w("a", 1), w("b", 1))
	first := mustLease(t, s)
	second := mustLease(t, s)
	if first.Key() == second.Key() {
		t.Fatalf("equal priorities, yet both leases went to %s: least-loaded tie-break missing", first.Key())
	}
	if st := s.Stats(); st.Holders != 2 || st.ActiveResources != 2 {
		t.Fatalf("stats %+v", st)
	}
	for _, l := range []*scheduler.Lease[*worker, string]{&first, &second} {
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Holders != 0 {
		t.Fatalf("holders after release: %d", st.Holders)
	}
}

func TestLeaseExpiresAtItsDeadline(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	clock.Advance(999 * time.Millisecond)
	wantState(t, s, "a", "held")
	clock.Advance(time.Millisecond)
	wantState(t, s, "a", "active")
	wantErr(t, "Release after expiry", l.Release(), crserrors.ErrLeaseExpired)
	wantErr(t, "Extend after expiry", l.Extend(time.Second), crserrors.ErrLeaseExpired)
	if st := s.Stats(); st.ExpiredLeases != 1 || st.Holders != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestExpiredLeaseGoesToTheOldestWaiter(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	r := acquireAsync(bg, s)
	untilWaiters(t, s, 1)
	clock.Advance(time.Second)
	if got := <-r; got.err != nil || got.v.ID != "a" {
		t.Fatalf("%v, %v", got.v, got.err)
	}
	wantErr(t, "late Release", l.Release(), crserrors.ErrLeaseExpired)
	wantState(t, s, "a", "held") // by the waiter, untouched by the late Release
}

func TestExtendPushesTheDeadlineBack(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	clock.Advance(900 * time.Millisecond)
	if err := l.Extend(time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(900 * time.Millisecond) // past the original deadline
	wantState(t, s, "a", "held")
	clock.Advance(100 * time.Millisecond)
	wantState(t, s, "a", "active")
	wantErr(t, "Extend(0)", l.Extend(0), crserrors.ErrInvalidDuration)
}

func TestExtendGivesADeadlineWithoutLeaseTTL(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(0, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	clock.Advance(time.Hour)
	wantState(t, s, "a", "held")
	if err := l.Extend(time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	wantState(t, s, "a", "active")
}

func TestReleaseAfterDeadlineIsExpiryEvenBeforeTheTimerRuns(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	// Move time without firing timers: the Release itself must notice.
	clockWithoutTimers(clock, 2*time.Second)
	wantErr(t, "Release past deadline", l.Release(), crserrors.ErrLeaseExpired)
	wantState(t, s, "a", "active")
	if s.Stats().ExpiredLeases != 1 {
		t.Fatal("expiry not counted")
	}
}

// clockWithoutTimers advances the clock while every timer is stopped, as
// if the timer goroutine had not been scheduled yet.
func clockWithoutTimers(c *fakeclock.Clock, d time.Duration) {
	c.Pause()
	c.Advance(d)
	c.Resume()
}

func TestOneTimerServesAllLeases(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Second, clock))
	addAll(t, s, numbered(100)...)
	for i := 0; i < 100; i++ {
		mustLease(t, s) // left to expire
		clock.Advance(time.Millisecond)
	}
	if p := clock.Pending(); p != 1 {
		t.Fatalf("%d timers pending for 100 leases, want 1", p)
	}
	clock.Advance(time.Second)
	if st := s.Stats(); st.ExpiredLeases != 100 || st.ActiveResources != 100 {
		t.Fatalf("stats %+v", st)
	}
	if p := clock.Pending(); p != 0 {
		t.Fatalf("%d timers pending with no lease left", p)
	}
}

func TestRemovedLeasedResourceLeavesWithItsLastLease(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "draining")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "absent")
	_, err := s.Acquire()
	wantErr(t, "Acquire after drain", err, crserrors.ErrNoResourceAvailable)
}

func TestLeaseAfterShutdownFails(t *testing.T) {
	s, err := scheduler.New(baseConfig(1, config.Exclusive))
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	s.Shutdown()
	_, err = s.Lease(bg)
	wantErr(t, "Lease after Shutdown", err, crserrors.ErrSchedulerClosed)
	wantErr(t, "Release after Shutdown", l.Release(), crserrors.ErrSchedulerClosed)
}

func TestLeaseAndReleaseDoNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	s := newScheduler(t, baseConfig(8, config.Exclusive))
	addAll(t, s, numbered(64)...)
	allocs := testing.AllocsPerRun(1000, func() {
		l, _ := s.Lease(bg)
		_ = l.Release()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocs per Lease+Release, want 0", allocs)
	}
}

func TestLateReleaseOfAnExpiredLeaseReportsTheExpiryOnce(t *testing.T) {
	clock := fakeclock.New()
	s, rec := observed(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	clock.Advance(2 * time.Second) // the timer reclaims it
	wantErr(t, "late Release", l.Release(), crserrors.ErrLeaseExpired)
	s.Shutdown()
	if expires := len(rec.ids(events.EventExpire)); expires != 1 {
		t.Fatalf("%d expire events for one expiry", expires)
	}
}

// A lease's Release reports the release; a Release that finds the lease
// past its deadline before the timer does reports the expiry instead.
func TestReleaseReportsAReleaseOrTheExpiryItFinds(t *testing.T) {
	clock := fakeclock.New()
	s, rec := observed(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l = mustLease(t, s)
	clock.Pause() // the timer is late
	clock.Advance(2 * time.Second)
	wantErr(t, "Release past the deadline", l.Release(), crserrors.ErrLeaseExpired)
	clock.Resume()
	s.Shutdown()
	if released, expired := rec.ids(events.EventRelease), rec.ids(events.EventExpire); len(released) != 1 || len(expired) != 1 {
		t.Fatalf("EventRelease for %v, EventExpire for %v; want one each", released, expired)
	}
}

func TestStatsHistogramIsTheCallersCopy(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	st := s.Stats()
	st.WaitHistogram.Bounds[0] = time.Hour
	if again := s.Stats(); again.WaitHistogram.Bounds[0] == time.Hour {
		t.Fatal("editing one snapshot's bounds changed the scheduler's")
	}
}

func TestManySharedLeasesReleaseInAnyOrder(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Shared))
	addAll(t, s, w("a", 1))
	leases := make([]scheduler.Lease[*worker, string], 50)
	for i := range leases {
		leases[i] = mustLease(t, s)
	}
	for _, i := range rand.New(rand.NewSource(3)).Perm(len(leases)) {
		if err := leases[i].Release(); err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		wantErr(t, "second Release", leases[i].Release(), crserrors.ErrLeaseReleased)
	}
	if st := s.Stats(); st.Holders != 0 {
		t.Fatalf("holders %d after releasing every lease", st.Holders)
	}
}

// A handle that extended its lease knows the new deadline: when a copy
// released the lease before that deadline, the handle says released, not
// expired, even after the original deadline has passed.
func TestExtendedHandleTellsAReleaseFromAnExpiry(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	if err := l.Extend(time.Hour); err != nil {
		t.Fatal(err)
	}
	released := l
	if err := released.Release(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second) // past the first deadline, not the extended one
	wantErr(t, "Release through the extended handle", l.Release(), crserrors.ErrLeaseReleased)
}

// A lease ends at its deadline: a Release at that very instant, before
// the timer has run, is an expiry.
func TestReleaseAtTheDeadlineIsAnExpiry(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	clock.Pause()
	clock.Advance(time.Second)
	err := l.Release()
	clock.Resume()
	wantErr(t, "Release at the deadline", err, crserrors.ErrLeaseExpired)
	if s.Stats().ExpiredLeases != 1 {
		t.Fatal("expiry not counted")
	}
}

// Extend at the very instant of the deadline is too late.
func TestExtendAtTheDeadlineIsTooLate(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Second, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	clock.Pause()
	clock.Advance(time.Second)
	err := l.Extend(time.Minute)
	clock.Resume()
	wantErr(t, "Extend at the deadline", err, crserrors.ErrLeaseExpired)
}
