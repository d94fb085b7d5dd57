package scheduler_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// pause is a comparator that, once armed, stops in its next call until
// released: a way to hold an operation inside its shard's critical
// section without timing.
type pause struct {
	armed   atomic.Bool
	skip    atomic.Int32 // calls to let through once armed, before stopping
	inside  chan struct{}
	proceed chan struct{}
}

func newPause() *pause { return &pause{inside: make(chan struct{}), proceed: make(chan struct{})} }

// reached waits until op stops in the comparator, or fails t if op
// returns first (a change that never reaches the call the test stops at).
func (p *pause) reached(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case <-p.inside:
	case err := <-done:
		p.armed.Store(false) // let the test's cleanup compare
		t.Fatalf("the operation returned (%v) without reaching the comparator call to stop at", err)
	}
}

func (p *pause) compare(a, b *worker) int {
	if p.armed.Load() && p.skip.Add(-1) < 0 && p.armed.CompareAndSwap(true, false) {
		close(p.inside)
		<-p.proceed
	}
	return byPriority(a, b)
}

// While an operation that changes a shard's top together with the count
// Len reads is in progress, a reader without the lock must find the
// shard busy (and wait), so that it never sees the change in part.
func TestChangesInProgressAreInvisibleToLockFreeReaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy config.AcquirePolicy
		op     func(*scheduler.Scheduler[*worker, string]) error
	}{
		{name: "Remove", policy: config.Exclusive,
			op: func(s *scheduler.Scheduler[*worker, string]) error { return s.Remove("a") }},
		{name: "Add", policy: config.Shared,
			op: func(s *scheduler.Scheduler[*worker, string]) error { return s.Add(w("h", -1)) }},
		{name: "BatchAdd", policy: config.Exclusive, op: func(s *scheduler.Scheduler[*worker, string]) error {
			return s.BatchAdd([]*worker{w("h", -1), w("i", 5)})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := pausedSeven(t, tc.policy)
			if s.Busy(0) {
				t.Fatal("busy with no change in progress")
			}
			p.armed.Store(true)
			done := make(chan error)
			go func() { done <- tc.op(s) }()
			p.reached(t, done)
			if !s.Busy(0) {
				t.Errorf("%s paused in the comparator, yet a lock-free reader would read the shard", tc.name)
			}
			close(p.proceed)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if s.Busy(0) {
				t.Fatalf("still busy after %s returned", tc.name)
			}
		})
	}
}

// An Update changes no count, only a value and perhaps the top, and makes
// each visible to readers without the lock in one store once the heap is
// in order (the new top's value, then the top). So while it is in
// progress such readers need not wait: they read the top as it was, with
// the value it had.
func TestAnUpdateInProgressLeavesLockFreeReadersTheTopAsItWas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		skip     int32 // comparator calls to let through before stopping
		update   *worker
		lease    bool // a lease on a first, so that a goes after its equals
		then     string
		priority int
	}{
		{name: "Update of the top", update: w("a", 35), then: "b", priority: 10},
		// f sits two levels below the top, so that the sift lifting it
		// compares twice; the test stops it at the second call, mid-sift.
		{name: "Update to the top", skip: 1, update: w("f", -1), then: "f", priority: -1},
		{name: "Update to a tie with a top that has more holders", skip: 1, lease: true,
			update: w("f", 0), then: "f", priority: 0},
		{name: "Update of the top that keeps it the top", update: w("a", 5), then: "a", priority: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := pausedSeven(t, config.Shared)
			if tc.lease {
				if l, err := s.Lease(context.Background()); err != nil || l.Value().ID != "a" {
					t.Fatalf("Lease = %v, %v; want a", l, err)
				}
			}
			p.skip.Store(tc.skip)
			p.armed.Store(true)
			done := make(chan error)
			go func() { done <- s.Update(tc.update) }()
			p.reached(t, done)
			if s.Busy(0) {
				t.Errorf("%s paused in the comparator, and a lock-free reader would wait for it", tc.name)
			}
			if v, ok := s.Peek(0); !ok || v.ID != "a" || v.Priority != 0 {
				t.Errorf("%s in progress: a lock-free reader reads %+v, %v; want a at 0", tc.name, v, ok)
			}
			close(p.proceed)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if v, ok := s.Peek(0); !ok || v.ID != tc.then || v.Priority != tc.priority {
				t.Errorf("after %s: a lock-free reader reads %+v, %v; want %s at %d", tc.name, v, ok, tc.then, tc.priority)
			}
		})
	}
}

// pausedSeven returns a one-shard scheduler under policy whose comparator
// is p (unarmed), holding a to g (see addSeven).
func pausedSeven(t *testing.T, policy config.AcquirePolicy) (*pause, *scheduler.Scheduler[*worker, string]) {
	t.Helper()
	p := newPause()
	cfg := baseConfig(1, policy)
	cfg.Comparator = p.compare
	s := newScheduler(t, cfg)
	addSeven(t, s)
	return p, s
}

// addSeven adds a to g with priorities 0, 10, ... 60, which fill one heap
// level by level in that order: b and c under a, d to g under them.
func addSeven(t *testing.T, s *scheduler.Scheduler[*worker, string]) {
	t.Helper()
	for i, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		addAll(t, s, w(id, 10*i))
	}
}

// An Acquire that meets an Update in progress returns the best resource
// as it was before the Update or after it, never the updated resource
// with its new value while another is better (docs/TESTING.md, finding 1).
func TestSharedAcquireDuringUpdateSeesItWholeOrNotAtAll(t *testing.T) {
	p := newPause()
	cfg := baseConfig(1, config.Shared)
	cfg.Comparator = p.compare
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 0), w("b", 2))
	p.armed.Store(true)
	updated := make(chan error)
	go func() { updated <- s.Update(w("a", 3)) }()
	p.reached(t, updated)
	acquired := make(chan *worker)
	go func() {
		got, err := s.Acquire()
		if err != nil {
			t.Error(err)
		}
		acquired <- got
	}()
	close(p.proceed)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	got := <-acquired
	if got == nil || !(got.ID == "a" && got.Priority == 0 || got.ID == "b" && got.Priority == 2) {
		t.Fatalf("Acquire during Update(a: 0 -> 3) returned %+v; want a at 0 or b at 2", got)
	}
}
