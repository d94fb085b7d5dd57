package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// newPanickingKeyPool is a shared pool of one shard whose comparator, by
// priority, panics while boom is set.
func newPanickingKeyPool(t *testing.T, boom *atomic.Bool, keys ...*apiKey) *scheduler.Scheduler[*apiKey, string] {
	t.Helper()
	return newKeyPoolWith(t, config.Config[*apiKey, string]{
		HeapCount:     1,
		AcquirePolicy: config.Shared,
		Clock:         fakeclock.New(),
		Comparator: func(a, b *apiKey) int {
			if boom.Load() {
				panic("boom")
			}
			return a.Priority - b.Priority
		},
	}, keys...)
}

// A comparator that panics in Settle leaves the budgets and the lease's
// settled cost as they were, and the scheduler usable.
func TestAComparatorPanicInSettleChangesNothing(t *testing.T) {
	var boom atomic.Bool
	s := newPanickingKeyPool(t, &boom, &apiKey{ID: "a", TPM: 1000}, &apiKey{ID: "b", TPM: 1000}, &apiKey{ID: "c", TPM: 1000})
	l := leaseNow(t, s, tokens(400))
	id := l.Value().ID
	before, _ := s.Remaining(id)
	func() {
		defer func() {
			if recover() == nil {
				t.Log("no panic")
			}
		}()
		boom.Store(true)
		defer boom.Store(false)
		l.Settle(config.Cost{"tokens": 100})
	}()
	after, _ := s.Remaining(id)
	if after["tokens"] != before["tokens"] {
		t.Fatalf("a panicking Settle changed the budget: %v, was %v", after, before)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	// The record still holds the estimate: settling 100 now refunds 300.
	if err := l.Settle(config.Cost{"tokens": 100}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Remaining(id); got["tokens"] != before["tokens"]+300 {
		t.Fatalf("after a settlement of 100 on an estimate of 400: %v, want %d", got, before["tokens"]+300)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A comparator that panics while a lease with a cost takes its resource
// gives the cost back: no budget is spent by a lease that never began.
func TestAComparatorPanicInALeaseRefundsItsCost(t *testing.T) {
	var boom atomic.Bool
	s := newPanickingKeyPool(t, &boom, &apiKey{ID: "a", TPM: 1000}, &apiKey{ID: "b", TPM: 1000, Priority: 1}, &apiKey{ID: "c", TPM: 1000, Priority: 2})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the comparator was not called: the test proves nothing")
			}
		}()
		boom.Store(true)
		defer boom.Store(false)
		_, _ = s.Lease(context.Background(), tokens(400))
	}()
	for _, id := range []string{"a", "b", "c"} {
		wantRemaining(t, s, id, map[string]int64{"tokens": 1000})
	}
	if st := s.Stats(); st.Holders != 0 {
		t.Fatalf("a panicked lease left %d holders", st.Holders)
	}
}
