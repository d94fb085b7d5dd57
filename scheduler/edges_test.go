package scheduler_test

import (
	"testing"

	"github.com/crsched/crs/internal/fakeclock"
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
