package scheduler_test

import "testing"

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
