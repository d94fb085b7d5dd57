package scheduler

import (
	"cmp"
	"testing"

	"github.com/crsched/crs/config"
)

// A shard publishes two words for callers that take no lock: its count of
// active resources (Lease and AcquireContext read it to decide to wait,
// sweeps to skip the shard) and its top (the Shared policy's Acquire
// reads it). Each reader reads one of them, so the two must never say
// different things in the order that matters: a count of zero with a top
// still there let a Lease find the pool empty and fail, and an Acquire
// after it still get the resource just excluded (a history the
// linearizability checker in verify/ rejected). The hook runs inside
// publish, between its two stores, where a reader can look.
func TestPublishNeverShowsAnEmptyCountWithATop(t *testing.T) {
	s, err := New(config.Config[*int, int]{
		HeapCount:     1,
		AcquirePolicy: config.Shared,
		Comparator:    func(a, b *int) int { return cmp.Compare(*a, *b) },
		KeyFunc:       func(v *int) int { return *v },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	sh := &s.shards[0]
	if !sh.peeked {
		t.Fatal("the Shared policy's shards must publish their top")
	}
	looked := 0
	sh.mu.Lock()
	sh.publishing = func() {
		looked++
		if sh.active.Load() == 0 && sh.top.Load() != nil {
			t.Errorf("mid-publish (look %d): the count says empty but the top is still there", looked)
		}
	}
	sh.mu.Unlock()
	one, two := 1, 2
	for _, step := range []func() error{
		func() error { return s.Add(&one) },
		func() error { return s.Exclude(1) }, // empties the shard
		func() error { return s.Include(1) }, // fills it again
		func() error { return s.Add(&two) },
		func() error { return s.Remove(1) },
		func() error { return s.Suspend(2, 1<<40) }, // empties it
		func() error { return s.Remove(2) },
		func() error { return s.BatchAdd([]*int{&one, &two}) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if looked == 0 {
		t.Fatal("publish never ran the hook")
	}
}
