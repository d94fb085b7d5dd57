package scheduler_test

import (
	"cmp"
	"context"
	"runtime"
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

// expiries is an observer that reports each expired lease on a channel.
type expiries chan string

func (e expiries) OnEvent(ev events.Event[string]) {
	if ev.Type == events.EventExpire {
		e <- ev.ID
	}
}

// A comparator that panics on the scheduler's own timer, while a lease
// that passed its deadline goes back into the heap, must not crash the
// process: the reclaim is undone, the panic counted, and the lease still
// ends once the comparator stops panicking. The clock is the real one, so
// the timer runs on a goroutine of the runtime's, where an unrecovered
// panic ends the test binary.
func TestAComparatorPanicAtALeaseExpiryOnTheRealClockIsRecovered(t *testing.T) {
	tr := &trap{}
	tr.disarm()
	expired := make(expiries, 1)
	cfg := baseConfig(1, config.Exclusive)
	cfg.Comparator = tr.compare
	cfg.LeaseTTL = time.Millisecond
	cfg.Observers = []events.Observer[string]{expired}
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1), w("b", 2))
	l, err := s.Lease(context.Background())
	if err != nil || l.Key() != "a" {
		t.Fatalf("Lease = %v, %v; want a", l.Key(), err)
	}
	// Putting a back beside b is the expiry's one comparison.
	tr.arm(1)
	select {
	case id := <-expired:
		if id != "a" {
			t.Fatalf("expired %q, want a", id)
		}
	case <-time.After(10 * time.Second): // liveness bound only
		t.Fatal("the lease never expired after the comparator panicked")
	}
	if tr.armed() {
		t.Fatal("the comparator did not panic: the test misses its target")
	}
	if got := s.Stats().ComparatorPanics; got != 1 {
		t.Fatalf("ComparatorPanics = %d, want 1", got)
	}
	wantErr(t, "Release of the expired lease", l.Release(), crserrors.ErrLeaseExpired)
	mustInvariants(t, s)
}

// On a fake clock the timer runs inside Advance. A comparator panic there
// is recovered before it reaches Advance, for the end of a lease and of a
// rest alike; the step is undone and comes due again, so the resource is
// back once the comparator stops panicking; an undone expiry is not
// counted, so the lease expires once.
func TestAComparatorPanicOnTheTimerIsUndoneAndRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   func(*testing.T, *scheduler.Scheduler[*worker, string])
		undone  string // a's state while the comparator panics
		expired uint64 // Stats.ExpiredLeases once it stops
	}{
		{"lease expiry", func(t *testing.T, s *scheduler.Scheduler[*worker, string]) {
			if _, err := s.Lease(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, "held", 1},
		{"end of a suspension", func(t *testing.T, s *scheduler.Scheduler[*worker, string]) {
			if err := s.Suspend("a", time.Second); err != nil {
				t.Fatal(err)
			}
		}, "resting", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &trap{}
			tr.disarm()
			clock := fakeclock.New()
			cfg := baseConfig(1, config.Exclusive)
			cfg.Comparator = tr.compare
			cfg.Clock = clock
			cfg.LeaseTTL = time.Second
			s := newScheduler(t, cfg)
			addAll(t, s, w("a", 1), w("b", 2))
			tc.start(t, s)
			tr.arm(1)
			if p, _ := callCatching(func() error { clock.Advance(time.Second); return nil }); p != nil {
				t.Fatalf("the timer's panic reached Advance: %v", p)
			}
			if tr.armed() {
				t.Fatal("the comparator did not panic: the test misses its target")
			}
			if got := s.Stats().ComparatorPanics; got != 1 {
				t.Fatalf("ComparatorPanics = %d, want 1", got)
			}
			wantState(t, s, "a", tc.undone)
			clock.Advance(time.Second)
			wantState(t, s, "a", "active")
			if got := s.Stats().ExpiredLeases; got != tc.expired {
				t.Fatalf("ExpiredLeases = %d, want %d", got, tc.expired)
			}
			mustInvariants(t, s)
		})
	}
}

// A release that hands the freed slot to a waiter has taken effect before
// the comparator runs for the waiter. A panic there is recovered and
// counted, not sent to the caller: its release succeeded, and a caller
// told otherwise would release again and free someone else's slot. The
// next operation on the shard serves the waiter; a repeated Release(id)
// is one, and finds the slot the waiter's and leaves it alone.
func TestAReleaseWhoseHandOverPanicsSucceeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hold    func(*testing.T, *scheduler.Scheduler[*apiKey, string]) func() error
		again   error
		release string
	}{
		{"Release(id)", func(t *testing.T, s *scheduler.Scheduler[*apiKey, string]) func() error {
			if v, err := s.Acquire(); err != nil || v.ID != "a" {
				t.Fatalf("Acquire = %v, %v; want a", v, err)
			}
			return func() error { return s.Release("a") }
		}, crserrors.ErrResourceLeased, "Release(id)"},
		{"Lease.Release", func(t *testing.T, s *scheduler.Scheduler[*apiKey, string]) func() error {
			l := leaseNow(t, s)
			if l.Key() != "a" {
				t.Fatalf("leased %q, want a", l.Key())
			}
			return l.Release
		}, crserrors.ErrLeaseReleased, "Lease.Release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var boom atomic.Bool
			s := newKeyPoolWith(t, config.Config[*apiKey, string]{
				HeapCount:     2,
				AcquirePolicy: config.Exclusive,
				Ordering:      config.GlobalOrder,
				Clock:         fakeclock.New(),
				Comparator: func(x, y *apiKey) int {
					if boom.Load() {
						panic("boom")
					}
					return x.Priority - y.Priority
				},
			}, &apiKey{ID: "a", Priority: 1, TPM: 10}, &apiKey{ID: "b", Priority: 2, TPM: 10})
			release := tc.hold(t, s)
			// b, in the other shard, keeps 2 tokens: too few for the
			// waiter, which waits for a.
			l := leaseNow(t, s, tokens(8))
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			waiter := leaseLater(context.Background(), s, tokens(5))
			untilWaiters(t, s, 1)
			// Handing a over, under GlobalOrder, compares it with b.
			boom.Store(true)
			p, err := callCatching(release)
			boom.Store(false)
			if p != nil {
				t.Fatalf("%s panicked after the release took effect: %v", tc.release, p)
			}
			if err != nil {
				t.Fatalf("%s = %v, want nil: the release took effect", tc.release, err)
			}
			if got := s.Stats().ComparatorPanics; got != 1 {
				t.Fatalf("ComparatorPanics = %d, want 1: the hand-over did not panic", got)
			}
			wantErr(t, tc.release+" again", release(), tc.again)
			if _, err := s.Get("a"); err != nil { // an operation on a's shard
				t.Fatal(err)
			}
			if err := <-waiter; err != nil {
				t.Fatalf("the waiter got %v, want a", err)
			}
		})
	}
}

// stackTrap is a comparator that panics once, at the first comparison made
// while a function whose name contains where is on the stack.
type stackTrap struct {
	where atomic.Pointer[string]
	fired atomic.Bool
}

func (st *stackTrap) arm(where string) { st.fired.Store(false); st.where.Store(&where) }

func (st *stackTrap) compare(a, b *worker) int {
	if w := st.where.Load(); w != nil {
		pcs := make([]uintptr, 64)
		frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
		for {
			f, more := frames.Next()
			if strings.Contains(f.Function, *w) {
				st.where.Store(nil)
				st.fired.Store(true)
				panic("comparator trap")
			}
			if !more {
				break
			}
		}
	}
	return cmp.Compare(a.Priority, b.Priority)
}

// Under GlobalOrder a batch serves its waiter from the shard with the best
// top. A panic while it takes the hold there undoes the hold, and the
// batch is in: every shard the batch went into may now hold a resource the
// waiter should have had, so the next operation on any of them serves it.
func TestAPanicServingABatchLeavesEveryShardOfItToServeTheWaiter(t *testing.T) {
	st := &stackTrap{}
	cfg := baseConfig(2, config.Exclusive)
	cfg.Ordering = config.GlobalOrder
	cfg.Comparator = st.compare
	s := newScheduler(t, cfg)
	r := acquireAsync(context.Background(), s)
	untilWaiters(t, s, 1)
	// In rotation x, z and v go to shard 0, y and u to shard 1. The hold
	// on x, the best, sifts shard 0's heap as x leaves it.
	st.arm("eactivate")
	p, err := callCatching(func() error {
		return s.BatchAdd([]*worker{w("x", 1), w("y", 2), w("z", 3), w("u", 4), w("v", 5)})
	})
	if p != nil || err != nil || !st.fired.Load() {
		t.Fatalf("BatchAdd = %v, panic %v, comparator panicked %v; want nil, none, true", err, p, st.fired.Load())
	}
	if got := s.Stats().Waiters; got != 1 {
		t.Fatalf("waiters = %d, want 1: the hand-over was undone", got)
	}
	if _, err := s.Get("y"); err != nil { // an operation on shard 1, where y and u are free
		t.Fatal(err)
	}
	select {
	case got := <-r:
		if got.err != nil {
			t.Fatal(got.err)
		}
	case <-time.After(10 * time.Second): // liveness bound only
		t.Fatal("the waiter still waits after an operation on shard 1, whose y and u are free")
	}
}
