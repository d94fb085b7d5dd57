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

// leases takes n leases, all of which must be on id.
func leases(t *testing.T, s *scheduler.Scheduler[*worker, string], id string, n int) []scheduler.Lease[*worker, string] {
	t.Helper()
	ls := make([]scheduler.Lease[*worker, string], n)
	for i := range ls {
		if ls[i] = mustLease(t, s); ls[i].Key() != id {
			t.Fatalf("lease %d on %s, want %s", i, ls[i].Key(), id)
		}
	}
	return ls
}

func fail(t *testing.T, ls []scheduler.Lease[*worker, string]) {
	t.Helper()
	for _, l := range ls {
		if err := l.Fail(); err != nil {
			t.Fatal(err)
		}
	}
}

// An ejection of a resource that already rests for longer (a suspension)
// must still be recorded as an ejection, or the pool's count of ejected
// resources would hold a slot no resource uses (CheckInvariants at the
// end of the test compares them).
func TestEjectionDuringALongerSuspensionIsStillAnEjection(t *testing.T) {
	clock := fakeclock.New()
	cfg := ejectionConfig(clock, 0)
	cfg.Capacity = func(v *worker) int { return v.Capacity }
	s := newScheduler(t, cfg)
	addAll(t, s, withCapacity("a", 1, 3), withCapacity("b", 2, 1))
	held := leases(t, s, "a", 3)
	if err := s.Suspend("a", time.Hour); err != nil {
		t.Fatal(err)
	}
	fail(t, held) // the third failure ejects a, which rests an hour anyway
	if st := s.Stats(); st.EjectedResources != 1 || st.SuspendedResources != 0 {
		t.Fatalf("after an ejection within a suspension: %d ejected, %d suspended; want 1, 0", st.EjectedResources, st.SuspendedResources)
	}
}

// Failures while a resource is ejected (by holders from before) eject it
// again, for longer, extending the rest.
func TestFailuresWhileEjectedExtendTheEjection(t *testing.T) {
	clock := fakeclock.New()
	cfg := ejectionConfig(clock, 0) // 10s, then 20s
	cfg.Capacity = func(v *worker) int { return v.Capacity }
	s := newScheduler(t, cfg)
	addAll(t, s, withCapacity("a", 1, 6), withCapacity("b", 2, 1))
	held := leases(t, s, "a", 6)
	fail(t, held[:3]) // ejected until t=10s
	clock.Advance(5 * time.Second)
	fail(t, held[3:]) // ejected again at t=5s: until t=25s
	clock.Advance(7 * time.Second)
	wantState(t, s, "a", "resting")
	clock.Advance(13 * time.Second)
	wantState(t, s, "a", "active")
}

// A release cooldown is a suspension: counted, and reported as one.
func TestReleaseCooldownCountsAndReportsASuspension(t *testing.T) {
	clock := fakeclock.New()
	rec := &recorder{}
	cfg := healthConfig(clock)
	cfg.ReleaseCooldown = time.Second
	cfg.Observers = []events.Observer[string]{rec}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, s, w("a", 1))
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Suspensions != 1 || st.SuspendedResources != 1 {
		t.Fatalf("after a release with a cooldown: %d suspensions, %d suspended; want 1, 1", st.Suspensions, st.SuspendedResources)
	}
	s.Shutdown()
	suspended := 0
	for _, e := range rec.events() {
		if e.Type == events.EventSuspend {
			suspended++
		}
	}
	if suspended != 1 {
		t.Fatalf("%d EventSuspend, want 1", suspended)
	}
}

// Exclude ends a suspension or an ejection, but a resource waiting for
// its next rate-limit token keeps waiting for it through Exclude and
// Include: no one may hand out a token early.
func TestExcludeKeepsARateLimitRest(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.RateLimit = func(*worker) (float64, int) { return 1, 1 }
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	if _, err := s.Acquire(); err != nil { // takes a's only token
		t.Fatal(err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "resting")
	if err := s.Exclude("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Include("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "resting")
	clock.Advance(2 * time.Second)
	wantState(t, s, "a", "active")
}

// An Update that slows a resource's rate limit can push its rest back;
// the rest must still end, at the new time.
func TestUpdateThatExtendsARateLimitRestEndsIt(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	perSecond := map[string]float64{"a": 1}
	cfg.RateLimit = func(v *worker) (float64, int) { return perSecond[v.ID] / float64(v.Capacity), 2 }
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	for range 2 { // both tokens: a rests until its next token, 1s away
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
		if err := s.Release("a"); err != nil {
			t.Fatal(err)
		}
	}
	wantState(t, s, "a", "resting")
	if err := s.Update(&worker{ID: "a", Priority: 1, Capacity: 10}); err != nil { // 0.1/s: next token 10s away
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	wantState(t, s, "a", "resting")
	clock.Advance(9*time.Second + time.Millisecond) // the token is due just after 10s
	wantState(t, s, "a", "active")
}
