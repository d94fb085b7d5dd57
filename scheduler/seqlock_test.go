package scheduler_test

import (
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
	inside  chan struct{}
	proceed chan struct{}
}

func newPause() *pause { return &pause{inside: make(chan struct{}), proceed: make(chan struct{})} }

func (p *pause) compare(a, b *worker) int {
	if p.armed.CompareAndSwap(true, false) {
		close(p.inside)
		<-p.proceed
	}
	return byPriority(a, b)
}

// While an operation that changes a shard's top together with a value or
// the count Len reads is in progress, a reader without the lock must find
// the shard busy (and wait), so that it never sees the change in part.
func TestChangesInProgressAreInvisibleToLockFreeReaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy config.AcquirePolicy
		op     func(*scheduler.Scheduler[*worker, string]) error
	}{
		{"Update under Shared", config.Shared, func(s *scheduler.Scheduler[*worker, string]) error { return s.Update(w("a", 3)) }},
		{"Remove", config.Exclusive, func(s *scheduler.Scheduler[*worker, string]) error { return s.Remove("a") }},
		{"Add", config.Shared, func(s *scheduler.Scheduler[*worker, string]) error { return s.Add(w("c", -1)) }},
		{"BatchAdd", config.Exclusive, func(s *scheduler.Scheduler[*worker, string]) error {
			return s.BatchAdd([]*worker{w("c", -1), w("d", 5)})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPause()
			cfg := baseConfig(1, tc.policy)
			cfg.Comparator = p.compare
			s := newScheduler(t, cfg)
			addAll(t, s, w("a", 0), w("b", 2), w("pad", 9))
			if s.Busy(0) {
				t.Fatal("busy with no change in progress")
			}
			p.armed.Store(true)
			done := make(chan error)
			go func() { done <- tc.op(s) }()
			<-p.inside
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
	<-p.inside
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
