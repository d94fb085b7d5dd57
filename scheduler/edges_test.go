package scheduler_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

func TestRemovingAnEjectedResourceGivesBackItsEjectionSlot(t *testing.T) {
	s := newScheduler(t, ejectionConfig(fakeclock.New(), 0))
	addAll(t, s, w("a", 1), w("b", 2), w("c", 3))
	failTimes(t, s, "a", 3)
	wantState(t, s, "a", "resting")
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	// Two resources left: one of them may be ejected.
	failTimes(t, s, "b", 3)
	wantState(t, s, "b", "resting")
	if got := s.Stats().EjectedResources; got != 1 {
		t.Fatalf("%d ejected, want 1", got)
	}
}

func TestAnUnhashableKeyIsNotFoundAndLeavesTheSchedulerWorking(t *testing.T) {
	s := anyKeyed(t)
	if err := s.Add("a"); err != nil {
		t.Fatal(err)
	}
	bad := []int{1}
	if _, err := s.Get(bad); err != crserrors.ErrResourceNotFound {
		t.Fatalf("Get: %v, want ErrResourceNotFound", err)
	}
	for name, op := range map[string]func(any) error{
		"Exclude": s.Exclude, "Include": s.Include, "Remove": s.Remove,
		"Suspend": func(id any) error { return s.Suspend(id, time.Second) },
	} {
		if err := op(bad); !errors.Is(err, crserrors.ErrResourceNotFound) {
			t.Fatalf("%s: %v, want ErrResourceNotFound", name, err)
		}
	}
	if err := s.Add("b"); err != nil {
		t.Fatalf("Add after the unhashable key: %v", err)
	}
	if s.Len() != 2 {
		t.Fatalf("Len %d, want 2", s.Len())
	}
}

func TestAnUnhashableKeyIsRefusedByAddAndBatchAdd(t *testing.T) {
	s := anyKeyed(t)
	if err := s.Add([]int{1}); err != crserrors.ErrInvalidKey {
		t.Fatalf("Add: %v, want ErrInvalidKey", err)
	}
	if err := s.BatchAdd([]any{"a", map[int]int{}}); err != crserrors.ErrInvalidKey {
		t.Fatalf("BatchAdd: %v, want ErrInvalidKey", err)
	}
	if err := s.Update([]int{1}); err != crserrors.ErrResourceNotFound {
		t.Fatalf("Update: %v, want ErrResourceNotFound", err)
	}
	if s.Len() != 0 {
		t.Fatalf("Len %d after refused adds", s.Len())
	}
	if err := s.Add("a"); err != nil {
		t.Fatal(err)
	}
}

func TestANaNKeyIsRefused(t *testing.T) {
	nan := math.NaN()
	t.Run("float64", func(t *testing.T) {
		s, err := scheduler.New(config.Config[float64, float64]{
			Comparator: func(a, b float64) int { return 0 },
			KeyFunc:    func(v float64) float64 { return v },
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown()
		for range 2 {
			if err := s.Add(nan); err != crserrors.ErrInvalidKey {
				t.Fatalf("Add(NaN): %v, want ErrInvalidKey", err)
			}
		}
		if err := s.BatchAdd([]float64{1, nan}); err != crserrors.ErrInvalidKey {
			t.Fatalf("BatchAdd: %v, want ErrInvalidKey", err)
		}
		if s.Len() != 0 {
			t.Fatalf("Len %d after refused adds", s.Len())
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("inside any", func(t *testing.T) {
		s := anyKeyed(t)
		type pair struct{ a, b float64 }
		for _, k := range []any{nan, float32(nan), complex(nan, 0), pair{1, nan}, [1]any{nan}} {
			if err := s.Add(k); err != crserrors.ErrInvalidKey {
				t.Fatalf("Add(%v): %v, want ErrInvalidKey", k, err)
			}
		}
		if s.Len() != 0 {
			t.Fatalf("Len %d after refused adds", s.Len())
		}
	})
}

// forever is the longest duration there is; added to any clock reading
// past zero it overflows int64.
const forever = time.Duration(math.MaxInt64)

// farAhead advances clock in huge steps, past where now + forever would
// have wrapped.
func farAhead(clock *fakeclock.Clock) {
	for range 3 {
		clock.Advance(100 * 365 * 24 * time.Hour)
	}
}

func TestAHugeSuspensionLastsUntilInclude(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1))
	clock.Advance(time.Hour) // the scheduler's clock is not at zero
	if err := s.Suspend("a", forever); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "resting")
	farAhead(clock)
	wantState(t, s, "a", "resting")
	if _, err := s.Acquire(); err != crserrors.ErrNoResourceAvailable {
		t.Fatalf("Acquire during the suspension: %v", err)
	}
	if err := s.Include("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
}

func TestAHugeCooldownRestsTheResource(t *testing.T) {
	t.Run("Lease.Cooldown", func(t *testing.T) {
		clock := fakeclock.New()
		s := newScheduler(t, healthConfig(clock))
		addAll(t, s, w("a", 1))
		clock.Advance(time.Hour)
		l := mustLease(t, s)
		if err := l.Cooldown(forever); err != nil {
			t.Fatal(err)
		}
		farAhead(clock)
		wantState(t, s, "a", "resting")
	})
	t.Run("ReleaseCooldown", func(t *testing.T) {
		clock := fakeclock.New()
		cfg := healthConfig(clock)
		cfg.ReleaseCooldown = forever
		s := newScheduler(t, cfg)
		addAll(t, s, w("a", 1))
		clock.Advance(time.Hour)
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
		if err := s.Release("a"); err != nil {
			t.Fatal(err)
		}
		farAhead(clock)
		wantState(t, s, "a", "resting")
	})
}

func TestAHugeEjectionLastsUntilInclude(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.Ejection = config.Ejection{ConsecutiveFailures: 1, BaseTime: forever / 2}
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1), w("b", 2), w("c", 3))
	clock.Advance(time.Hour)
	failTimes(t, s, "a", 1) // ejected for BaseTime
	if err := s.Include("a"); err != nil {
		t.Fatal(err)
	}
	failTimes(t, s, "a", 1) // the second ejection: 2 x BaseTime overflows
	farAhead(clock)
	wantState(t, s, "a", "resting")
}

func TestALeaseWithAHugeDeadlineNeverExpires(t *testing.T) {
	t.Run("LeaseTTL", func(t *testing.T) {
		clock := fakeclock.New()
		s := newScheduler(t, leaseConfig(forever, clock))
		addAll(t, s, w("a", 1))
		clock.Advance(time.Hour)
		l := mustLease(t, s)
		farAhead(clock)
		wantState(t, s, "a", "held")
		if err := l.Extend(time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if err := l.Release(); err != nil {
			t.Fatalf("Release: %v", err)
		}
		wantState(t, s, "a", "active")
	})
	t.Run("Extend", func(t *testing.T) {
		clock := fakeclock.New()
		s := newScheduler(t, leaseConfig(time.Second, clock))
		addAll(t, s, w("a", 1))
		clock.Advance(time.Hour)
		l := mustLease(t, s)
		if err := l.Extend(forever); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		farAhead(clock)
		wantState(t, s, "a", "held")
		if err := l.Release(); err != nil {
			t.Fatalf("Release: %v", err)
		}
		wantState(t, s, "a", "active")
	})
}

// acquisitions counts how many of n shared acquisitions succeed on a
// scheduler of one resource limited by limit, with the clock moving a
// second between them.
func acquisitions(t *testing.T, n int, limit func(*worker) (float64, int)) int {
	t.Helper()
	clock := fakeclock.New()
	cfg := baseConfig(1, config.Shared)
	cfg.Clock = clock
	cfg.RateLimit = limit
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	clock.Advance(time.Hour)
	got := 0
	for range n {
		if _, err := s.Acquire(); err == nil {
			got++
		}
		clock.Advance(time.Second)
	}
	return got
}

func TestATinyRateLimitIsEnforced(t *testing.T) {
	if got := acquisitions(t, 5, func(*worker) (float64, int) { return 1e-12, 1 }); got != 1 {
		t.Fatalf("%d of 5 acquisitions succeeded, want 1 (the burst)", got)
	}
}

func TestRateLimitsThatLimitNothingAreUnlimited(t *testing.T) {
	for name, rate := range map[string]float64{
		"zero": 0, "negative": -1, "NaN": math.NaN(), "+Inf": math.Inf(1),
	} {
		t.Run(name, func(t *testing.T) {
			if got := acquisitions(t, 5, func(*worker) (float64, int) { return rate, 1 }); got != 5 {
				t.Fatalf("%d of 5 acquisitions succeeded, want all", got)
			}
		})
	}
}

func TestABurstBelowOneIsOne(t *testing.T) {
	for _, burst := range []int{0, -1, math.MinInt} {
		// One token an hour: the burst alone decides.
		if got := acquisitions(t, 5, func(*worker) (float64, int) { return 1.0 / 3600, burst }); got != 1 {
			t.Fatalf("burst %d: %d of 5 acquisitions succeeded, want 1", burst, got)
		}
	}
}

// cycles is how many leases the expiry-queue tests end: far more than
// the bound they check.
const cycles = 10000

func TestReleasedLeasesDoNotPileUpInTheExpiryQueue(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Hour, clock))
	addAll(t, s, w("a", 1), w("b", 2))
	kept := mustLease(t, s) // one live lease, whose entry stays
	for i := range cycles {
		l := mustLease(t, s)
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			clock.Advance(time.Millisecond)
		}
	}
	if n := s.ExpiryQueueLen(); n > 4 {
		t.Fatalf("expiry queue holds %d entries after %d lease+release cycles with one lease live", n, cycles)
	}
	clock.Advance(time.Hour) // the live lease still expires
	wantState(t, s, kept.Key(), "active")
}

func TestExtendedLeasesDoNotPileUpInTheExpiryQueue(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, leaseConfig(time.Hour, clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	for range cycles {
		if err := l.Extend(time.Hour); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
	if n := s.ExpiryQueueLen(); n > 4 {
		t.Fatalf("expiry queue holds %d entries for one lease extended %d times", n, cycles)
	}
	clock.Advance(time.Hour)
	wantState(t, s, "a", "active")
}

func TestUpdateToAFasterRateShortensARateLimitRest(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	rate := 1e-12 // read by Add, and by Update below
	cfg.RateLimit = func(*worker) (float64, int) { return rate, 1 }
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	clock.Advance(time.Hour)
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "resting") // next token: never
	rate = 1
	if err := s.Update(w("a", 1)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	wantState(t, s, "a", "active")
}

func TestEndedSuspensionsDoNotPileUpInTheExpiryQueue(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1), w("b", 2))
	for i := range cycles {
		if err := s.Suspend("a", time.Hour); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := s.Include("a"); err != nil {
				t.Fatal(err)
			}
		} else if err := s.Exclude("a"); err != nil {
			t.Fatal(err)
		} else if err := s.Include("a"); err != nil {
			t.Fatal(err)
		}
		if err := s.Suspend("b", time.Duration(i+1)*time.Second); err != nil { // a later deadline each time
			t.Fatal(err)
		}
	}
	if n := s.ExpiryQueueLen(); n > 4 {
		t.Fatalf("expiry queue holds %d entries after %d suspensions ended early or extended", n, cycles)
	}
	wantState(t, s, "b", "resting")
	clock.Advance(cycles * time.Second)
	wantState(t, s, "b", "active")
}
