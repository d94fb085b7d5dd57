package scheduler_test

import (
	"testing"
	"time"

	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// Tests added to kill mutants the other tests let live (docs/TESTING.md).

// The expiry queue has one timer, armed for its earliest deadline: a rest
// that ends sooner than the one the timer waits for must re-arm it.
func TestAnEarlierRestScheduledLaterEndsOnTime(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1), w("b", 2))
	if err := s.Suspend("a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Suspend("b", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	wantState(t, s, "b", "active")
	wantState(t, s, "a", "resting")
}

// EventResume reports the end of a suspension or an ejection, not of a
// rate-limit rest (the resource was never taken out of service).
func TestResumeReportsTheEndOfEjectionsNotOfRateLimits(t *testing.T) {
	clock := fakeclock.New()
	rec := &recorder{}
	cfg := ejectionConfig(clock, 0)
	cfg.RateLimit = func(v *worker) (float64, int) {
		if v.ID == "limited" {
			return 1, 1
		}
		return 0, 0
	}
	cfg.Observers = []events.Observer[string]{rec}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, s, w("a", 1), w("b", 2))
	failTimes(t, s, "a", 3) // ejected for 10s
	clock.Advance(10 * time.Second)
	addAll(t, s, w("limited", 0))
	l := mustLease(t, s) // takes limited's only token: it rests a second
	if l.Key() != "limited" {
		t.Fatalf("leased %s, want limited", l.Key())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	wantState(t, s, "limited", "active")
	s.Shutdown()
	resumed := map[string]int{}
	for _, e := range rec.events() {
		if e.Type == events.EventResume {
			resumed[e.ID]++
		}
	}
	if resumed["a"] != 1 || resumed["limited"] != 0 {
		t.Fatalf("EventResume per resource %v; want a once (its ejection ended), limited never", resumed)
	}
}
