package scheduler_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// untilWaiters spins until n callers wait. It yields rather than sleeps,
// and gives up after a generous bound so a bug fails instead of hanging.
func untilWaiters[T any](t *testing.T, s *scheduler.Scheduler[T, string], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Waiters != n {
		if time.Now().After(deadline) {
			t.Fatalf("waiters = %d, want %d", s.Stats().Waiters, n)
		}
		runtime.Gosched()
	}
}

type result struct {
	v   *worker
	err error
}

// acquireAsync starts AcquireContext in a goroutine and returns where its
// result arrives.
func acquireAsync(ctx context.Context, s *scheduler.Scheduler[*worker, string]) <-chan result {
	out := make(chan result, 1)
	go func() {
		v, err := s.AcquireContext(ctx)
		out <- result{v, err}
	}()
	return out
}

func TestAcquireContextReturnsAtOnceWhenAvailable(t *testing.T) {
	s := newScheduler(t, baseConfig(2, config.Exclusive))
	addAll(t, s, w("a", 1))
	v, err := s.AcquireContext(context.Background())
	if err != nil || v.ID != "a" {
		t.Fatalf("AcquireContext = %v, %v", v, err)
	}
	if st := s.Stats(); st.Waits != 0 {
		t.Fatalf("an immediate acquisition counted as a wait: %+v", st)
	}
}

func TestWaitersAreServedInArrivalOrder(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Exclusive))
	addAll(t, s, w("only", 1))
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	var results []<-chan result
	for i := 0; i < 5; i++ {
		results = append(results, acquireAsync(context.Background(), s))
		untilWaiters(t, s, i+1)
	}
	for i, r := range results {
		if err := s.Release("only"); err != nil {
			t.Fatal(err)
		}
		got := <-r
		if got.err != nil || got.v.ID != "only" {
			t.Fatalf("waiter %d: %v, %v", i, got.v, got.err)
		}
		for j := i + 1; j < len(results); j++ {
			select {
			case <-results[j]:
				t.Fatalf("waiter %d served before waiter %d", j, i)
			default:
			}
		}
	}
	if st := s.Stats(); st.Waits != 5 || st.Waiters != 0 || st.WaitTime <= 0 || st.WaitHistogram.Total() != 5 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWaiterIsWokenByEveryWayAResourceArrives(t *testing.T) {
	arrivals := map[string]func(s *scheduler.Scheduler[*worker, string]) error{
		"release": func(s *scheduler.Scheduler[*worker, string]) error { return s.Release("held") },
		"include": func(s *scheduler.Scheduler[*worker, string]) error { return s.Include("excluded") },
		"add":     func(s *scheduler.Scheduler[*worker, string]) error { return s.Add(w("new", 5)) },
		"batch add": func(s *scheduler.Scheduler[*worker, string]) error {
			return s.BatchAdd([]*worker{w("b1", 5), w("b2", 6)})
		},
		"update raising capacity": func(s *scheduler.Scheduler[*worker, string]) error {
			return s.Update(&worker{ID: "held", Priority: 1, Capacity: 2})
		},
	}
	for name, arrive := range arrivals {
		t.Run(name, func(t *testing.T) {
			cfg := baseConfig(4, config.Exclusive)
			cfg.Capacity = func(v *worker) int { return v.Capacity }
			s := newScheduler(t, cfg)
			addAll(t, s, w("held", 1), w("excluded", 2))
			if err := s.Exclude("excluded"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Acquire(); err != nil {
				t.Fatal(err)
			}
			r := acquireAsync(context.Background(), s)
			untilWaiters(t, s, 1)
			if err := arrive(s); err != nil {
				t.Fatal(err)
			}
			if got := <-r; got.err != nil {
				t.Fatal(got.err)
			}
		})
	}
}

// A batch of two serves two of three waiters and the third waits for a
// release. Which two: the first two in the queue, unless a waiter had
// queued but not yet committed when the batch came (Stats counts it all
// the same), which a GlobalOrder batch tells to search again (see
// Queue.PopCommitted), sending it behind the others.
func TestABatchSmallerThanTheQueueServesWhatItHasAndTheRestWait(t *testing.T) {
	for _, order := range []config.Ordering{config.ShardOrder, config.GlobalOrder} {
		t.Run(order.String(), func(t *testing.T) {
			cfg := baseConfig(2, config.Exclusive)
			cfg.Ordering = order
			s := newScheduler(t, cfg)
			results := make(chan result, 3)
			for i := range 3 {
				r := acquireAsync(context.Background(), s)
				go func() { results <- <-r }()
				untilWaiters(t, s, i+1)
			}
			if err := s.BatchAdd([]*worker{w("b1", 5), w("b2", 6)}); err != nil {
				t.Fatal(err)
			}
			served := map[string]bool{}
			for range 2 {
				got := <-results
				if got.err != nil {
					t.Fatal(got.err)
				}
				served[got.v.ID] = true
			}
			if !served["b1"] || !served["b2"] {
				t.Fatalf("two waiters got %v, want b1 and b2", served)
			}
			// The third waits (it may be searching again, out of the
			// queue for a moment, before it queues behind the others).
			untilWaiters(t, s, 1)
			if err := s.Release("b2"); err != nil {
				t.Fatal(err)
			}
			if got := <-results; got.err != nil || got.v.ID != "b2" {
				t.Fatalf("the last waiter got %v, %v; want b2", got.v, got.err)
			}
		})
	}
}

func TestSharedWaitersWaitOnlyWhileNothingIsActive(t *testing.T) {
	s := newScheduler(t, baseConfig(2, config.Shared))
	var results []<-chan result
	for i := 0; i < 3; i++ {
		results = append(results, acquireAsync(context.Background(), s))
	}
	untilWaiters(t, s, 3)
	addAll(t, s, w("a", 1))
	for _, r := range results {
		if got := <-r; got.err != nil || got.v.ID != "a" {
			t.Fatalf("%v, %v", got.v, got.err)
		}
	}
	wantState(t, s, "a", "active")
}

func TestCancelledWaitReturnsContextErrorAndLeavesTheQueue(t *testing.T) {
	s := newScheduler(t, baseConfig(2, config.Exclusive))
	ctx, cancel := context.WithCancel(context.Background())
	r := acquireAsync(ctx, s)
	untilWaiters(t, s, 1)
	cancel()
	got := <-r
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", got.err)
	}
	if st := s.Stats(); st.Waiters != 0 || st.CancelledWaits != 1 || st.Waits != 1 {
		t.Fatalf("stats %+v", st)
	}
	// The queue slot is gone: a new resource stays in the pool.
	addAll(t, s, w("a", 1))
	wantState(t, s, "a", "active")
}

func TestExpiredContextStillGetsAnAvailableResource(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.AcquireContext(ctx); err != nil {
		t.Fatalf("nothing to wait for, yet %v", err)
	}
}

func TestShutdownWakesEveryWaiter(t *testing.T) {
	s, err := scheduler.New(baseConfig(2, config.Exclusive))
	if err != nil {
		t.Fatal(err)
	}
	var results []<-chan result
	for i := 0; i < 4; i++ {
		results = append(results, acquireAsync(context.Background(), s))
	}
	untilWaiters(t, s, 4)
	s.Shutdown()
	for _, r := range results {
		wantErr(t, "waiter at Shutdown", (<-r).err, crserrors.ErrSchedulerClosed)
	}
	_, err = s.AcquireContext(context.Background())
	wantErr(t, "AcquireContext after Shutdown", err, crserrors.ErrSchedulerClosed)
}

// TestCancellationRacingHandOffLosesNothing cancels waiters at the same
// moment resources are released to them. Whichever wins, every resource
// must end up either with a caller that got it or back in the pool.
func TestCancellationRacingHandOffLosesNothing(t *testing.T) {
	for round := 0; round < 300; round++ {
		s := newScheduler(t, baseConfig(2, config.Exclusive))
		addAll(t, s, w("a", 1))
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := acquireAsync(ctx, s)
		untilWaiters(t, s, 1)
		together(cancel, func() {
			if err := s.Release("a"); err != nil {
				t.Error(err)
			}
		})
		got := <-r
		switch {
		case got.err == nil:
			wantState(t, s, "a", "held")
		case errors.Is(got.err, context.Canceled):
			wantState(t, s, "a", "active")
		default:
			t.Fatal(got.err)
		}
		mustInvariants(t, s)
	}
}

func TestAcquireByAffinityContextWaitsToo(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Exclusive))
	out := make(chan result, 1)
	go func() {
		v, err := s.AcquireByAffinityContext(context.Background(), userID("u1"))
		out <- result{v, err}
	}()
	untilWaiters(t, s, 1)
	addAll(t, s, w("a", 1))
	if got := <-out; got.err != nil || got.v.ID != "a" {
		t.Fatalf("%v, %v", got.v, got.err)
	}
	_, err := s.AcquireByAffinityContext(context.Background(), nil)
	wantErr(t, "nil identifier", err, crserrors.ErrNilAffinityIdentifier)
}

// TestStressWaitersNeverSeeAnIdleResource runs many waiting callers over a
// few resources, some with contexts that end, and checks at the end that
// every resource is back, nobody waits, and no acquisition overlapped.
func TestStressWaitersNeverSeeAnIdleResource(t *testing.T) {
	const goroutines, rounds = 32, 300
	cfg := baseConfig(2, config.Exclusive)
	s := newScheduler(t, cfg)
	addAll(t, s, numbered(3)...)
	inUse := make([]int32, 3)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				if (g+i)%7 == 0 {
					cancel() // some arrive already cancelled
				}
				v, err := s.AcquireContext(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Error(err)
						return
					}
					continue
				}
				k := v.Priority
				mu.Lock()
				inUse[k]++
				over := inUse[k] > 1
				mu.Unlock()
				if over {
					t.Errorf("%s held twice", v.ID)
				}
				mu.Lock()
				inUse[k]--
				mu.Unlock()
				if err := s.Release(v.ID); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	st := s.Stats()
	if st.ActiveResources != 3 || st.Waiters != 0 || st.Holders != 0 {
		t.Fatalf("after the run: %+v", st)
	}
	mustInvariants(t, s)
	t.Logf("%d waits, %d cancelled", st.Waits, st.CancelledWaits)
}
