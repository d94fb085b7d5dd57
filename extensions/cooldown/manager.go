package cooldown

import (
	"sync"
	"time"

	"github.com/crsched/crs/events"
)

// LifecycleController takes resources out of the pool and puts them back.
// *scheduler.Scheduler implements it; see the package documentation for
// why the Manager usually receives a wrapper instead.
type LifecycleController[ID comparable] interface {
	Exclude(id ID) error
	Include(id ID) error
}

// stopper is the part of *time.Timer the Manager uses, so that tests can
// substitute timers they fire by hand.
type stopper interface {
	Stop() bool
}

func realAfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// Manager excludes each released resource for a fixed duration. It is safe
// for concurrent use. Calls into the controller are serialized and never
// overlap with each other or with Close, so the controller needs no locking
// of its own, but it must not call the Manager (that would deadlock).
type Manager[ID comparable] struct {
	controller LifecycleController[ID]
	duration   time.Duration
	afterFunc  func(time.Duration, func()) stopper

	mu     sync.Mutex
	closed bool
	// cooling maps each resource this Manager excluded and has not yet
	// included to the cooldown that will include it.
	cooling map[ID]*cooldown
}

// cooldown is one armed timer. The Manager compares cooldowns by identity:
// a timer whose cooldown is no longer the one in the map has been
// superseded by a restart or cancelled by Close, and must not include the
// resource even if it fires (Stop cannot recall a callback already
// running).
type cooldown struct {
	timer stopper
}

// NewManager returns a Manager that keeps each released resource excluded
// for d. With d <= 0 the Manager does nothing, so a configured cooldown of
// zero can mean "off" without changing the wiring. It panics if controller
// is nil, since the mistake would otherwise surface only as panics
// swallowed by the event dispatcher.
func NewManager[ID comparable](controller LifecycleController[ID], d time.Duration) *Manager[ID] {
	if controller == nil {
		panic("cooldown: NewManager with nil controller")
	}
	return &Manager[ID]{
		controller: controller,
		duration:   d,
		afterFunc:  realAfterFunc,
		cooling:    make(map[ID]*cooldown),
	}
}

// OnEvent implements events.Observer: a release excludes the resource and
// starts its cooldown; every other event is ignored.
//
// If Exclude fails, no Include is scheduled: the resource was acquired
// again or removed before the event arrived, or someone else excluded it,
// and including it later would undo their decision. If the resource is
// already cooling (someone included and re-acquired it early), the
// cooldown restarts from now.
func (m *Manager[ID]) OnEvent(e events.Event[ID]) {
	if e.Type != events.EventRelease || m.duration <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if m.controller.Exclude(e.ID) != nil {
		return
	}
	if previous := m.cooling[e.ID]; previous != nil {
		previous.timer.Stop()
	}
	c := &cooldown{}
	m.cooling[e.ID] = c
	c.timer = m.afterFunc(m.duration, func() { m.expire(e.ID, c) })
}

// expire ends cooldown c of resource id. The Include error is dropped: it
// means the resource was removed, was included by someone else, or the
// scheduler was shut down, and in each case there is nothing left to do.
func (m *Manager[ID]) expire(id ID, c *cooldown) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cooling[id] != c { // restarted, or cancelled by Close
		return
	}
	delete(m.cooling, id)
	_ = m.controller.Include(id)
}

// Cooling returns the number of resources this Manager has excluded and
// not yet included.
func (m *Manager[ID]) Cooling() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cooling)
}

// Close stops all pending cooldown timers and makes later events no-ops,
// so that no timer outlives the program part that owns the Manager. Once
// Close returns, the Manager never calls the controller again. It is
// idempotent.
//
// Close does not include the resources that were cooling: it returns their
// keys, in no particular order, and they stay excluded. A program that
// keeps using the scheduler should Include them itself.
func (m *Manager[ID]) Close() []ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	interrupted := make([]ID, 0, len(m.cooling))
	for id, c := range m.cooling {
		c.timer.Stop()
		interrupted = append(interrupted, id)
	}
	clear(m.cooling)
	return interrupted
}
