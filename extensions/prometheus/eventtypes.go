package prometheus

import (
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
)

// eventCounters maps each event type to its count in a TelemetryStats.
// The value of the type label is the core's own name for the type
// (events.EventType.String), so the two cannot disagree. Adding an event
// type is one line here, once TelemetryStats has a field for it.
var eventCounters = []struct {
	typ   events.EventType
	count func(*metrics.TelemetryStats) uint64
}{
	{events.EventAdd, func(t *metrics.TelemetryStats) uint64 { return t.AddCount }},
	{events.EventAcquire, func(t *metrics.TelemetryStats) uint64 { return t.AcquireCount }},
	{events.EventRelease, func(t *metrics.TelemetryStats) uint64 { return t.ReleaseCount }},
	{events.EventExclude, func(t *metrics.TelemetryStats) uint64 { return t.ExcludeCount }},
	{events.EventInclude, func(t *metrics.TelemetryStats) uint64 { return t.IncludeCount }},
	{events.EventRemove, func(t *metrics.TelemetryStats) uint64 { return t.RemoveCount }},
	{events.EventUpdate, func(t *metrics.TelemetryStats) uint64 { return t.UpdateCount }},
	{events.EventExpire, func(t *metrics.TelemetryStats) uint64 { return t.ExpireCount }},
	{events.EventSuspend, func(t *metrics.TelemetryStats) uint64 { return t.SuspendCount }},
	{events.EventEject, func(t *metrics.TelemetryStats) uint64 { return t.EjectCount }},
	{events.EventResume, func(t *metrics.TelemetryStats) uint64 { return t.ResumeCount }},
}
