package scheduler_test

import (
	"cmp"
	"errors"
	"fmt"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

type worker struct {
	ID       string
	Priority int
	Capacity int // read only by tests that configure Capacity
}

func w(id string, priority int) *worker { return &worker{ID: id, Priority: priority, Capacity: 1} }

func byPriority(a, b *worker) int { return cmp.Compare(a.Priority, b.Priority) }

func workerID(v *worker) string { return v.ID }

func baseConfig(heaps int, policy config.AcquirePolicy) config.Config[*worker, string] {
	return config.Config[*worker, string]{
		HeapCount:     heaps,
		Comparator:    byPriority,
		KeyFunc:       workerID,
		AcquirePolicy: policy,
	}
}

// newScheduler builds a scheduler that is shut down, and checked against
// the state model, when the test ends.
func newScheduler(t testing.TB, cfg config.Config[*worker, string]) *scheduler.Scheduler[*worker, string] {
	t.Helper()
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.CheckInvariants(); err != nil {
			t.Errorf("invariants at end of test: %v", err)
		}
		s.Shutdown()
	})
	return s
}

func newSchedulerErr(cfg config.Config[*worker, string]) (*scheduler.Scheduler[*worker, string], error) {
	s, err := scheduler.New(cfg)
	if err == nil {
		s.Shutdown()
	}
	return s, err
}

func addAll(t testing.TB, s *scheduler.Scheduler[*worker, string], ws ...*worker) {
	t.Helper()
	for _, v := range ws {
		if err := s.Add(v); err != nil {
			t.Fatalf("Add(%s): %v", v.ID, err)
		}
	}
}

// numbered returns n workers w0..w(n-1) with priority equal to their number.
func numbered(n int) []*worker {
	ws := make([]*worker, n)
	for i := range ws {
		ws[i] = w(fmt.Sprintf("w%d", i), i)
	}
	return ws
}

func mustInvariants(t testing.TB, s *scheduler.Scheduler[*worker, string]) {
	t.Helper()
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func wantErr(t testing.TB, op string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: got error %v, want %v", op, got, want)
	}
}

func wantState(t testing.TB, s *scheduler.Scheduler[*worker, string], id, want string) {
	t.Helper()
	if got := s.StateOf(id); got != want {
		t.Fatalf("state of %s = %s, want %s", id, got, want)
	}
}
