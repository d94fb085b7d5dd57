package scheduler_test

import (
	"testing"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
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

// An expected refusal is part of normal operation (an empty pool, a race
// between Exclude and Acquire), so returning it must cost no allocation:
// it is the sentinel itself, not a wrapper built per call.
func TestExpectedErrorsDoNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	empty := newScheduler(t, baseConfig(8, config.Exclusive))
	pool := newScheduler(t, baseConfig(8, config.Exclusive))
	addAll(t, pool, w("active", 1), w("excluded", 2))
	if err := pool.Exclude("excluded"); err != nil {
		t.Fatal(err)
	}
	var user acquire.AffinityIdentifier = acquire.StringIdentifier("user-42")
	tests := map[string]func() error{
		"Acquire from an empty pool":           func() error { _, err := empty.Acquire(); return err },
		"AcquireByAffinity from an empty pool": func() error { _, err := empty.AcquireByAffinity(user); return err },
		"Get of an absent key":                 func() error { _, err := pool.Get("absent"); return err },
		"Release of an active resource":        func() error { return pool.Release("active") },
		"Exclude of an excluded resource":      func() error { return pool.Exclude("excluded") },
		"Include of an active resource":        func() error { return pool.Include("active") },
		"Remove of an absent key":              func() error { return pool.Remove("absent") },
	}
	for name, f := range tests {
		if f() == nil {
			t.Fatalf("%s: no error", name)
		}
		if allocs := testing.AllocsPerRun(1000, func() { _ = f() }); allocs != 0 {
			t.Errorf("%s: %.1f allocs per call, want 0", name, allocs)
		}
	}
}

// A batch allocates its nodes, its lookup tables and its shards' heap
// arrays in a few allocations whatever its size: a handful a shard at
// most, nothing per resource and nothing per lock it takes.
func TestBatchAddAllocatesAFewTimesAShard(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	const heaps, runs = 8, 5
	batch := numbered(1000)
	pools := make([]*scheduler.Scheduler[*worker, string], runs+1) // AllocsPerRun calls once more to warm up
	for i := range pools {
		pools[i] = newScheduler(t, baseConfig(heaps, config.Shared))
	}
	next := 0
	allocs := testing.AllocsPerRun(runs, func() {
		if err := pools[next].BatchAdd(batch); err != nil {
			t.Fatal(err)
		}
		next++
	})
	// One heap array a shard, the nodes, the lookup's tables (their
	// entries, their tags and their headers), the count of nodes a
	// shard: heaps + 5 at most.
	if allocs > heaps+5 {
		t.Errorf("BatchAdd of %d into %d shards: %.0f allocations, want at most %d", len(batch), heaps, allocs, heaps+5)
	}
}

// A value that is not one pointer word is copied for the readers that
// take no lock when its node first becomes a shard's top, and not again
// until the value changes: once the resources in use have been the top,
// neither the Shared policy's Acquire nor GlobalOrder's Acquire+Release
// allocates.
func TestValueCopiesAreMadeOncePerNodeAndValue(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked in the full run")
	}
	type item struct{ key, priority int }
	build := func(policy config.AcquirePolicy, order config.Ordering) *scheduler.Scheduler[item, int] {
		s, err := scheduler.New(config.Config[item, int]{
			HeapCount:     4,
			Comparator:    func(a, b item) int { return a.priority - b.priority },
			KeyFunc:       func(v item) int { return v.key },
			AcquirePolicy: policy,
			Ordering:      order,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		items := make([]item, 64)
		for i := range items {
			items[i] = item{i, i}
		}
		if err := s.BatchAdd(items); err != nil {
			t.Fatal(err)
		}
		return s
	}
	shared := build(config.Shared, config.ShardOrder)
	global := build(config.Exclusive, config.GlobalOrder)
	tests := map[string]func(){
		"shared Acquire": func() { _, _ = shared.Acquire() },
		"GlobalOrder Acquire+Release": func() {
			v, err := global.Acquire()
			if err != nil {
				t.Fatal(err)
			}
			if err := global.Release(v.key); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, f := range tests {
		if allocs := testing.AllocsPerRun(1000, f); allocs != 0 {
			t.Errorf("%s: %.1f allocs per call, want 0", name, allocs)
		}
	}
	if err := shared.Update(item{5, -1}); err != nil { // a new top: a new copy
		t.Fatal(err)
	}
	if v, err := shared.Acquire(); err != nil || v != (item{5, -1}) {
		t.Fatalf("shared Acquire after Update = %v, %v; want the updated top", v, err)
	}
}
