package prometheus

import (
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
)

// eventCounters maps each event type to the value of its type label and
// its count in a TelemetryStats. The label is the core's name for the
// type (events.EventType.String) in lower case: the label values stayed
// as they were when the core took CRS's capitalised names, so that
// queries and dashboards keep working (drift_test.go checks the two
// agree). Adding an event type is one line here, once TelemetryStats has
// a field for it.
var eventCounters = []struct {
	typ   events.EventType
	label string
	count func(*metrics.TelemetryStats) uint64
}{
	{events.EventAdd, "add", func(t *metrics.TelemetryStats) uint64 { return t.AddCount }},
	{events.EventAcquire, "acquire", func(t *metrics.TelemetryStats) uint64 { return t.AcquireCount }},
	{events.EventRelease, "release", func(t *metrics.TelemetryStats) uint64 { return t.ReleaseCount }},
	{events.EventExclude, "exclude", func(t *metrics.TelemetryStats) uint64 { return t.ExcludeCount }},
	{events.EventInclude, "include", func(t *metrics.TelemetryStats) uint64 { return t.IncludeCount }},
	{events.EventRemove, "remove", func(t *metrics.TelemetryStats) uint64 { return t.RemoveCount }},
	{events.EventUpdate, "update", func(t *metrics.TelemetryStats) uint64 { return t.UpdateCount }},
	{events.EventExpire, "expire", func(t *metrics.TelemetryStats) uint64 { return t.ExpireCount }},
	{events.EventSuspend, "suspend", func(t *metrics.TelemetryStats) uint64 { return t.SuspendCount }},
	{events.EventEject, "eject", func(t *metrics.TelemetryStats) uint64 { return t.EjectCount }},
	{events.EventResume, "resume", func(t *metrics.TelemetryStats) uint64 { return t.ResumeCount }},
}
