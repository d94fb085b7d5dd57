// Package events defines the lifecycle events a scheduler reports to its
// observers.
//
// Events are telemetry: they are delivered asynchronously through a bounded
// queue, after the operation that caused them has released its locks, and
// they are dropped (and counted, see stats.Stats.DroppedEvents) when the
// queue is full. Nothing that must happen may depend on an event arriving.
package events

// EventType names a lifecycle transition. The types CRS v1.2.3 had keep
// its values (EventAdd is 0) and names, so code written for it may index
// arrays by them; the types crs adds follow them.
type EventType int

const (
	EventAdd EventType = iota
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
	// available again (unless excluded, or every slot is taken), reported
	// once, by its timer or by the operation on the resource that finds
	// it over first (a release, a cooldown, a failure, an update, a
	// settlement, Suspend, Exclude or Include), whatever the timer's
	// timing. One that Exclude or Include cuts short, or of a resource
	// removed meanwhile, is not reported.
	EventResume
)

var typeNames = [...]string{
	EventAdd:     "Add",
	EventAcquire: "Acquire",
	EventRelease: "Release",
	EventExclude: "Exclude",
	EventInclude: "Include",
	EventRemove:  "Remove",
	EventUpdate:  "Update",
	EventExpire:  "Expire",
	EventSuspend: "Suspend",
	EventEject:   "Eject",
	EventResume:  "Resume",
}

// String returns the name of the event type, e.g. "Acquire", or "Unknown"
// for a value that names none, as CRS did.
func (t EventType) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "Unknown"
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
// OnEvent may call the scheduler, Shutdown included: from an observer,
// Shutdown returns without waiting for the remaining deliveries, which
// follow once OnEvent returns; events after Shutdown are dropped and
// counted (stats.Stats.DroppedEvents).
type Observer[ID comparable] interface {
	OnEvent(Event[ID])
}

// ObserverFunc adapts a function to the Observer interface.
type ObserverFunc[ID comparable] func(Event[ID])

// OnEvent calls f(e).
func (f ObserverFunc[ID]) OnEvent(e Event[ID]) { f(e) }
