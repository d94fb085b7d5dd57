package scheduler_test

import (
	"testing"
	"time"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
)

// Tests added to kill mutants the other tests let live (docs/TESTING.md).

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
