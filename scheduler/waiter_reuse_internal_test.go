package scheduler

import (
	"cmp"
	"context"
	"errors"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/waiting"
)

// newExclusive returns an exclusive scheduler of prio values holding
// resource "a", which the caller has acquired: the next caller waits.
func newExclusive(t *testing.T) *Scheduler[*prio, string] {
	t.Helper()
	s, err := New(config.Config[*prio, string]{
		HeapCount:     2,
		AcquirePolicy: config.Exclusive,
		Comparator:    func(a, b *prio) int { return cmp.Compare(a.p, b.p) },
		KeyFunc:       func(v *prio) string { return v.key },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	if err := s.Add(&prio{"a", 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Waiters are reused, each with its channel. A waiter served at the
// instant its context ends (the hook, run by the waiter once it has
// committed to waiting, releases the resource, which serves it, then
// cancels) returns the resource, so nothing is lost; the next caller,
// most likely handed the same waiter again, waits with an empty channel
// and, cancelled with nothing released, returns the context's error, not
// a grant left over from before. Each round has one outcome whatever the
// scheduling: the grant is in the channel before the select begins.
func TestAReusedWaiterNeverDeliversAStaleGrant(t *testing.T) {
	s := newExclusive(t)
	for round := range 50 {
		served, cancelServed := context.WithCancel(context.Background())
		s.room.Hook = func(at waiting.Step) {
			if at == waiting.Committed {
				if err := s.Release("a"); err != nil {
					t.Error(err)
				}
				cancelServed()
			}
		}
		v, err := s.AcquireContext(served)
		if err != nil || v == nil || v.key != "a" {
			t.Fatalf("round %d: served as its context ended: %v, %v; want a, nil", round, v, err)
		}
		cancelled, cancel := context.WithCancel(context.Background())
		s.room.Hook = func(at waiting.Step) {
			if at == waiting.Committed {
				cancel()
			}
		}
		if v, err := s.AcquireContext(cancelled); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: cancelled with nothing released: %v, %v; want context.Canceled", round, v, err)
		}
		s.room.Hook = nil
		if st := s.Stats(); st.Waiters != 0 || st.ActiveResources != 0 || st.HeldResources != 1 {
			t.Fatalf("round %d: %d waiting, %d active, %d inactive; want a held and nobody waiting", round, st.Waiters, st.ActiveResources, st.HeldResources)
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// A cancelled waiter that has left the queue is not served: the resource
// released after goes to the next waiter, or back to the heap.
func TestAResourceReleasedAfterACancelGoesOn(t *testing.T) {
	s := newExclusive(t)
	cancelled, cancel := context.WithCancel(context.Background())
	s.room.Hook = func(at waiting.Step) {
		if at == waiting.Committed {
			cancel()
		}
	}
	if _, err := s.AcquireContext(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v; want context.Canceled", err)
	}
	s.room.Hook = nil
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.ActiveResources != 1 || st.Waiters != 0 {
		t.Fatalf("after the release: %d active, %d waiting; want a back in the heap", st.ActiveResources, st.Waiters)
	}
	if v, err := s.Acquire(); err != nil || v.key != "a" {
		t.Fatalf("Acquire after the release: %v, %v", v, err)
	}
}

// A waiting acquisition allocates at most once (the waiter and its
// channel, when no waiter is free for reuse); served again and again, it
// reuses the same one. The waiter runs in a goroutine of its own, which
// the hook reports committed; the release that serves it is made here.
func TestAWaitingAcquisitionAllocatesAtMostOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	s := newExclusive(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	committed := make(chan struct{}, 1)
	s.room.Hook = func(at waiting.Step) {
		if at == waiting.Committed {
			committed <- struct{}{}
		}
	}
	start, got := make(chan struct{}), make(chan error, 1)
	go func() {
		for range start {
			_, err := s.AcquireContext(ctx)
			got <- err
		}
	}()
	defer close(start)
	allocs := testing.AllocsPerRun(200, func() {
		start <- struct{}{}
		<-committed
		if err := s.Release("a"); err != nil { // serves the waiter
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("a waiting acquisition: %.2f allocations, want at most 1", allocs)
	}
}

// So does a waiting Lease: the same waiter, asking for a lease.
func TestAWaitingLeaseAllocatesAtMostOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	s := newExclusive(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	committed := make(chan struct{}, 1)
	s.room.Hook = func(at waiting.Step) {
		if at == waiting.Committed {
			committed <- struct{}{}
		}
	}
	start, got := make(chan struct{}), make(chan Lease[*prio, string], 1)
	go func() {
		for range start {
			l, err := s.Lease(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}
	}()
	defer close(start)
	if err := s.Release("a"); err != nil { // the hold newExclusive took
		t.Fatal(err)
	}
	held, err := s.Lease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		start <- struct{}{}
		<-committed
		if err := held.Release(); err != nil { // serves the waiter
			t.Fatal(err)
		}
		held = <-got
	})
	if allocs > 1 {
		t.Errorf("a waiting Lease: %.2f allocations, want at most 1", allocs)
	}
}
