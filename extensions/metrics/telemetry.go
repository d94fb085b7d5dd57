package metrics

import (
	"sync/atomic"

	"github.com/crsched/crs/events"
)

// cacheLine is the stride between counters. 64 bytes is the line size of
// current amd64 and most arm64 cores.
const cacheLine = 64

// paddedCounter fills a cache line, so that the dispatcher incrementing one
// counter does not invalidate the line a reader is loading another from.
type paddedCounter struct {
	n atomic.Uint64
	_ [cacheLine - 8]byte
}

// lastKnownEvent is the highest event type this package counts. Types
// added to the core later are ignored rather than misfiled, until a
// counter and a TelemetryStats field are added for them here.
const lastKnownEvent = events.EventResume

// TelemetryObserver counts the events of a scheduler whose keys have type
// ID. The zero value is ready to use; it must not be copied after first
// use.
type TelemetryObserver[ID comparable] struct {
	// Keeps the first counter off the line of whatever precedes the
	// observer in memory.
	_ [cacheLine]byte
	// counts is indexed by events.EventType.
	counts [lastKnownEvent + 1]paddedCounter
}

// NewTelemetryObserver returns an observer with all counts at zero.
func NewTelemetryObserver[ID comparable]() *TelemetryObserver[ID] {
	return &TelemetryObserver[ID]{}
}

// OnEvent implements events.Observer. It is safe for concurrent use, so one
// observer may also be shared by several schedulers to count them together.
func (o *TelemetryObserver[ID]) OnEvent(e events.Event[ID]) {
	if uint(e.Type) > uint(lastKnownEvent) { // negative ones too
		return
	}
	o.counts[e.Type].n.Add(1)
}

// TelemetryStats holds the number of events of each type observed so far.
type TelemetryStats struct {
	AddCount     uint64
	AcquireCount uint64
	ReleaseCount uint64
	ExcludeCount uint64
	IncludeCount uint64
	RemoveCount  uint64
	UpdateCount  uint64
	// ExpireCount counts leases reclaimed at their deadline
	// (events.EventExpire).
	ExpireCount uint64
	// SuspendCount, EjectCount and ResumeCount count resources put to
	// rest by a suspension or cooldown, ejected after failures, and back
	// from either (events.EventSuspend, EventEject, EventResume).
	SuspendCount uint64
	EjectCount   uint64
	ResumeCount  uint64
}

// Snapshot returns the current counts. Each count is read atomically, but
// not all at the same instant: events arriving during the call may be in
// some fields and not others.
func (o *TelemetryObserver[ID]) Snapshot() TelemetryStats {
	load := func(t events.EventType) uint64 { return o.counts[t].n.Load() }
	return TelemetryStats{
		AddCount:     load(events.EventAdd),
		AcquireCount: load(events.EventAcquire),
		ReleaseCount: load(events.EventRelease),
		ExcludeCount: load(events.EventExclude),
		IncludeCount: load(events.EventInclude),
		RemoveCount:  load(events.EventRemove),
		UpdateCount:  load(events.EventUpdate),
		ExpireCount:  load(events.EventExpire),
		SuspendCount: load(events.EventSuspend),
		EjectCount:   load(events.EventEject),
		ResumeCount:  load(events.EventResume),
	}
}
