package scheduler

import (
	"testing"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// A waiter that found a resource itself after Shutdown had already woken
// it gives back the grant it was sent; that grant carries only an error.
func TestGivingBackAShutdownGrantDoesNothing(t *testing.T) {
	s, err := New(config.Config[int, int]{
		Comparator:    func(a, b int) int { return a - b },
		KeyFunc:       func(v int) int { return v },
		AcquirePolicy: config.Exclusive,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	s.giveBack(grant[int, int]{err: crserrors.ErrSchedulerClosed})
}
