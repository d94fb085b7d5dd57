package scheduler_test

import (
	"errors"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/scheduler"
)

// CRS v1.2.3's Shutdown returned when an observer called it; waiting for
// the dispatcher there would be waiting for itself.
func TestShutdownFromAnObserverReturns(t *testing.T) {
	var s *scheduler.Scheduler[*worker, string]
	returned := make(chan struct{})
	stop := events.ObserverFunc[string](func(e events.Event[string]) {
		if e.Type == events.EventAdd {
			s.Shutdown()
			close(returned)
		}
	})
	cfg := baseConfig(1, config.Shared)
	cfg.Observers = []events.Observer[string]{stop}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(w("a", 1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	case <-time.After(10 * time.Second): // liveness bound only
		t.Fatal("Shutdown called from an observer did not return")
	}
	s.Shutdown() // idempotent, and waits for the dispatcher to exit
	if _, err := s.Acquire(); !errors.Is(err, crserrors.ErrSchedulerClosed) {
		t.Fatalf("Acquire after Shutdown: %v, want ErrSchedulerClosed", err)
	}
}
