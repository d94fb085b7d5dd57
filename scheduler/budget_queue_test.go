package scheduler_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// A queued waiter whose cost an Update puts above every resource's Max
// can never be served: it must fail with ErrCostExceedsLimits rather than
// wait forever, and, first in a strict FIFO queue, block every caller
// behind it.
func TestAWaiterWhoseCostAnUpdateMakesUncoverableFailsAndFreesTheQueue(t *testing.T) {
	clock := fakeclock.New()
	s := newKeyPool(t, clock, config.Shared, 1, &apiKey{ID: "a", TPM: 600})
	l := leaseNow(t, s, tokens(600))
	l.Release()
	big := leaseLater(context.Background(), s, tokens(500))
	untilWaiters(t, s, 1)
	small := leaseLater(context.Background(), s, tokens(1))
	untilWaiters(t, s, 2)
	if err := s.Update(&apiKey{ID: "a", TPM: 60}); err != nil { // Max 60 < 500
		t.Fatal(err)
	}
	clock.Advance(time.Hour) // the bucket is full again: 60 tokens
	select {
	case err := <-big:
		if !errors.Is(err, crserrors.ErrCostExceedsLimits) {
			t.Fatalf("big waiter: %v, want ErrCostExceedsLimits", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the waiter for 500 tokens still waits, for a key of Max 60; waiters %d", s.Stats().Waiters)
	}
	select {
	case err := <-small:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter for 1 token, which the key covers, is never served")
	}
}

// An Update that leaves a resource's limits as they were must not make a
// concurrent Lease fail with ErrCostExceedsLimits: the cost fits the
// resource all along.
func TestAnUpdateKeepingTheLimitsNeverFailsALeaseWithCostExceedsLimits(t *testing.T) {
	s := newKeyPool(t, nil, config.Shared, 1, &apiKey{ID: "a", TPM: 100}, &apiKey{ID: "small", TPM: 10})
	l := leaseNow(t, s, tokens(100)) // drained for a minute: every Lease below searches in vain
	defer l.Release()
	if l.Value().ID != "a" {
		t.Fatalf("drained %s, want a", l.Value().ID)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for p := 0; ; p++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Update(&apiKey{ID: "a", Priority: p % 2, TPM: 100}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 200; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.Lease(ctx, tokens(50))
		if errors.Is(err, crserrors.ErrCostExceedsLimits) {
			t.Fatalf("lease %d: %v, though the key's Max of 100 covers 50 throughout", i, err)
		}
	}
}

// A queued waiter whose cost a Remove or an Update in one shard puts
// above every resource's Max fails at once, found by the resources of the
// other shards: the changed shard has nothing active to serve it with.
func TestAWaiterMadeUncoverableInAnotherShardFailsAtOnce(t *testing.T) {
	for name, change := range map[string]func(s *scheduler.Scheduler[*apiKey, string]) error{
		"Remove": func(s *scheduler.Scheduler[*apiKey, string]) error { return s.Remove("a") },
		"Update": func(s *scheduler.Scheduler[*apiKey, string]) error { return s.Update(&apiKey{ID: "a", TPM: 500}) },
	} {
		t.Run(name, func(t *testing.T) {
			clock := fakeclock.New()
			s := newKeyPool(t, clock, config.Shared, 2, &apiKey{ID: "a", TPM: 1000}, &apiKey{ID: "b", Priority: 1, TPM: 100})
			l := leaseNow(t, s, tokens(1000)) // a, which then rests
			l.Release()
			big := leaseLater(context.Background(), s, tokens(800))
			untilWaiters(t, s, 1)
			if err := change(s); err != nil {
				t.Fatal(err)
			}
			clock.Advance(0) // the kick runs on the timer
			untilWaiters(t, s, 0)
			wantErr(t, "the waiter for 800 tokens", <-big, crserrors.ErrCostExceedsLimits)
		})
	}
}
