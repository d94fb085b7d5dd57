package scheduler_test

import (
	"errors"
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

func TestNewRejectsInvalidConfig(t *testing.T) {
	valid := baseConfig(1, config.Shared)
	tests := []struct {
		name   string
		mutate func(*config.Config[*worker, string])
		want   error
	}{
		{"negative heap count", func(c *config.Config[*worker, string]) { c.HeapCount = -1 }, crserrors.ErrInvalidHeapCount},
		{"heap count above max", func(c *config.Config[*worker, string]) { c.HeapCount = config.MaxHeapCount + 1 }, crserrors.ErrInvalidHeapCount},
		{"nil comparator", func(c *config.Config[*worker, string]) { c.Comparator = nil }, crserrors.ErrNilComparator},
		{"nil key func", func(c *config.Config[*worker, string]) { c.KeyFunc = nil }, crserrors.ErrNilKeyFunc},
		{"unknown policy", func(c *config.Config[*worker, string]) { c.AcquirePolicy = 7 }, crserrors.ErrInvalidAcquirePolicy},
		{"negative event queue", func(c *config.Config[*worker, string]) { c.EventQueueSize = -1 }, crserrors.ErrInvalidEventQueueSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.mutate(&cfg)
			s, err := scheduler.New(cfg)
			wantErr(t, "New", err, tt.want)
			if s != nil {
				t.Fatal("New returned a scheduler along with an error")
			}
		})
	}
}

func TestZeroHeapCountMeansDefault(t *testing.T) {
	s := newScheduler(t, baseConfig(0, config.Shared))
	if got := s.Stats().HeapCount; got != config.DefaultHeapCount {
		t.Fatalf("HeapCount = %d, want %d", got, config.DefaultHeapCount)
	}
}

func TestAcquireReturnsBestResourceInShard(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Shared))
	addAll(t, s, w("a", 50), w("b", 10), w("c", 30))
	got, err := s.Acquire()
	if err != nil || got.ID != "b" {
		t.Fatalf("Acquire = %v, %v; want b", got, err)
	}
}

func TestSharedAcquireLeavesResourceActive(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Shared))
	addAll(t, s, w("a", 1), w("b", 2))
	for i := 0; i < 3; i++ {
		got, err := s.Acquire()
		if err != nil || got.ID != "a" {
			t.Fatalf("Acquire #%d = %v, %v; want a", i, got, err)
		}
	}
	wantState(t, s, "a", "active")
	wantErr(t, "Release under shared policy", s.Release("a"), crserrors.ErrNotExclusive)
}

func TestExclusiveAcquireHoldsUntilRelease(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1), w("b", 2))
	first, _ := s.Acquire()
	second, _ := s.Acquire()
	if first.ID != "a" || second.ID != "b" {
		t.Fatalf("acquired %s then %s, want a then b", first.ID, second.ID)
	}
	wantState(t, s, "a", "held")
	_, err := s.Acquire()
	wantErr(t, "Acquire with everything held", err, crserrors.ErrNoResourceAvailable)
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	again, err := s.Acquire()
	if err != nil || again.ID != "a" {
		t.Fatalf("Acquire after release = %v, %v; want a", again, err)
	}
}

func TestAcquireFallsBackToNonEmptyShard(t *testing.T) {
	for _, policy := range []config.AcquirePolicy{config.Shared, config.Exclusive} {
		t.Run(policy.String(), func(t *testing.T) {
			s := newScheduler(t, baseConfig(8, policy))
			addAll(t, s, w("only", 1)) // lands in one shard; seven stay empty
			for i := 0; i < 8; i++ {
				got, err := s.Acquire()
				if err != nil || got.ID != "only" {
					t.Fatalf("Acquire #%d = %v, %v", i, got, err)
				}
				if policy == config.Exclusive {
					if err := s.Release("only"); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

func TestAcquireOnEmptySchedulerReportsNoResource(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Shared))
	_, err := s.Acquire()
	wantErr(t, "Acquire", err, crserrors.ErrNoResourceAvailable)
}

func TestUpdateReordersActiveResource(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Shared))
	addAll(t, s, w("a", 10), w("b", 20), w("c", 30))
	if err := s.Update(w("c", 5)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Acquire(); got.ID != "c" {
		t.Fatalf("best after raising c = %s", got.ID)
	}
	if err := s.Update(w("c", 40)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Acquire(); got.ID != "a" {
		t.Fatalf("best after lowering c = %s", got.ID)
	}
	if got, _ := s.Get("c"); got.Priority != 40 {
		t.Fatalf("Get(c).Priority = %d, want 40", got.Priority)
	}
}

func TestUpdateOfHeldResourceAppliesOnRelease(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1), w("b", 2))
	held, _ := s.Acquire()
	if err := s.Update(w(held.ID, 9)); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "held")
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Acquire(); got.ID != "b" {
		t.Fatalf("best after release with lowered priority = %s, want b", got.ID)
	}
}

func TestExcludedResourceIsNeverAcquired(t *testing.T) {
	s := newScheduler(t, baseConfig(2, config.Shared))
	addAll(t, s, w("a", 1), w("b", 2))
	if err := s.Exclude("a"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if got, _ := s.Acquire(); got.ID != "b" {
			t.Fatalf("Acquire returned excluded %s", got.ID)
		}
	}
	if err := s.Include("a"); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, "a", "active")
}

func TestRemoveDeletesInAnyStateAndDrainsHeldOnes(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("held", 1), w("excluded", 2), w("active", 3))
	if got, _ := s.Acquire(); got.ID != "held" {
		t.Fatalf("acquired %s, want held", got.ID)
	}
	if err := s.Exclude("excluded"); err != nil {
		t.Fatal(err)
	}
	for id, after := range map[string]string{"active": "absent", "excluded": "absent", "held": "draining"} {
		if err := s.Remove(id); err != nil {
			t.Fatalf("Remove(%s): %v", id, err)
		}
		wantState(t, s, id, after)
		_, err := s.Get(id)
		wantErr(t, "Get after Remove", err, crserrors.ErrResourceNotFound)
		wantErr(t, "second Remove", s.Remove(id), crserrors.ErrResourceNotFound)
	}
	if s.Len() != 0 {
		t.Fatalf("Len = %d after removing everything", s.Len())
	}
	if err := s.Release("held"); err != nil {
		t.Fatalf("holder's Release of the drained resource: %v", err)
	}
	wantState(t, s, "held", "absent")
	wantErr(t, "second Release", s.Release("held"), crserrors.ErrResourceNotFound)
}

func TestRemovedHeldKeyIsFreeOnlyAfterLastRelease(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Exclusive))
	addAll(t, s, w("a", 1))
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	err := s.Add(w("a", 2))
	wantErr(t, "Add while draining", err, crserrors.ErrDuplicateKey)
	wantErr(t, "Add while draining", err, crserrors.ErrResourceDraining)
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	addAll(t, s, w("a", 2))
	wantState(t, s, "a", "active")
	if got, _ := s.Get("a"); got.Priority != 2 {
		t.Fatalf("re-added a has priority %d", got.Priority)
	}
}

func TestLenCountsEveryState(t *testing.T) {
	s := newScheduler(t, baseConfig(3, config.Exclusive))
	addAll(t, s, numbered(6)...)
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Exclude("w5"); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 6 {
		t.Fatalf("Len = %d, want 6", s.Len())
	}
}

func TestStatsCountsByState(t *testing.T) {
	s := newScheduler(t, baseConfig(4, config.Exclusive))
	addAll(t, s, numbered(8)...)
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Exclude("w7"); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.TotalResources != 8 || st.ActiveResources != 5 || st.HeldResources != 2 || st.ExcludedResources != 1 || st.InactiveResources != 3 {
		t.Fatalf("stats = %+v", st)
	}
	sum := 0
	for _, n := range st.HeapSizes {
		sum += n
	}
	if sum != st.ActiveResources || len(st.HeapSizes) != 4 || st.EmptyHeaps+st.NonEmptyHeaps != 4 {
		t.Fatalf("heap sizes %v inconsistent with %+v", st.HeapSizes, st)
	}
	if st.AcquirePolicy != "Exclusive" || st.AcquireStrategy != "RoundRobin" {
		t.Fatalf("policy %q strategy %q", st.AcquirePolicy, st.AcquireStrategy)
	}
}

func TestNilResourceIsRejected(t *testing.T) {
	s := newScheduler(t, baseConfig(1, config.Shared))
	wantErr(t, "Add(nil)", s.Add(nil), crserrors.ErrNilResource)
	wantErr(t, "Update(nil)", s.Update(nil), crserrors.ErrNilResource)
	if s.Len() != 0 {
		t.Fatal("nil resource was added")
	}
}

func TestNonPointerResourcesWork(t *testing.T) {
	s, err := scheduler.New(config.Config[int, int]{
		Comparator: func(a, b int) int { return a - b },
		KeyFunc:    func(v int) int { return v },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	for _, v := range []int{5, 0, 3} { // 0 is a value here, not nil
		if err := s.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.Acquire(); got != 0 {
		t.Fatalf("Acquire = %d, want 0", got)
	}
}

// nilOfKind checks that a scheduler of T rejects nilV and accepts okV.
func nilOfKind[T any](t *testing.T, name string, nilV, okV T) {
	t.Helper()
	s, err := scheduler.New(config.Config[T, string]{
		Comparator: func(a, b T) int { return 0 },
		KeyFunc:    func(T) string { return "k" },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if err := s.Add(nilV); !errors.Is(err, crserrors.ErrNilResource) {
		t.Errorf("%s: Add(nil) = %v, want ErrNilResource", name, err)
	}
	if err := s.Add(okV); err != nil {
		t.Errorf("%s: Add(non-nil) = %v", name, err)
	}
}

type namer interface{ Name() string }

type named struct{}

func (*named) Name() string { return "" }

func TestNilOfEveryNillableKindIsRejected(t *testing.T) {
	nilOfKind(t, "map", map[string]int(nil), map[string]int{})
	nilOfKind(t, "chan", (chan int)(nil), make(chan int))
	nilOfKind(t, "func", (func())(nil), func() {})
	nilOfKind(t, "slice", []int(nil), []int{})
	nilOfKind(t, "interface", namer(nil), namer(&named{}))
	nilOfKind(t, "interface holding a nil pointer", namer((*named)(nil)), namer(&named{}))
}
