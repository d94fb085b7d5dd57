package dispatch

import (
	"testing"
	"time"

	"github.com/crsched/crs/events"
)

type blocking struct {
	entered chan events.Event[int]
	release chan struct{}
	got     []int
}

func (b *blocking) OnEvent(e events.Event[int]) {
	if b.entered != nil {
		b.entered <- e
		<-b.release
		b.entered = nil
	}
	b.got = append(b.got, e.ID)
}

type panicking struct{ calls int }

func (p *panicking) OnEvent(e events.Event[int]) {
	p.calls++
	if e.ID%2 == 0 {
		panic("observer bug")
	}
}

func TestFullQueueDropsAndCountsAndStopDeliversTheRestInOrder(t *testing.T) {
	obs := &blocking{entered: make(chan events.Event[int]), release: make(chan struct{})}
	d := Start(2, []events.Observer[int]{obs})
	d.Emit(events.Event[int]{ID: 0})
	<-obs.entered // the dispatcher holds event 0; the queue is empty
	for id := 1; id <= 5; id++ {
		d.Emit(events.Event[int]{ID: id}) // 1 and 2 fit; 3, 4, 5 are dropped
	}
	if got := d.Dropped(); got != 3 {
		t.Fatalf("Dropped = %d, want 3", got)
	}
	close(obs.release)
	d.Stop()
	d.Stop() // idempotent
	if len(obs.got) != 3 || obs.got[0] != 0 || obs.got[1] != 1 || obs.got[2] != 2 {
		t.Fatalf("delivered %v, want [0 1 2]", obs.got)
	}
	if d.Panics() != 0 {
		t.Fatalf("panics %d, want 0", d.Panics())
	}
}

func TestObserverPanicsAreCountedAndDoNotStopTheOthers(t *testing.T) {
	p := &panicking{}
	after := &blocking{}
	d := Start(8, []events.Observer[int]{p, after})
	for id := range 5 {
		d.Emit(events.Event[int]{ID: id})
	}
	d.Stop()
	if d.Panics() != 3 || p.calls != 5 || len(after.got) != 5 {
		t.Fatalf("panics %d, calls %d, delivered to the next observer %d", d.Panics(), p.calls, len(after.got))
	}
}

// stopping calls Stop from OnEvent, on the dispatcher's own goroutine, at
// the event with ID at, and records what it was delivered.
type stopping struct {
	d        *Dispatcher[int]
	at       int
	got      []int
	returned chan struct{}
}

func (s *stopping) OnEvent(e events.Event[int]) {
	s.got = append(s.got, e.ID)
	if e.ID == s.at {
		s.d.Stop()
		close(s.returned)
	}
}

func TestStopFromAnObserverReturnsAndLaterEventsAreDropped(t *testing.T) {
	obs := &stopping{at: 0, returned: make(chan struct{})}
	gate := &blocking{entered: make(chan events.Event[int]), release: make(chan struct{})}
	d := Start(8, []events.Observer[int]{gate, obs})
	obs.d = d
	d.Emit(events.Event[int]{ID: 0})
	<-gate.entered // the dispatcher holds event 0: 1 and 2 queue behind it
	d.Emit(events.Event[int]{ID: 1})
	d.Emit(events.Event[int]{ID: 2})
	close(gate.release)
	select {
	case <-obs.returned:
	case <-time.After(10 * time.Second): // liveness bound only
		t.Fatal("Stop called from an observer did not return")
	}
	d.Emit(events.Event[int]{ID: 3}) // after Stop: dropped and counted
	d.Stop()                         // waits for the rest queued before Stop
	if len(obs.got) != 3 || obs.got[2] != 2 {
		t.Fatalf("delivered %v, want [0 1 2]", obs.got)
	}
	if got := d.Dropped(); got != 1 {
		t.Fatalf("Dropped = %d, want 1", got)
	}
}

// A Stop that comes while an observer runs, from another goroutine, still
// waits for the delivery and for the goroutine to exit.
func TestStopFromElsewhereDuringADeliveryWaitsForIt(t *testing.T) {
	obs := &blocking{entered: make(chan events.Event[int]), release: make(chan struct{})}
	d := Start(2, []events.Observer[int]{obs})
	d.Emit(events.Event[int]{ID: 0})
	d.Emit(events.Event[int]{ID: 1})
	<-obs.entered
	stopped := make(chan struct{})
	go func() {
		d.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned while an observer was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(obs.release)
	<-stopped
	if len(obs.got) != 2 {
		t.Fatalf("delivered %v, want [0 1]", obs.got)
	}
}

func TestObserveIsNamed(t *testing.T) {
	if observeName != "github.com/crsched/crs/internal/dispatch.observe" {
		t.Fatalf("observeName = %q", observeName)
	}
}
