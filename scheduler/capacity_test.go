package scheduler_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

func capacityConfig(heaps int) config.Config[*worker, string] {
	cfg := baseConfig(heaps, config.Exclusive)
	cfg.Capacity = func(v *worker) int { return v.Capacity }
	return cfg
}

func withCapacity(id string, priority, capacity int) *worker {
	return &worker{ID: id, Priority: priority, Capacity: capacity}
}

func TestResourceTakesHoldersUpToItsCapacity(t *testing.T) {
	s := newScheduler(t, capacityConfig(1))
	addAll(t, s, withCapacity("big", 1, 3), withCapacity("small", 2, 1))
	for i := 0; i < 3; i++ {
		if got, _ := s.Acquire(); got.ID != "big" {
			t.Fatalf("acquisition %d got %s, want big (slots left)", i, got.ID)
		}
	}
	wantState(t, s, "big", "held")
	if got, _ := s.Acquire(); got.ID != "small" {
		t.Fatalf("with big full, got %s", got.ID)
	}
	_, err := s.Acquire()
	wantErr(t, "Acquire with every slot taken", err, crserrors.ErrNoResourceAvailable)
	if err := s.Release("big"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "big", "active")
	if st := s.Stats(); st.Holders != 3 {
		t.Fatalf("holders %d, want 3", st.Holders)
	}
}

// A release counts the freed slot before the resource goes back in the
// heap, since the heap breaks ties by holders: full "c" (capacity 2)
// comes back with one holder, below "p"'s two, so it is next.
func TestReleasedResourceIsOrderedByItsNewHolderCount(t *testing.T) {
	s := newScheduler(t, capacityConfig(1))
	addAll(t, s, withCapacity("p", 1, 3), withCapacity("c", 1, 2))
	for i := 0; i < 4; i++ {
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
	}
	wantState(t, s, "c", "held")
	if err := s.Release("c"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Acquire(); got.ID != "c" {
		t.Fatalf("got %s with 2 holders, want c with 1", got.ID)
	}
}

func TestEqualPriorityGoesToTheLeastLoaded(t *testing.T) {
	s := newScheduler(t, capacityConfig(1))
	addAll(t, s, withCapacity("a", 1, 4), withCapacity("b", 1, 4))
	count := map[string]int{}
	for i := 0; i < 8; i++ {
		v, err := s.Acquire()
		if err != nil {
			t.Fatal(err)
		}
		count[v.ID]++
		if d := count["a"] - count["b"]; d > 1 || d < -1 {
			t.Fatalf("after %d acquisitions the load is %v", i+1, count)
		}
	}
}

func TestMissingOrInvalidCapacityMeansOne(t *testing.T) {
	for name, capacity := range map[string]func(*worker) int{
		"nil":      nil,
		"zero":     func(*worker) int { return 0 },
		"negative": func(*worker) int { return -5 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := baseConfig(1, config.Exclusive)
			cfg.Capacity = capacity
			s := newScheduler(t, cfg)
			addAll(t, s, w("a", 1))
			if _, err := s.Acquire(); err != nil {
				t.Fatal(err)
			}
			wantState(t, s, "a", "held")
		})
	}
}

func TestUpdateAppliesANewCapacity(t *testing.T) {
	s := newScheduler(t, capacityConfig(1))
	addAll(t, s, withCapacity("a", 1, 3))
	for i := 0; i < 2; i++ {
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(withCapacity("a", 1, 2)); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "held") // 2 holders, capacity 2
	if err := s.Update(withCapacity("a", 1, 5)); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
	if err := s.Update(withCapacity("a", 1, 1)); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "held") // over capacity: no new holder until two release
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "held")
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
}

func TestExcludedResourceKeepsItsHolders(t *testing.T) {
	s := newScheduler(t, capacityConfig(1))
	addAll(t, s, withCapacity("a", 1, 2))
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Exclude("a"); err != nil { // one slot free: still active, so excludable
		t.Fatal(err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "excluded")
	if err := s.Include("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
}

// TestStressHoldersNeverExceedCapacity runs leases and releases (some
// with contexts that end) over resources of capacity 1 to 3 while another
// goroutine excludes and includes them, and checks the number of holders
// of each resource at every grant.
func TestStressHoldersNeverExceedCapacity(t *testing.T) {
	const goroutines, rounds = 16, 400
	s := newScheduler(t, capacityConfig(4))
	var holders [6]atomic.Int32
	for i := range holders {
		addAll(t, s, withCapacity(strconv.Itoa(i), i%2, 1+i%3))
	}
	stop := make(chan struct{})
	toggled := make(chan struct{})
	go func() { // never leaves a resource excluded for good
		defer close(toggled)
		for i := 0; ; i++ {
			id := strconv.Itoa(i % 6)
			_ = s.Exclude(id)
			runtime.Gosched()
			_ = s.Include(id)
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				if (g+i)%9 == 0 {
					cancel()
				}
				l, err := s.Lease(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Error(err)
						return
					}
					continue
				}
				v := l.Value()
				k, _ := strconv.Atoi(v.ID)
				if n := holders[k].Add(1); int(n) > v.Capacity {
					t.Errorf("%s has %d holders, capacity %d", v.ID, n, v.Capacity)
				}
				runtime.Gosched() // let others try to join while held
				holders[k].Add(-1)
				if err := l.Release(); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(stop)
	<-toggled
	if st := s.Stats(); st.Holders != 0 || st.Waiters != 0 || st.ActiveResources != 6 {
		t.Fatalf("after the run: %+v", st)
	}
	mustInvariants(t, s)
}

// TestCheckInvariantsAcceptsACapacityLoweredByUpdate guards a fixed
// finding (docs/TESTING.md, finding 6): CheckInvariants and
// docs/ARCHITECTURE.md required holders <= capacity under Exclusive,
// although Update documents (TestUpdateAppliesANewCapacity) lowering the
// capacity of a resource below its current holders, which keeps them.
func TestCheckInvariantsAcceptsACapacityLoweredByUpdate(t *testing.T) {
	s := newScheduler(t, capacityConfig(1))
	addAll(t, s, withCapacity("a", 1, 2))
	for range 2 {
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(withCapacity("a", 1, 1)); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "held") // as documented: 2 holders, capacity 1
	if err := s.CheckInvariants(); err != nil {
		t.Fatalf("a documented state fails the invariants: %v", err)
	}
	for range 2 {
		if err := s.Release("a"); err != nil {
			t.Fatal(err)
		}
	}
}

// A node keeps its capacity in 32 bits: a Capacity result above
// math.MaxInt32 means math.MaxInt32 (see config.Config.Capacity), never
// a truncated number that would make the resource full at once or
// below 1, whether the resource comes by Add, BatchAdd or Update.
func TestCapacityAboveMaxInt32MeansMaxInt32(t *testing.T) {
	const holds = 3
	huge := withCapacity("added", 1, math.MaxInt)
	for name, add := range map[string]func(s *scheduler.Scheduler[*worker, string]) error{
		"Add":      func(s *scheduler.Scheduler[*worker, string]) error { return s.Add(huge) },
		"BatchAdd": func(s *scheduler.Scheduler[*worker, string]) error { return s.BatchAdd([]*worker{huge}) },
		"Update": func(s *scheduler.Scheduler[*worker, string]) error {
			if err := s.Add(withCapacity("added", 1, 1)); err != nil {
				return err
			}
			return s.Update(huge)
		},
	} {
		t.Run(name, func(t *testing.T) {
			capacities := []int{math.MaxInt}
			if wide := uint64(1<<32 | 1); math.MaxInt > math.MaxInt32 {
				capacities = append(capacities, int(wide), int(wide)+math.MaxInt32) // truncate to 1 and to a negative number
			}
			for _, capacity := range capacities {
				huge.Capacity = capacity
				s := newScheduler(t, capacityConfig(1))
				if err := add(s); err != nil {
					t.Fatal(err)
				}
				for i := range holds {
					if _, err := s.Acquire(); err != nil {
						t.Fatalf("capacity %d: acquisition %d: %v", capacity, i, err)
					}
				}
				wantState(t, s, "added", "active")
				if err := s.CheckInvariants(); err != nil {
					t.Fatalf("capacity %d: %v", capacity, err)
				}
				if st := s.Stats(); st.Holders != holds {
					t.Fatalf("capacity %d: Stats.Holders = %d, want %d", capacity, st.Holders, holds)
				}
			}
		})
	}
}
