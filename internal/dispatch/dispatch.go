// Package dispatch delivers scheduler events to observers on one goroutine.
package dispatch

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/crsched/crs/events"
)

// Dispatcher queues events in a bounded channel and delivers them to the
// observers, in order, on its own goroutine. Emit never blocks: when the
// queue is full, or the dispatcher stopped, the event is dropped and
// counted.
type Dispatcher[ID comparable] struct {
	queue     chan events.Event[ID]
	observers []events.Observer[ID]
	stop      chan struct{}
	exited    chan struct{}
	stopOnce  sync.Once
	stopped   atomic.Bool // set by the first Stop, before stop is closed
	// delivering is set by the dispatcher's goroutine while it delivers
	// an event: a Stop that finds it clear is not called from an observer.
	delivering atomic.Bool
	dropped    atomic.Uint64
	panics     atomic.Uint64
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

// Emit queues e, or drops and counts it when the queue is full or Stop
// was called.
func (d *Dispatcher[ID]) Emit(e events.Event[ID]) {
	if d.stopped.Load() {
		d.dropped.Add(1)
		return
	}
	select {
	case d.queue <- e:
	default:
		d.dropped.Add(1)
	}
}

// Stop makes the goroutine deliver the events already queued and exit, and
// waits for it to exit; events emitted after Stop are dropped and counted.
// It is idempotent and safe to call concurrently. Called from an observer
// (on the goroutine itself) it returns without waiting, since the
// goroutine cannot exit before the observer returns; the goroutine then
// delivers the rest of the queue and exits.
func (d *Dispatcher[ID]) Stop() {
	d.stopOnce.Do(func() {
		d.stopped.Store(true)
		close(d.stop)
	})
	if d.delivering.Load() && onDispatcher() {
		return
	}
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
	d.delivering.Store(true)
	defer d.delivering.Store(false)
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
	observe(func() { o.OnEvent(e) })
}

// observe runs an observer's call. Its frame is below every observer call
// on a dispatcher's goroutine, and on no other goroutine's stack, so a Stop
// that finds it on its own stack was called from an observer: Go has no
// goroutine identity to compare. An observer of one dispatcher that stops
// another while that one delivers is taken for its own observer too, and
// does not wait for it.
//
//go:noinline
func observe(call func()) { call() }

// observeName is observe's name in a stack trace.
var observeName = runtime.FuncForPC(reflect.ValueOf(observe).Pointer()).Name()

// onDispatcher reports whether observe is on the caller's stack.
func onDispatcher() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function == observeName {
			return true
		}
		if !more {
			return false
		}
	}
}
