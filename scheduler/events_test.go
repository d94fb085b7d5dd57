package scheduler_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/scheduler"
)

type recorder struct {
	mu  sync.Mutex
	got []events.Event[string]
}

func (r *recorder) OnEvent(e events.Event[string]) {
	r.mu.Lock()
	r.got = append(r.got, e)
	r.mu.Unlock()
}

func (r *recorder) events() []events.Event[string] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Event[string](nil), r.got...)
}

// observed is a scheduler of cfg whose events the recorder it returns
// records.
func observed(t *testing.T, cfg config.Config[*worker, string]) (*scheduler.Scheduler[*worker, string], *recorder) {
	t.Helper()
	rec := &recorder{}
	cfg.Observers = append(cfg.Observers, rec)
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, rec
}

// ids lists the resources of the events of type t, in order.
func (r *recorder) ids(t events.EventType) []string {
	var ids []string
	for _, e := range r.events() {
		if e.Type == t {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// A nil entry in Observers is skipped, as CRS skipped it, rather than
// called and counted as a panic on every event.
func TestNilObserversAreSkipped(t *testing.T) {
	rec := &recorder{}
	cfg := baseConfig(1, config.Shared)
	cfg.Observers = []events.Observer[string]{nil, rec, nil}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, s, w("a", 1))
	s.Shutdown() // delivers what is queued
	if got := len(rec.events()); got != 1 {
		t.Errorf("observer saw %d events, want 1", got)
	}
	if st := s.Stats(); st.ObserverPanics != 0 {
		t.Errorf("ObserverPanics = %d, want 0", st.ObserverPanics)
	}
}

func TestObserversReceiveEventsInOrder(t *testing.T) {
	s, rec := observed(t, baseConfig(1, config.Exclusive))
	addAll(t, s, w("a", 1))
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	steps := []error{s.Release("a"), s.Update(w("a", 2)), s.Exclude("a"), s.Include("a"), s.Remove("a")}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Release("a") // refused: no event
	s.Shutdown()       // delivers what is queued
	want := []events.EventType{events.EventAdd, events.EventAcquire, events.EventRelease,
		events.EventUpdate, events.EventExclude, events.EventInclude, events.EventRemove}
	got := rec.events()
	if len(got) != len(want) {
		t.Fatalf("got %d events %v, want %v", len(got), got, want)
	}
	for i, e := range got {
		if e.Type != want[i] || e.ID != "a" {
			t.Fatalf("event %d = %v %s, want %v a", i, e.Type, e.ID, want[i])
		}
	}
}

// BatchAdd reports each resource it adds, in the batch's order, whatever
// the shards they go to.
func TestBatchAddReportsEveryResourceInBatchOrder(t *testing.T) {
	s, rec := observed(t, baseConfig(3, config.Shared))
	if err := s.BatchAdd([]*worker{w("a", 1), w("b", 2), w("c", 3), w("d", 4), w("e", 5)}); err != nil {
		t.Fatal(err)
	}
	s.Shutdown() // delivers what is queued
	if got, want := fmt.Sprint(rec.ids(events.EventAdd)), "[a b c d e]"; got != want {
		t.Fatalf("EventAdd for %s, want %s", got, want)
	}
}

// blockingObserver holds the dispatcher inside OnEvent until released, so
// the queue behind it fills up.
type blockingObserver struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingObserver) OnEvent(events.Event[string]) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
}

func TestFullQueueDropsAndCountsEvents(t *testing.T) {
	obs := &blockingObserver{entered: make(chan struct{}), release: make(chan struct{})}
	cfg := baseConfig(1, config.Shared)
	cfg.Observers = []events.Observer[string]{obs}
	cfg.EventQueueSize = 4
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, s, w("a", 1))
	<-obs.entered // the dispatcher is now stuck on the first event
	for i := 0; i < 10; i++ {
		if _, err := s.Acquire(); err != nil {
			t.Fatal(err)
		}
	}
	// 10 acquire events: 4 fit in the queue, 6 are dropped.
	if got := s.Stats().DroppedEvents; got != 6 {
		t.Fatalf("DroppedEvents = %d, want 6", got)
	}
	close(obs.release)
	s.Shutdown()
}

func TestPanickingObserverIsCountedAndOthersStillReceive(t *testing.T) {
	rec := &recorder{}
	panicky := events.ObserverFunc[string](func(events.Event[string]) { panic("observer bug") })
	cfg := baseConfig(1, config.Shared)
	cfg.Observers = []events.Observer[string]{panicky, rec}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, s, w("a", 1), w("b", 2))
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	if got := len(rec.events()); got != 3 {
		t.Fatalf("second observer got %d events, want 3", got)
	}
	if got := s.Stats().ObserverPanics; got != 3 {
		t.Fatalf("ObserverPanics = %d, want 3", got)
	}
}

func TestObserverMayCallTheScheduler(t *testing.T) {
	var s *scheduler.Scheduler[*worker, string]
	excluded := make(chan error, 1)
	reentrant := events.ObserverFunc[string](func(e events.Event[string]) {
		if e.Type == events.EventRelease {
			excluded <- s.Exclude(e.ID)
		}
	})
	cfg := baseConfig(2, config.Exclusive)
	cfg.Observers = []events.Observer[string]{reentrant}
	s = newScheduler(t, cfg)
	addAll(t, s, w("a", 1))
	if _, err := s.Acquire(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("a"); err != nil {
		t.Fatal(err)
	}
	if err := <-excluded; err != nil {
		t.Fatalf("Exclude from observer: %v", err)
	}
	wantState(t, s, "a", "excluded")
}

func TestConcurrentShutdownsAllWaitForTheDispatcher(t *testing.T) {
	s, rec := observed(t, baseConfig(2, config.Shared))
	addAll(t, s, numbered(50)...)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Shutdown()
			// Every Shutdown returns only once the queued events are in.
			if got := len(rec.events()); got != 50 {
				t.Errorf("after Shutdown returned, %d of 50 events delivered", got)
			}
		}()
	}
	wg.Wait()
}
