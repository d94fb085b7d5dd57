package events_test

import (
	"testing"

	"github.com/crsched/crs/events"
)

// Code written for CRS may index an array by event type or store the
// values, so CRS's types keep its values, order and names, and the types
// crs adds come after them.
func TestEventTypesKeepCRSValuesAndNames(t *testing.T) {
	tests := []struct {
		typ   events.EventType
		value int
		name  string
	}{
		{events.EventAdd, 0, "Add"},
		{events.EventAcquire, 1, "Acquire"},
		{events.EventRelease, 2, "Release"},
		{events.EventExclude, 3, "Exclude"},
		{events.EventInclude, 4, "Include"},
		{events.EventRemove, 5, "Remove"},
		{events.EventUpdate, 6, "Update"},
		{events.EventExpire, 7, "Expire"},
		{events.EventSuspend, 8, "Suspend"},
		{events.EventEject, 9, "Eject"},
		{events.EventResume, 10, "Resume"},
	}
	for _, tt := range tests {
		if int(tt.typ) != tt.value || tt.typ.String() != tt.name {
			t.Errorf("%s = %d, want %s = %d", tt.typ, int(tt.typ), tt.name, tt.value)
		}
	}
}

func TestUnknownEventTypesAreNamedUnknown(t *testing.T) {
	for _, typ := range []events.EventType{-1, events.EventResume + 1, 999} {
		if got := typ.String(); got != "Unknown" {
			t.Errorf("EventType(%d).String() = %q, want Unknown", int(typ), got)
		}
	}
}

func TestObserverFuncCallsTheFunction(t *testing.T) {
	var got []events.Event[string]
	var obs events.Observer[string] = events.ObserverFunc[string](func(e events.Event[string]) { got = append(got, e) })
	obs.OnEvent(events.Event[string]{Type: events.EventAcquire, ID: "a"})
	if len(got) != 1 || got[0].Type != events.EventAcquire || got[0].ID != "a" {
		t.Fatalf("observer saw %v, want one Acquire of a", got)
	}
}
