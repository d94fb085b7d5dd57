package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

func healthConfig(clock *fakeclock.Clock) config.Config[*worker, string] {
	cfg := baseConfig(1, config.Exclusive)
	cfg.Clock = clock
	return cfg
}

func TestSuspendedResourceComesBackByItself(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1), w("b", 2))
	if err := s.Suspend("a", time.Second); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "resting")
	if got, _ := s.Acquire(); got.ID != "b" {
		t.Fatalf("acquired %s during a's suspension", got.ID)
	}
	clock.Advance(999 * time.Millisecond)
	wantState(t, s, "a", "resting")
	clock.Advance(time.Millisecond)
	wantState(t, s, "a", "active")
	if st := s.Stats(); st.Suspensions != 1 || st.SuspendedResources != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSuspendKeepsTheLaterDeadline(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1))
	if err := s.Suspend("a", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Suspend("a", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	wantState(t, s, "a", "resting")
	if err := s.Suspend("a", 3*time.Second); err != nil { // now until t=4s
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	wantState(t, s, "a", "resting")
	clock.Advance(time.Second)
	wantState(t, s, "a", "active")
}

func TestIncludeEndsASuspensionEarly(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1))
	if err := s.Suspend("a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Include("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
	clock.Advance(time.Hour) // the stale timer entry changes nothing
	wantState(t, s, "a", "active")
}

func TestSuspendingAHeldResourceTakesEffectAtRelease(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	if err := s.Suspend("a", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "resting") // to suspension, not back to the heap
	clock.Advance(time.Second)
	wantState(t, s, "a", "active")
}

func TestReleaseAfterTheSuspensionEndedGoesStraightBack(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	if err := s.Suspend("a", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	wantState(t, s, "a", "held") // the suspension is over; the lease still holds it
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
}

// releaseWithItsTimerLate leases a, suspends it for a second and, the
// clock paused, releases it once the suspension is over but before its
// timer fires.
func releaseWithItsTimerLate(t *testing.T, s *scheduler.Scheduler[*worker, string], clock *fakeclock.Clock) {
	t.Helper()
	l := mustLease(t, s)
	if l.Key() != "a" {
		t.Fatalf("lease on %s, want a", l.Key())
	}
	if err := s.Suspend("a", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Pause()
	clock.Advance(2 * time.Second)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// A release can end a suspension whose timer has not fired yet (the
// timer goroutine is late). Nothing must stay queued for that rest: an
// entry left over would end the resource's next rest out of turn, ahead
// of rests that ended before it.
func TestRestsEndedByAReleaseBeforeTheirTimerResumeInDeadlineOrder(t *testing.T) {
	clock := fakeclock.New()
	s, rec := observed(t, healthConfig(clock))
	addAll(t, s, w("a", 1), w("b", 2))
	releaseWithItsTimerLate(t, s, clock)
	wantState(t, s, "a", "active")
	if err := s.Suspend("b", 500*time.Millisecond); err != nil { // until 2.5s
		t.Fatal(err)
	}
	if err := s.Suspend("a", time.Second); err != nil { // until 3s
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	clock.Resume()
	clock.Advance(0)
	wantState(t, s, "a", "active")
	wantState(t, s, "b", "active")
	s.Shutdown()
	resumed := rec.ids(events.EventResume)
	if fmt.Sprint(resumed) != "[a b a]" {
		t.Fatalf("EventResume for %v; want [a b a]: the release, then b's rest (2.5s), then a's (3s)", resumed)
	}
}

// The same late release, then a cooldown of the resource while it is
// excluded: the cooldown's end must be reported once. Excluded, the
// resource keeps its ended rest (only Include returns it), so every entry
// still queued for it would report the end again.
func TestACooldownOfAnExcludedResourceEndsWithOneResume(t *testing.T) {
	clock := fakeclock.New()
	s, rec := observed(t, healthConfig(clock))
	addAll(t, s, w("a", 1))
	releaseWithItsTimerLate(t, s, clock)
	l := mustLease(t, s)
	if err := s.Suspend("a", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Exclude("a"); err != nil { // ends the suspension; a stays held
		t.Fatal(err)
	}
	if err := l.Cooldown(time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	clock.Resume()
	clock.Advance(0)
	wantState(t, s, "a", "excluded")
	s.Shutdown()
	if resumed := len(rec.ids(events.EventResume)); resumed != 2 {
		t.Fatalf("%d EventResume, want 2: the late release's, and the cooldown's end once", resumed)
	}
}

func TestSuspensionEndServesTheOldestWaiter(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, healthConfig(clock))
	addAll(t, s, w("a", 1))
	if err := s.Suspend("a", time.Second); err != nil {
		t.Fatal(err)
	}
	r := acquireAsync(bg, s)
	untilWaiters(t, s, 1)
	clock.Advance(time.Second)
	if got := <-r; got.err != nil || got.v.ID != "a" {
		t.Fatalf("%v, %v", got.v, got.err)
	}
}

func TestSuspendRejectsBadInput(t *testing.T) {
	s := newScheduler(t, healthConfig(fakeclock.New()))
	addAll(t, s, w("a", 1))
	for _, d := range []time.Duration{0, -time.Second} {
		wantErr(t, fmt.Sprintf("Suspend(%v)", d), s.Suspend("a", d), crserrors.ErrInvalidDuration)
	}
	wantState(t, s, "a", "active")
	wantErr(t, "Suspend of unknown", s.Suspend("zz", time.Second), crserrors.ErrResourceNotFound)
}

func TestReleaseCooldownRestsEveryReleasedResource(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.ReleaseCooldown = 5 * time.Second
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	for _, release := range []func() error{
		func() error { _, err := s.Acquire(); return errors.Join(err, s.Release("a")) },
		func() error { l, err := s.Lease(bg); return errors.Join(err, l.Release()) },
	} {
		if err := release(); err != nil {
			t.Fatal(err)
		}
		wantState(t, s, "a", "resting")
		clock.Advance(5*time.Second - 1)
		wantState(t, s, "a", "resting")
		clock.Advance(1)
		wantState(t, s, "a", "active")
	}
}

func TestLeaseCooldownRestsForTheLongerOfItsAndTheConfigured(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.ReleaseCooldown = time.Second
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	l := mustLease(t, s)
	wantErr(t, "Cooldown(0)", l.Cooldown(0), crserrors.ErrInvalidDuration)
	wantState(t, s, "a", "held") // the refused call changed nothing
	if err := l.Cooldown(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Release after Cooldown", l.Release(), crserrors.ErrLeaseReleased)
	clock.Advance(29 * time.Second)
	wantState(t, s, "a", "resting")
	clock.Advance(time.Second)
	wantState(t, s, "a", "active")
}

func ejectionConfig(clock *fakeclock.Clock, share float64) config.Config[*worker, string] {
	cfg := healthConfig(clock)
	cfg.Ejection = config.Ejection{ConsecutiveFailures: 3, BaseTime: 10 * time.Second, MaxTime: 25 * time.Second, MaxEjectedShare: share}
	return cfg
}

// failTimes leases id (the best resource) and fails it n times.
func failTimes(t *testing.T, s *scheduler.Scheduler[*worker, string], id string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		l := mustLease(t, s)
		if l.Key() != id {
			t.Fatalf("leased %s, want %s", l.Key(), id)
		}
		if err := l.Fail(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEjectionLastsLongerEachTimeUpToTheCap(t *testing.T) {
	clock := fakeclock.New()
	s := newScheduler(t, ejectionConfig(clock, 0))
	addAll(t, s, w("a", 1), w("b", 2))
	for _, length := range []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second, 25 * time.Second} {
		failTimes(t, s, "a", 3)
		wantState(t, s, "a", "resting")
		clock.Advance(length - 1)
		wantState(t, s, "a", "resting")
		clock.Advance(1)
		wantState(t, s, "a", "active")
	}
	if st := s.Stats(); st.Ejections != 4 || st.Failures != 12 || st.EjectedResources != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSuccessResetsTheFailureCount(t *testing.T) {
	s := newScheduler(t, ejectionConfig(fakeclock.New(), 0))
	addAll(t, s, w("a", 1), w("b", 2))
	failTimes(t, s, "a", 2)
	l := mustLease(t, s)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	failTimes(t, s, "a", 2)
	wantState(t, s, "a", "active")
	failTimes(t, s, "a", 1)
	wantState(t, s, "a", "resting")
}

func TestEjectionRespectsTheShareCapAndKeepsOneAvailable(t *testing.T) {
	tests := []struct {
		name      string
		resources int
		excluded  int
		share     float64
		want      int
	}{
		{"half of four", 4, 0, 0.5, 2},
		{"at least one even when the share rounds to zero", 4, 0, 0.1, 1},
		{"never the last available", 2, 0, 1, 1},
		{"excluded resources are not available", 3, 1, 0, 1},
		{"no share cap: all but the last available", 4, 0, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScheduler(t, ejectionConfig(fakeclock.New(), tt.share))
			for i := 0; i < tt.resources; i++ {
				addAll(t, s, w(fmt.Sprint(i), i))
			}
			for i := 0; i < tt.excluded; i++ {
				if err := s.Exclude(fmt.Sprint(tt.resources - 1 - i)); err != nil {
					t.Fatal(err)
				}
			}
			// Fail every available resource three times over, best first.
			for round := 0; round < tt.resources; round++ {
				for i := 0; i < 3; i++ {
					l, err := s.Lease(bg)
					if err != nil {
						t.Fatal(err)
					}
					if err := l.Fail(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := s.Stats().EjectedResources; got != tt.want {
				t.Fatalf("%d ejected, want %d", got, tt.want)
			}
		})
	}
}

func TestRateLimitRestsUntilTheNextToken(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.RateLimit = func(*worker) (float64, int) { return 2, 3 } // 2/s, burst 3
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	for i := 0; i < 3; i++ {
		if _, err := s.Acquire(); err != nil {
			t.Fatalf("burst acquisition %d: %v", i, err)
		}
		if err := s.Release("a"); err != nil {
			t.Fatal(err)
		}
	}
	wantState(t, s, "a", "resting")
	if st := s.Stats(); st.RateLimitedResources != 1 {
		t.Fatalf("stats %+v", st)
	}
	wantErr(t, "Include of a rate-limited resource", s.Include("a"), crserrors.ErrResourceNotExcluded)
	clock.Advance(499 * time.Millisecond)
	wantState(t, s, "a", "resting")
	clock.Advance(time.Millisecond + 1)
	wantState(t, s, "a", "active")
}

func TestRateLimitAppliesToSharedAcquisitions(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.AcquirePolicy = config.Shared
	cfg.RateLimit = func(v *worker) (float64, int) { return 1, 2 }
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1), w("b", 2))
	var got []string
	for i := 0; i < 5; i++ {
		v, err := s.Acquire()
		if err != nil {
			got = append(got, "none")
			continue
		}
		got = append(got, v.ID)
	}
	if fmt.Sprint(got) != "[a a b b none]" {
		t.Fatalf("shared acquisitions %v, want [a a b b none]", got)
	}
}

func TestUpdateRetunesTheRateLimit(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.RateLimit = func(v *worker) (float64, int) { return float64(v.Capacity), 1 }
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1)) // Capacity field doubles as the rate: 1/s
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "resting")
	if err := s.Update(&worker{ID: "a", Priority: 1, Capacity: 0}); err != nil { // unlimited
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
}

// An Update can give an active resource its first rate limit, and take
// away the last one: the resource then counts tokens from the update on,
// or stops counting them.
func TestUpdateLimitsAndUnlimitsAnActiveResource(t *testing.T) {
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.RateLimit = func(v *worker) (float64, int) { return float64(v.Capacity), 1 }
	s := newScheduler(t, cfg)
	// The Capacity field doubles as the rate: 0 is unlimited, 1 is 1/s.
	addAll(t, s, &worker{ID: "a", Priority: 1, Capacity: 0})
	if err := s.Update(&worker{ID: "a", Priority: 2, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "resting") // its one token spent
	clock.Advance(time.Second + time.Millisecond)
	wantState(t, s, "a", "active")
	if err := s.Update(&worker{ID: "a", Priority: 3, Capacity: 0}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Acquire(); err != nil {
			t.Fatalf("acquisition %d after the limit was lifted: %v", i, err)
		}
		if err := s.Release("a"); err != nil {
			t.Fatal(err)
		}
		wantState(t, s, "a", "active")
	}
}

func TestHealthTransitionsAreReportedAsEvents(t *testing.T) {
	clock := fakeclock.New()
	s, rec := observed(t, ejectionConfig(clock, 0))
	addAll(t, s, w("a", 1), w("b", 2))
	if err := s.Suspend("b", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	failTimes(t, s, "a", 3)
	s.Shutdown()
	seen := map[events.EventType]int{}
	for _, e := range rec.events() {
		seen[e.Type]++
	}
	if seen[events.EventSuspend] != 1 || seen[events.EventResume] != 1 || seen[events.EventEject] != 1 {
		t.Fatalf("events %v", seen)
	}
}

// frozenClock lets workers read the fake clock and act at one instant:
// they hold the read side while acquiring or releasing and stamping the
// time, and the advancer needs the write side to move time. The stamps
// are then exactly the times the scheduler saw.
type frozenClock struct {
	*fakeclock.Clock
	mu sync.RWMutex
}

func (c *frozenClock) at(f func(now time.Time)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f(c.Now())
}

func (c *frozenClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Advance(d)
}

type handout struct {
	id       string
	acquired time.Time
	released time.Time
}

// hammer runs workers that lease and release for rounds each while the
// clock moves in steps, and returns every hand-out with exact times.
func hammer(t *testing.T, s *scheduler.Scheduler[*worker, string], clock *frozenClock, workers, rounds int, step time.Duration) []handout {
	t.Helper()
	var mu sync.Mutex
	var log []handout
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				clock.advance(step)
				runtime.Gosched()
			}
		}
	}()
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A context that has ended makes Lease take an available
			// resource or return at once: waiting while holding the
			// clock's read side would stop time.
			done, cancel := context.WithCancel(context.Background())
			cancel()
			for i := 0; i < rounds; {
				var h handout
				var l scheduler.Lease[*worker, string]
				var err error
				clock.at(func(now time.Time) {
					l, err = s.Lease(done)
					h = handout{id: l.Key(), acquired: now}
				})
				if errors.Is(err, context.Canceled) {
					runtime.Gosched() // nothing available: let time move
					continue
				}
				if err != nil {
					t.Errorf("lease: %v", err)
					return
				}
				i++
				clock.at(func(now time.Time) {
					err = l.Release()
					h.released = now
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				log = append(log, h)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	return log
}

// TestCooldownIsNeverCutShortUnderLoad checks every hand-out of every
// resource against the previous release of that resource.
func TestCooldownIsNeverCutShortUnderLoad(t *testing.T) {
	clock := &frozenClock{Clock: fakeclock.New()}
	cfg := healthConfig(clock.Clock)
	cfg.HeapCount = 2
	cfg.ReleaseCooldown = 50 * time.Millisecond
	s := newScheduler(t, cfg)
	addAll(t, s, numbered(4)...)
	log := hammer(t, s, clock, 8, 150, 7*time.Millisecond)
	byResource := map[string][]handout{}
	for _, h := range log {
		byResource[h.id] = append(byResource[h.id], h)
	}
	for id, hs := range byResource {
		sortByAcquired(hs)
		for i := 1; i < len(hs); i++ {
			if earliest := hs[i-1].released.Add(cfg.ReleaseCooldown); hs[i].acquired.Before(earliest) {
				t.Fatalf("%s handed out at %v, %v before its cooldown ended", id, hs[i].acquired, earliest.Sub(hs[i].acquired))
			}
		}
	}
	if len(log) != 8*150 {
		t.Fatalf("%d hand-outs recorded", len(log))
	}
}

// TestRateLimitHoldsInEveryWindowUnderLoad checks every window between two
// hand-outs of a resource against burst + rate x window.
func TestRateLimitHoldsInEveryWindowUnderLoad(t *testing.T) {
	const rate, burst = 20.0, 3
	clock := &frozenClock{Clock: fakeclock.New()}
	cfg := healthConfig(clock.Clock)
	cfg.HeapCount = 2
	cfg.RateLimit = func(*worker) (float64, int) { return rate, burst }
	s := newScheduler(t, cfg)
	addAll(t, s, numbered(3)...)
	log := hammer(t, s, clock, 8, 100, 3*time.Millisecond)
	byResource := map[string][]handout{}
	for _, h := range log {
		byResource[h.id] = append(byResource[h.id], h)
	}
	for id, hs := range byResource {
		sortByAcquired(hs)
		for i := range hs {
			for j := i; j < len(hs); j++ {
				window := hs[j].acquired.Sub(hs[i].acquired).Seconds()
				if count := float64(j - i + 1); count > burst+rate*window+1e-9 {
					t.Fatalf("%s: %v hand-outs in %.6fs, allowance %.3f", id, count, window, burst+rate*window)
				}
			}
		}
	}
}

func sortByAcquired(hs []handout) {
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && hs[j].acquired.Before(hs[j-1].acquired); j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
}

// TestOneTimerServesHundredThousandSuspensions checks the cost of timing:
// one clock timer, no goroutine per resource, and little memory each.
func TestOneTimerServesHundredThousandSuspensions(t *testing.T) {
	if testing.Short() {
		t.Skip("memory accounting over 100,000 resources")
	}
	const n = 100_000
	clock := fakeclock.New()
	cfg := healthConfig(clock)
	cfg.HeapCount = 8
	s := newScheduler(t, cfg)
	ws := make([]*worker, n)
	for i := range ws {
		ws[i] = w(fmt.Sprint("r", i), i)
	}
	if err := s.BatchAdd(ws); err != nil {
		t.Fatal(err)
	}
	goroutines := runtime.NumGoroutine()
	before := heapInUse()
	for i, v := range ws {
		if err := s.Suspend(v.ID, time.Duration(i+1)*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	perResource := float64(heapInUse()-before) / n
	if perResource >= 200 {
		t.Fatalf("timing costs %.0f bytes per suspended resource, want < 200", perResource)
	}
	if p := clock.Pending(); p != 1 {
		t.Fatalf("%d clock timers for %d suspensions, want 1", p, n)
	}
	if g := runtime.NumGoroutine(); g != goroutines {
		t.Fatalf("goroutines went from %d to %d", goroutines, g)
	}
	clock.Advance(n * time.Millisecond)
	if st := s.Stats(); st.ActiveResources != n {
		t.Fatalf("%d of %d back after their suspensions", st.ActiveResources, n)
	}
	t.Logf("%.1f bytes per suspended resource", perResource)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

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

// A release cooldown or a suspension that ends at the same instant as an
// ejection leaves it an ejection.
func TestARestEndingWithAnEjectionLeavesItAnEjection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cooldown time.Duration
		suspend  time.Duration
	}{{"release cooldown", 10 * time.Second, 0}, {"suspension", 0, 10 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ejectionConfig(fakeclock.New(), 0) // 10s
			cfg.ReleaseCooldown = tc.cooldown
			cfg.Capacity = func(v *worker) int { return v.Capacity }
			s := newScheduler(t, cfg)
			addAll(t, s, withCapacity("a", 1, 3), withCapacity("b", 2, 1))
			fail(t, leases(t, s, "a", 3)) // the third failure ejects a until t=10s
			if tc.suspend > 0 {
				if err := s.Suspend("a", tc.suspend); err != nil {
					t.Fatal(err)
				}
			}
			if st := s.Stats(); st.EjectedResources != 1 || st.SuspendedResources != 0 {
				t.Fatalf("%d ejected, %d suspended; want 1, 0", st.EjectedResources, st.SuspendedResources)
			}
		})
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
	if suspended := len(rec.ids(events.EventSuspend)); suspended != 1 {
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
