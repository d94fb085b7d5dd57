package scheduler_test

import (
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
)

func TestHotPathsDoNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	shared := newScheduler(t, baseConfig(8, config.Shared))
	exclusive := newScheduler(t, baseConfig(8, config.Exclusive))
	addAll(t, shared, numbered(64)...)
	addAll(t, exclusive, numbered(64)...)
	// Held as an interface value: converting a string to an interface at
	// each call is the caller's allocation before Go 1.26, not the
	// scheduler's.
	var user acquire.AffinityIdentifier = acquire.StringIdentifier("user-42")
	updated := w("w9", 9)
	tests := map[string]func(){
		"Update":         func() { _ = shared.Update(updated) },
		"shared Acquire": func() { _, _ = shared.Acquire() },
		"exclusive Acquire+Release": func() {
			v, _ := exclusive.Acquire()
			_ = exclusive.Release(v.ID)
		},
		"AcquireByAffinity": func() { _, _ = shared.AcquireByAffinity(user) },
		"Get":               func() { _, _ = shared.Get("w7") },
	}
	for name, f := range tests {
		if allocs := testing.AllocsPerRun(1000, f); allocs != 0 {
			t.Errorf("%s: %.1f allocs per call, want 0", name, allocs)
		}
	}
}
