package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/leakcheck"
	"github.com/crsched/crs/scheduler"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func TestShutdownStopsTheDispatcherGoroutine(t *testing.T) {
	cfg := baseConfig(2, config.Shared)
	cfg.Observers = []events.Observer[string]{events.ObserverFunc[string](func(events.Event[string]) {})}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(leakcheck.Leaked(), "internal/dispatch") {
		t.Fatal("the running dispatcher is not seen: the leak check would miss it")
	}
	s.Shutdown()
	if leaked := leakcheck.Wait(5 * time.Second); leaked != "" {
		t.Fatalf("goroutines left after Shutdown:\n%s", leaked)
	}
}
