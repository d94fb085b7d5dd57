package scheduler

import (
	"cmp"
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/internal/waiting"
)

// Stats.LimitWaits counts the waits that began while a resource with a
// free slot was kept from the oldest waiter by its limits alone: not
// those that only a full resource kept waiting.

// waitPool is a pool of one key of capacity 1 and tpm tokens a minute
// (none for tpm 0, rpm requests a second through RateLimit if set), on a
// fake clock. The returned counter counts the callers committed to
// waiting.
func waitPool(t *testing.T, policy config.AcquirePolicy, tpm int64, rps float64) (*Scheduler[*rkey, string], *fakeclock.Clock, *atomic.Int32) {
	t.Helper()
	clock := fakeclock.New()
	cfg := config.Config[*rkey, string]{
		HeapCount:     1,
		AcquirePolicy: policy,
		Comparator:    func(a, b *rkey) int { return cmp.Compare(a.id, b.id) },
		KeyFunc:       func(k *rkey) string { return k.id },
		Clock:         clock,
	}
	if tpm != 0 {
		cfg.Limits = func(k *rkey) []config.Limit {
			return []config.Limit{{Name: "tokens", Max: k.tpm, Per: time.Minute}}
		}
	}
	if rps != 0 {
		cfg.RateLimit = func(*rkey) (float64, int) { return rps, 1 }
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.CheckInvariants(); err != nil {
			t.Errorf("invariants at end of test: %v", err)
		}
		s.Shutdown()
	})
	var commits atomic.Int32
	s.setHooks(hooks{waiting: func(at waiting.Step) {
		if at == waiting.Committed {
			commits.Add(1)
		}
	}})
	if err := s.Add(&rkey{id: "k", tpm: tpm}); err != nil {
		t.Fatal(err)
	}
	return s, clock, &commits
}

// waitFor starts a caller that leases with cost and releases at once,
// and returns once it has committed to waiting (the n-th to do so).
func waitFor(t *testing.T, s *Scheduler[*rkey, string], cost config.Cost, commits *atomic.Int32, n int32) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var opts []LeaseOption
		if cost != nil {
			opts = append(opts, WithCost(cost))
		}
		l, err := s.Lease(context.Background(), opts...)
		if err == nil {
			err = l.Release()
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for commits.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d callers committed to waiting, want %d", commits.Load(), n)
		}
		runtime.Gosched()
	}
	return done
}

func wantServed(t *testing.T, done ...<-chan error) {
	t.Helper()
	for _, d := range done {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
}

func wantLimitWaits(t *testing.T, s *Scheduler[*rkey, string], waits, limitWaits uint64) {
	t.Helper()
	if st := s.Stats(); st.Waits != waits || st.LimitWaits != limitWaits {
		t.Fatalf("Waits = %d, LimitWaits = %d; want %d and %d", st.Waits, st.LimitWaits, waits, limitWaits)
	}
}

func TestLimitWaitsLeavesOutAWaitForAFullResourceOutOfBudget(t *testing.T) {
	s, clock, commits := waitPool(t, config.Exclusive, 1000, 0)
	l, err := s.Lease(context.Background(), WithCost(config.Cost{"tokens": 1000}))
	if err != nil {
		t.Fatal(err)
	}
	// k's only slot is held, and its bucket is empty: a caller would
	// wait for the slot without limits too.
	a := waitFor(t, s, config.Cost{"tokens": 10}, commits, 1)
	b := waitFor(t, s, config.Cost{"tokens": 10}, commits, 2)
	clock.Advance(time.Minute) // the bucket is full; the slot still held
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantServed(t, a, b)
	wantLimitWaits(t, s, 2, 0)
}

func TestLimitWaitsCountsEveryWaiterBehindAResourceOutOfBudget(t *testing.T) {
	for _, policy := range []config.AcquirePolicy{config.Shared, config.Exclusive} {
		t.Run(policy.String(), func(t *testing.T) {
			s, clock, commits := waitPool(t, policy, 1000, 0)
			l, err := s.Lease(context.Background(), WithCost(config.Cost{"tokens": 1000}))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			// k has its slot free and no tokens: both wait for the
			// refill, the second behind the first.
			a := waitFor(t, s, config.Cost{"tokens": 10}, commits, 1)
			b := waitFor(t, s, config.Cost{"tokens": 10}, commits, 2)
			clock.Advance(time.Minute)
			wantServed(t, a, b)
			wantLimitWaits(t, s, 2, 2)
		})
	}
}

func TestLimitWaitsCountsAWaitForARateLimit(t *testing.T) {
	s, clock, commits := waitPool(t, config.Exclusive, 0, 1)
	l, err := s.Lease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	a := waitFor(t, s, nil, commits, 1) // k is free, its token spent
	clock.Advance(time.Second)
	wantServed(t, a)
	wantLimitWaits(t, s, 1, 1)
}

func TestLimitWaitsLeavesOutAWaitForARateLimitedResourceThatIsFull(t *testing.T) {
	s, clock, commits := waitPool(t, config.Exclusive, 0, 1)
	l, err := s.Lease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a := waitFor(t, s, nil, commits, 1) // k is held, its token spent
	clock.Advance(time.Second)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	wantServed(t, a)
	wantLimitWaits(t, s, 1, 0)
}
