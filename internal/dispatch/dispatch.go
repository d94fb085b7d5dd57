// Package dispatch delivers scheduler events to observers on one goroutine.
package dispatch

import (
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/events"
)

// Dispatcher queues events in a bounded channel and delivers them to the
// observers, in order, on its own goroutine. Emit never blocks: when the
// queue is full the event is dropped and counted.
type Dispatcher[ID comparable] struct {
	queue     chan events.Event[ID]
	observers []events.Observer[ID]
	stop      chan struct{}
	exited    chan struct{}
	stopOnce  sync.Once
	dropped   atomic.Uint64
	panics    atomic.Uint64
}

// Start starts the dispatcher goroutine for the observers that are not
// nil (CRS skipped nil ones too).
func Start[ID comparable](size int, observers []events.Observer[ID]) *Dispatcher[ID] {
	d := &Dispatcher[ID]{
		queue:  make(chan events.Event[ID], size),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	for _, o := range observers {
		if o != nil {
			d.observers = append(d.observers, o)
		}
	}
	go d.run()
	return d
}

// Emit queues e, or drops and counts it when the queue is full.
func (d *Dispatcher[ID]) Emit(e events.Event[ID]) {
	select {
	case d.queue <- e:
	default:
		d.dropped.Add(1)
	}
}

// Stop delivers the events already queued, stops the goroutine and waits
// for it to exit. It is idempotent and safe to call concurrently; every
// call returns only after the goroutine has exited. Stop must not be called
// from an observer (it would wait for itself).
func (d *Dispatcher[ID]) Stop() {
	d.stopOnce.Do(func() { close(d.stop) })
	<-d.exited
}

// Dropped counts events dropped because the queue was full.
func (d *Dispatcher[ID]) Dropped() uint64 { return d.dropped.Load() }

// Panics counts panics recovered from observers.
func (d *Dispatcher[ID]) Panics() uint64 { return d.panics.Load() }

func (d *Dispatcher[ID]) run() {
	defer close(d.exited)
	for {
		select {
		case e := <-d.queue:
			d.deliver(e)
		case <-d.stop:
			for {
				select {
				case e := <-d.queue:
					d.deliver(e)
				default:
					return
				}
			}
		}
	}
}

func (d *Dispatcher[ID]) deliver(e events.Event[ID]) {
	for _, o := range d.observers {
		d.call(o, e)
	}
}

// call runs one observer, recovering and counting its panic so that one
// faulty observer cannot stop delivery to the others.
func (d *Dispatcher[ID]) call(o events.Observer[ID], e events.Event[ID]) {
	defer func() {
		if recover() != nil {
			d.panics.Add(1)
		}
	}()
	o.OnEvent(e)
}
