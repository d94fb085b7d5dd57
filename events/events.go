// Package events defines the lifecycle events a scheduler reports to its
// observers.
//
// Events are telemetry: they are delivered asynchronously through a bounded
// queue, after the operation that caused them has released its locks, and
// they are dropped (and counted, see stats.Stats.DroppedEvents) when the
// queue is full. Nothing that must happen may depend on an event arriving.
package events

import "strconv"

// EventType names a lifecycle transition.
type EventType uint8

const (
	EventAdd EventType = iota + 1
	EventAcquire
	EventRelease
	EventExclude
	EventInclude
	EventRemove
	EventUpdate
	// EventExpire: a lease passed its deadline and was reclaimed.
	EventExpire
	// EventSuspend: a resource was suspended (Suspend, or a cooldown).
	EventSuspend
	// EventEject: a resource was ejected after repeated failures.
	EventEject
	// EventResume: a suspension or ejection ended and the resource is
	// available again (unless excluded, or every slot is taken).
	EventResume
)

var typeNames = [...]string{
	EventAdd:     "add",
	EventAcquire: "acquire",
	EventRelease: "release",
	EventExclude: "exclude",
	EventInclude: "include",
	EventRemove:  "remove",
	EventUpdate:  "update",
	EventExpire:  "expire",
	EventSuspend: "suspend",
	EventEject:   "eject",
	EventResume:  "resume",
}

// String returns the lower-case name of the event type, e.g. "acquire".
func (t EventType) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Event is one lifecycle transition of the resource with key ID.
type Event[ID comparable] struct {
	Type EventType
	ID   ID
}

// Observer receives events on the scheduler's dispatcher goroutine, one at
// a time and in the order they were queued. OnEvent must not block for
// long: while it runs, later events wait in the queue and may be dropped.
// A panic in OnEvent is recovered and counted (stats.Stats.ObserverPanics).
// OnEvent may call the scheduler.
type Observer[ID comparable] interface {
	OnEvent(Event[ID])
}

// ObserverFunc adapts a function to the Observer interface.
type ObserverFunc[ID comparable] func(Event[ID])

// OnEvent calls f(e).
func (f ObserverFunc[ID]) OnEvent(e Event[ID]) { f(e) }
