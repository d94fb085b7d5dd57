package scheduler_test

import (
	"cmp"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

// trap is a comparator that panics on its n-th call once armed.
type trap struct{ countdown atomic.Int64 }

func (tr *trap) arm(n int)   { tr.countdown.Store(int64(n)) }
func (tr *trap) disarm()     { tr.countdown.Store(math.MinInt64 / 2) }
func (tr *trap) armed() bool { return tr.countdown.Load() > 0 }

func (tr *trap) compare(a, b *worker) int {
	if tr.countdown.Add(-1) == 0 {
		panic("comparator trap")
	}
	return cmp.Compare(a.Priority, b.Priority)
}

// fire runs op with the comparator set to panic at its k-th call, and
// reports whether it did; it fails t if the comparator panicked but the
// panic did not reach op's caller.
func (tr *trap) fire(t *testing.T, k int, op func() error) bool {
	t.Helper()
	tr.arm(k)
	panicked, _ := callCatching(op)
	stillArmed := tr.armed()
	tr.disarm()
	if panicked == nil && !stillArmed {
		t.Fatalf("k=%d: comparator panicked but the panic did not reach the caller", k)
	}
	return panicked != nil
}

// callCatching runs f and returns what it panicked with, or nil.
func callCatching(f func() error) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, f()
}

// TestComparatorPanicUndoesTheOperation arms the comparator to panic at
// every possible comparison of every heap-changing operation. Each time,
// the panic must reach the caller, the operation must have had no effect,
// every invariant must hold, and the same operation must then succeed.
func TestComparatorPanicUndoesTheOperation(t *testing.T) {
	var lease scheduler.Lease[*worker, string]
	// On a single-slot resource these compare nothing: the first two move
	// it between off-heap states (held to resting), and Acquire and Lease
	// take the top, leaving the sift to the next operation on the shard
	// ("Acquire after Acquire" covers that one).
	offHeapOnly := map[string]bool{"Lease.Cooldown": true, "Lease.Fail": true, "Acquire": true, "Lease": true}
	holdersAndActive := func(s *scheduler.Scheduler[*worker, string]) string {
		st := s.Stats()
		return fmt.Sprint(st.Holders, st.ActiveResources)
	}
	ops := []struct {
		name    string
		prepare func(t *testing.T, s *scheduler.Scheduler[*worker, string])
		op      func(s *scheduler.Scheduler[*worker, string]) error
		effect  func(s *scheduler.Scheduler[*worker, string]) string
	}{
		{"Lease", nil,
			func(s *scheduler.Scheduler[*worker, string]) error { _, err := s.Lease(bg); return err },
			holdersAndActive},
		{"Lease.Release",
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) { lease = mustLease(t, s) },
			func(s *scheduler.Scheduler[*worker, string]) error { return lease.Release() },
			holdersAndActive},
		{"Lease.Cooldown",
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) { lease = mustLease(t, s) },
			func(s *scheduler.Scheduler[*worker, string]) error { return lease.Cooldown(time.Minute) },
			func(s *scheduler.Scheduler[*worker, string]) string {
				return holdersAndActive(s) + s.StateOf("w0") + fmt.Sprint(s.Stats().Suspensions)
			}},
		{"Lease.Fail",
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) { lease = mustLease(t, s) },
			func(s *scheduler.Scheduler[*worker, string]) error { return lease.Fail() },
			func(s *scheduler.Scheduler[*worker, string]) string {
				st := s.Stats()
				return holdersAndActive(s) + s.StateOf("w0") + fmt.Sprint(st.Failures, st.Ejections)
			}},
		{"Suspend", nil,
			func(s *scheduler.Scheduler[*worker, string]) error { return s.Suspend("w0", time.Minute) },
			func(s *scheduler.Scheduler[*worker, string]) string { return s.StateOf("w0") }},
		{"Include of suspended",
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) {
				if err := s.Suspend("w0", time.Minute); err != nil {
					t.Fatal(err)
				}
			},
			func(s *scheduler.Scheduler[*worker, string]) error { return s.Include("w0") },
			func(s *scheduler.Scheduler[*worker, string]) string { return s.StateOf("w0") }},
		{"Add", nil,
			func(s *scheduler.Scheduler[*worker, string]) error { return s.Add(w("x", -1)) },
			func(s *scheduler.Scheduler[*worker, string]) string { return s.StateOf("x") }},
		{"BatchAdd", nil,
			func(s *scheduler.Scheduler[*worker, string]) error {
				return s.BatchAdd([]*worker{w("x", -1), w("y", 500), w("z", 7)})
			},
			func(s *scheduler.Scheduler[*worker, string]) string {
				return s.StateOf("x") + s.StateOf("y") + s.StateOf("z") + fmt.Sprint(s.Len())
			}},
		{"Acquire", nil,
			func(s *scheduler.Scheduler[*worker, string]) error { _, err := s.Acquire(); return err },
			func(s *scheduler.Scheduler[*worker, string]) string { return fmt.Sprint(s.Stats().ActiveResources) }},
		{"Acquire after Acquire",
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) {
				if _, err := s.Acquire(); err != nil {
					t.Fatal(err)
				}
			},
			func(s *scheduler.Scheduler[*worker, string]) error { _, err := s.Acquire(); return err },
			func(s *scheduler.Scheduler[*worker, string]) string { return fmt.Sprint(s.Stats().ActiveResources) }},
		{"Release",
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) {
				if _, err := s.Acquire(); err != nil {
					t.Fatal(err)
				}
			},
			func(s *scheduler.Scheduler[*worker, string]) error { return s.Release("w0") },
			func(s *scheduler.Scheduler[*worker, string]) string { return s.StateOf("w0") }},
		{"Update",
			nil,
			func(s *scheduler.Scheduler[*worker, string]) error { return s.Update(w("w3", 1000)) },
			func(s *scheduler.Scheduler[*worker, string]) string {
				v, _ := s.Get("w3")
				return fmt.Sprint(v.Priority)
			}},
		{"Exclude", nil,
			func(s *scheduler.Scheduler[*worker, string]) error { return s.Exclude("w0") },
			func(s *scheduler.Scheduler[*worker, string]) string { return s.StateOf("w0") }},
		{"Include",
			func(t *testing.T, s *scheduler.Scheduler[*worker, string]) {
				if err := s.Exclude("w0"); err != nil {
					t.Fatal(err)
				}
			},
			func(s *scheduler.Scheduler[*worker, string]) error { return s.Include("w0") },
			func(s *scheduler.Scheduler[*worker, string]) string { return s.StateOf("w0") }},
		{"Remove", nil,
			func(s *scheduler.Scheduler[*worker, string]) error { return s.Remove("w0") },
			func(s *scheduler.Scheduler[*worker, string]) string { return s.StateOf("w0") + fmt.Sprint(s.Len()) }},
	}
	for _, multiSlot := range []bool{false, true} {
		for _, tt := range ops {
			t.Run(fmt.Sprintf("%s/multislot=%v", tt.name, multiSlot), func(t *testing.T) {
				panics := 0
				for k := 1; ; k++ {
					tr := &trap{}
					tr.disarm()
					cfg := baseConfig(1, config.Exclusive)
					cfg.Comparator = tr.compare
					cfg.Clock = fakeclock.New()
					cfg.Ejection = config.Ejection{ConsecutiveFailures: 1, BaseTime: time.Minute}
					if multiSlot {
						cfg.Capacity = func(v *worker) int { return v.Capacity }
					}
					s := newScheduler(t, cfg)
					ws := numbered(40)
					for _, v := range ws {
						v.Capacity = 3 // multi-slot: a hold reorders instead of removing
					}
					addAll(t, s, ws...)
					if tt.prepare != nil {
						tt.prepare(t, s)
					}
					before := tt.effect(s)
					if !tr.fire(t, k, func() error { return tt.op(s) }) {
						break // the operation needs fewer than k comparisons: all covered
					}
					panics++
					if after := tt.effect(s); after != before {
						t.Fatalf("k=%d: panicked operation took effect: %q -> %q", k, before, after)
					}
					if err := s.CheckInvariants(); err != nil {
						t.Fatalf("k=%d: %v", k, err)
					}
					if err := tt.op(s); err != nil {
						t.Fatalf("k=%d: retry after panic: %v", k, err)
					}
					mustInvariants(t, s)
				}
				if panics == 0 && !(offHeapOnly[tt.name] && !multiSlot) {
					t.Fatal("the comparator was never called: the test proves nothing")
				}
			})
		}
	}
}

// TestPanicWhileServingAWaiterKeepsTheWaiterQueued: the comparator panics
// while a BatchAdd hands one of its resources to a waiter. The batch is
// in, so the BatchAdd succeeds and the panic is counted; the waiter must
// not be lost, and the next operation on the shard serves it.
func TestPanicWhileServingAWaiterKeepsTheWaiterQueued(t *testing.T) {
	tr := &trap{}
	tr.disarm()
	cfg := baseConfig(1, config.Exclusive)
	cfg.Comparator = tr.compare
	// Two slots, so that the hold reorders the heap: a resource that a
	// hold fills leaves the heap without a comparison.
	cfg.Capacity = func(*worker) int { return 2 }
	s := newScheduler(t, cfg)
	r := acquireAsync(bg, s)
	untilWaiters(t, s, 1)
	// Ordering the batch of three takes two comparisons; the third comes
	// while the best of them is handed to the waiter.
	tr.arm(3)
	p, err := callCatching(func() error { return s.BatchAdd([]*worker{w("x", 3), w("y", 1), w("z", 2)}) })
	tr.disarm()
	if p != nil || err != nil {
		t.Fatalf("BatchAdd = %v, panic %v; want nil: the batch is in", err, p)
	}
	if got := s.Stats().ComparatorPanics; got != 1 {
		t.Fatalf("ComparatorPanics = %d, want 1: serving the waiter did not panic", got)
	}
	if got := s.Len(); got != 3 {
		t.Fatalf("Len = %d: the batch itself should be in", got)
	}
	select {
	case got := <-r:
		t.Fatalf("waiter served despite the panic: %v", got)
	default:
	}
	if _, err := s.Get("x"); err != nil { // any operation on the shard
		t.Fatal(err)
	}
	if got := <-r; got.err != nil || got.v.ID != "y" {
		t.Fatalf("waiter got %v, %v; want y, the best", got.v, got.err)
	}
	mustInvariants(t, s)
}
func TestKeyFuncPanicLeavesSchedulerUsable(t *testing.T) {
	cfg := baseConfig(1, config.Exclusive)
	cfg.KeyFunc = func(v *worker) string {
		if v.ID == "bad" {
			panic("key func bug")
		}
		return v.ID
	}
	s := newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	for _, op := range []func() error{
		func() error { return s.Add(w("bad", 1)) },
		func() error { return s.BatchAdd([]*worker{w("b", 1), w("bad", 2)}) },
		func() error { return s.Update(w("bad", 3)) },
	} {
		if p, _ := callCatching(op); p == nil {
			t.Fatal("KeyFunc panic did not reach the caller")
		}
	}
	if s.Len() != 1 {
		t.Fatalf("Len = %d, want 1", s.Len())
	}
	addAll(t, s, w("c", 0))
	if got, err := s.Acquire(); err != nil || got.ID != "c" {
		t.Fatalf("Acquire after panics = %v, %v", got, err)
	}
}

type panickingStrategy struct{ calls atomic.Int64 }

func (p *panickingStrategy) Select(v acquire.ShardView) int {
	if p.calls.Add(1) == 1 {
		panic("strategy bug")
	}
	return 0
}

func TestStrategyPanicLeavesSchedulerUsable(t *testing.T) {
	cfg := baseConfig(4, config.Exclusive)
	cfg.AcquireStrategy = &panickingStrategy{}
	s := newScheduler(t, cfg)
	addAll(t, s, numbered(4)...)
	if p, _ := callCatching(func() error { _, err := s.Acquire(); return err }); p == nil {
		t.Fatal("strategy panic did not reach the caller")
	}
	if st := s.Stats(); st.ActiveResources != 4 {
		t.Fatalf("panicking Acquire took a resource: %+v", st)
	}
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
}

// An operation that ends an ejection (Include), or finds one over with
// its timer late, uncounts it; when the comparator then panics, the
// undo puts the ejection back, and it must count as ejected again.
func TestComparatorPanicPutsAnEjectionBackCounted(t *testing.T) {
	var lease scheduler.Lease[*worker, string]
	ops := []struct {
		name  string
		after time.Duration // from the ejection (a minute) to the operation
		op    func(s *scheduler.Scheduler[*worker, string]) error
	}{
		{"Include", 0, func(s *scheduler.Scheduler[*worker, string]) error { return s.Include("w0") }},
		{"Include after its end", 2 * time.Minute, func(s *scheduler.Scheduler[*worker, string]) error { return s.Include("w0") }},
		{"Update after its end", 2 * time.Minute, func(s *scheduler.Scheduler[*worker, string]) error {
			v := w("w0", 1000)
			v.Capacity = 2
			return s.Update(v)
		}},
		{"Lease.Release after its end", 2 * time.Minute, func(s *scheduler.Scheduler[*worker, string]) error { return lease.Release() }},
	}
	for _, tt := range ops {
		t.Run(tt.name, func(t *testing.T) {
			panics := 0
			for k := 1; ; k++ {
				tr := &trap{}
				tr.disarm()
				clock := fakeclock.New()
				cfg := baseConfig(1, config.Exclusive)
				cfg.Comparator = tr.compare
				cfg.Clock = clock
				cfg.Capacity = func(v *worker) int { return v.Capacity }
				cfg.Ejection = config.Ejection{ConsecutiveFailures: 1, BaseTime: time.Minute}
				s := newScheduler(t, cfg)
				ws := numbered(40)
				for _, v := range ws {
					v.Capacity = 2
				}
				ws[0].Priority = -1 // the best: the leases below take it
				addAll(t, s, ws...)
				lease = mustLease(t, s)
				held := mustLease(t, s)
				if lease.Key() != "w0" || held.Key() != "w0" {
					t.Fatalf("leases on %s and %s, want w0", lease.Key(), held.Key())
				}
				if err := held.Fail(); err != nil {
					t.Fatal(err)
				}
				if got := s.Stats().EjectedResources; got != 1 {
					t.Fatalf("%d ejected after w0's failure, want 1", got)
				}
				clock.Pause() // the ejection's timer is late
				clock.Advance(tt.after)
				if !tr.fire(t, k, func() error { return tt.op(s) }) {
					break
				}
				panics++
				if err := s.CheckInvariants(); err != nil {
					t.Fatalf("k=%d: after the panic: %v", k, err)
				}
				clock.Resume()
				s.Shutdown()
			}
			if panics == 0 {
				t.Fatal("the comparator was never called: the test proves nothing")
			}
		})
	}
}

// TestComparatorPanicKeepsTheEjectionLimit has an Include end w0's
// ejection, the pool's only ejection slot, and w1 in the other shard fail
// while Include's comparator runs, which then panics. The undo puts w0's
// ejection back, so w1's failure must not have taken the slot meanwhile:
// one resource ejected, as MaxEjectedShare allows, not two.
func TestComparatorPanicKeepsTheEjectionLimit(t *testing.T) {
	var during func() // run once, by the next comparison, which then panics
	cfg := baseConfig(2, config.Exclusive)
	cfg.Comparator = func(a, b *worker) int {
		if f := during; f != nil {
			during = nil
			f()
			panic("comparator trap")
		}
		return cmp.Compare(a.Priority, b.Priority)
	}
	cfg.Ejection = config.Ejection{ConsecutiveFailures: 1, BaseTime: time.Minute, MaxEjectedShare: 0.25}
	s := newScheduler(t, cfg)
	ws := numbered(4) // in rotation: w0 and w2 in one shard, w1 and w3 in the other
	addAll(t, s, ws...)
	on0, on1 := mustLease(t, s), mustLease(t, s)
	if on0.Key() == "w1" {
		on0, on1 = on1, on0
	}
	if on0.Key() != "w0" || on1.Key() != "w1" {
		t.Fatalf("leases on %s and %s, want w0 and w1", on0.Key(), on1.Key())
	}
	if err := on0.Fail(); err != nil {
		t.Fatal(err)
	}
	during = func() {
		if err := on1.Fail(); err != nil {
			t.Errorf("w1's Fail: %v", err)
		}
	}
	if panicked, _ := callCatching(func() error { return s.Include("w0") }); panicked == nil {
		t.Fatal("Include did not panic: the test proves nothing")
	}
	wantState(t, s, "w0", "resting")
	if got := s.Stats().EjectedResources; got != 1 {
		t.Errorf("%d resources ejected, want 1 (MaxEjectedShare 0.25 of 4)", got)
	}
	mustInvariants(t, s)
}
