package dispatch

import (
	"testing"

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
