// Package metrics counts scheduler events so that throughput can be read
// (or exported) at any rate without slowing the scheduler down.
//
// A TelemetryObserver is registered in config.Config.Observers. It keeps
// one atomic counter per event type, each on its own cache line: the
// dispatcher goroutine increments them while any number of readers call
// Snapshot, and neither side takes a lock or allocates.
//
// The counts are event counts, not operation counts. Events are delivered
// asynchronously and are dropped when the scheduler's event queue is full
// (see stats.Stats.DroppedEvents), so under overload the counters fall
// behind the operations that actually happened. Add DroppedEvents when an
// upper bound matters.
package metrics
