package scheduler_test

import (
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// anyKeyed is a scheduler whose resources are their own keys, of type any.
func anyKeyed(t *testing.T) *scheduler.Scheduler[any, any] {
	t.Helper()
	s, err := scheduler.New(config.Config[any, any]{
		Comparator: func(a, b any) int { return 0 },
		KeyFunc:    func(v any) any { return v },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.CheckInvariants(); err != nil {
			t.Errorf("invariants at end of test: %v", err)
		}
		s.Shutdown()
	})
	return s
}

func TestAnInterfaceTypedResourceHoldingANonPointerIsNotNil(t *testing.T) {
	s := anyKeyed(t)
	for _, v := range []any{"a", 1, struct{}{}} {
		if err := s.Add(v); err != nil {
			t.Fatalf("Add(%v): %v", v, err)
		}
	}
	if err := s.Add(nil); err != crserrors.ErrNilResource {
		t.Fatalf("Add(nil): %v, want ErrNilResource", err)
	}
	if err := s.Add((*int)(nil)); err != crserrors.ErrNilResource {
		t.Fatalf("Add(nil pointer): %v, want ErrNilResource", err)
	}
}
