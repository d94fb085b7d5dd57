package scheduler_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
)

func TestRemovingAnEjectedResourceGivesBackItsEjectionSlot(t *testing.T) {
	s := newScheduler(t, ejectionConfig(fakeclock.New(), 0))
	addAll(t, s, w("a", 1), w("b", 2), w("c", 3))
	failTimes(t, s, "a", 3)
	wantState(t, s, "a", "resting")
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	// Two resources left: one of them may be ejected.
	failTimes(t, s, "b", 3)
	wantState(t, s, "b", "resting")
	if got := s.Stats().EjectedResources; got != 1 {
		t.Fatalf("%d ejected, want 1", got)
	}
}

func TestAnUnhashableKeyIsNotFoundAndLeavesTheSchedulerWorking(t *testing.T) {
	s := anyKeyed(t)
	if err := s.Add("a"); err != nil {
		t.Fatal(err)
	}
	bad := []int{1}
	if _, err := s.Get(bad); err != crserrors.ErrResourceNotFound {
		t.Fatalf("Get: %v, want ErrResourceNotFound", err)
	}
	for name, op := range map[string]func(any) error{
		"Exclude": s.Exclude, "Include": s.Include, "Remove": s.Remove,
		"Suspend": func(id any) error { return s.Suspend(id, time.Second) },
	} {
		if err := op(bad); !errors.Is(err, crserrors.ErrResourceNotFound) {
			t.Fatalf("%s: %v, want ErrResourceNotFound", name, err)
		}
	}
	if err := s.Add("b"); err != nil {
		t.Fatalf("Add after the unhashable key: %v", err)
	}
	if s.Len() != 2 {
		t.Fatalf("Len %d, want 2", s.Len())
	}
}

func TestAnUnhashableKeyIsRefusedByAddAndBatchAdd(t *testing.T) {
	s := anyKeyed(t)
	if err := s.Add([]int{1}); err != crserrors.ErrInvalidKey {
		t.Fatalf("Add: %v, want ErrInvalidKey", err)
	}
	if err := s.BatchAdd([]any{"a", map[int]int{}}); err != crserrors.ErrInvalidKey {
		t.Fatalf("BatchAdd: %v, want ErrInvalidKey", err)
	}
	if err := s.Update([]int{1}); err != crserrors.ErrResourceNotFound {
		t.Fatalf("Update: %v, want ErrResourceNotFound", err)
	}
	if s.Len() != 0 {
		t.Fatalf("Len %d after refused adds", s.Len())
	}
	if err := s.Add("a"); err != nil {
		t.Fatal(err)
	}
}

func TestANaNKeyIsRefused(t *testing.T) {
	nan := math.NaN()
	t.Run("float64", func(t *testing.T) {
		s, err := scheduler.New(config.Config[float64, float64]{
			Comparator: func(a, b float64) int { return 0 },
			KeyFunc:    func(v float64) float64 { return v },
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown()
		for range 2 {
			if err := s.Add(nan); err != crserrors.ErrInvalidKey {
				t.Fatalf("Add(NaN): %v, want ErrInvalidKey", err)
			}
		}
		if err := s.BatchAdd([]float64{1, nan}); err != crserrors.ErrInvalidKey {
			t.Fatalf("BatchAdd: %v, want ErrInvalidKey", err)
		}
		if s.Len() != 0 {
			t.Fatalf("Len %d after refused adds", s.Len())
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("inside any", func(t *testing.T) {
		s := anyKeyed(t)
		type pair struct{ a, b float64 }
		for _, k := range []any{nan, float32(nan), complex(nan, 0), pair{1, nan}, [1]any{nan}} {
			if err := s.Add(k); err != crserrors.ErrInvalidKey {
				t.Fatalf("Add(%v): %v, want ErrInvalidKey", k, err)
			}
		}
		if s.Len() != 0 {
			t.Fatalf("Len %d after refused adds", s.Len())
		}
	})
}
