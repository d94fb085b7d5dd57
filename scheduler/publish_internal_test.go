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
	if !sh.Peeked {
		t.Fatal("the Shared policy's shards must publish their top")
	}
	looked := 0
	sh.Lock()
	s.setHooks(hooks{publishing: func() {
		looked++
		if sh.Active.Load() == 0 && sh.Top.Load() != nil {
			t.Errorf("mid-publish (look %d): the count says empty but the top is still there", looked)
		}
	}})
	sh.Unlock()
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

// A caller that takes no lock (peek) reads a shard's version, its top, the
// top's value and the version again, and trusts the pair only if the
// version did not move. A node's value is published for such callers
// only while it is, or as it becomes, the top; so a caller still holding
// a node that left the top and came back with a new value must learn it
// from the version, or it would pair the node with a value it was never
// the top with. Each case ends with "a" the top again at priority 0.
func TestAReaderHoldingAnOldTopSeesItsValueChange(t *testing.T) {
	cases := map[string][]func(s *Scheduler[*prio, string]) error{
		"excluded, updated, included": {
			func(s *Scheduler[*prio, string]) error { return s.Exclude("a") },
			func(s *Scheduler[*prio, string]) error { return s.Update(&prio{"a", 0}) },
			func(s *Scheduler[*prio, string]) error { return s.Include("a") },
		},
		"updated away from the top and back": {
			func(s *Scheduler[*prio, string]) error { return s.Update(&prio{"a", 3}) },
			func(s *Scheduler[*prio, string]) error { return s.Update(&prio{"a", 0}) },
		},
		"updated while the top": {
			func(s *Scheduler[*prio, string]) error { return s.Update(&prio{"a", 0}) },
		},
	}
	for _, ordering := range []config.Ordering{config.ShardOrder, config.GlobalOrder} {
		for name, steps := range cases {
			s := sharedAB(t, ordering)
			sh := &s.shards[0]
			before, top := sh.Version.Load(), sh.Top.Load()
			for _, step := range steps {
				if err := step(s); err != nil {
					t.Fatal(err)
				}
			}
			if got := top.Load(); got.p != 1 && sh.Version.Load() == before {
				t.Errorf("%v, %s: the old top's value went from 1 to %d and the version stayed %d", ordering, name, got.p, before)
			}
			if now := sh.Top.Load(); now != top || now.Load().p != 0 {
				t.Errorf("%v, %s: the top is %q at %d, want a at 0", ordering, name, now.Key, now.Load().p)
			}
		}
	}
}

// Under GlobalOrder a caller compares the shards' tops by the values it
// read without the lock, and takes the best only if the shards' versions
// are still what they were when it read them (see sweepGlobal). So a
// version read at any point where a reader may look, if it is even and
// still the version once the change is done, must come with the top and
// the value the change leaves. Moving the version before publishing a
// value, rather than keeping it odd while publishing, broke this: a
// reader between the two read the new version and the old value.
func TestGlobalOrderReadersThatSeeTheFinalVersionSeeTheFinalTop(t *testing.T) {
	s := sharedAB(t, config.GlobalOrder)
	sh := &s.shards[0]
	type look struct {
		version uint64
		top     string
		p       int
	}
	var looks []look
	sh.Lock()
	s.setHooks(hooks{publishing: func() {
		l := look{version: sh.Version.Load()}
		if n := sh.Top.Load(); n != nil {
			l.top, l.p = n.Key, n.Load().p
		}
		looks = append(looks, l)
	}})
	sh.Unlock()
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"Update of the top that keeps it the top", func() error { return s.Update(&prio{"a", 0}) }},
		{"Update to the top", func() error { return s.Update(&prio{"b", -1}) }},
		{"Update away from the top", func() error { return s.Update(&prio{"b", 5}) }},
		{"Exclude", func() error { return s.Exclude("a") }},
		{"Update while excluded", func() error { return s.Update(&prio{"a", -2}) }},
		{"Include", func() error { return s.Include("a") }},
	} {
		looks = looks[:0]
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		final := look{version: sh.Version.Load()}
		if n := sh.Top.Load(); n != nil {
			final.top, final.p = n.Key, n.Load().p
		}
		for _, l := range looks {
			if l.version&1 == 0 && l.version == final.version && l != final {
				t.Errorf("%s: a reader saw version %d with %s at %d, and the change left %s at %d under the same version",
					step.name, l.version, l.top, l.p, final.top, final.p)
			}
		}
	}
}

// sharedAB returns a one-shard Shared scheduler of prio values in the
// given ordering, holding a (priority 1, the top) and b (2).
func sharedAB(t *testing.T, ordering config.Ordering) *Scheduler[*prio, string] {
	t.Helper()
	s, err := New(config.Config[*prio, string]{
		HeapCount:     1,
		AcquirePolicy: config.Shared,
		Ordering:      ordering,
		Comparator:    func(a, b *prio) int { return cmp.Compare(a.p, b.p) },
		KeyFunc:       func(v *prio) string { return v.key },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	if err := s.BatchAdd([]*prio{{"a", 1}, {"b", 2}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Remove keeps its shard's version odd from its start to its end, so that
// readers without the lock never see it in part (the count Len reads
// drops after the top changes). Publishing the staged value of the node
// that becomes the top, within it, must not end that span early.
func TestAStagedValuePublishedWithinARemoveLeavesTheRemoveInProgress(t *testing.T) {
	for _, ordering := range []config.Ordering{config.ShardOrder, config.GlobalOrder} {
		s := sharedAB(t, ordering)
		if err := s.Update(&prio{"b", 3}); err != nil { // b stays below a: staged
			t.Fatal(err)
		}
		sh := &s.shards[0]
		var looks, even int
		sh.Lock()
		s.setHooks(hooks{publishing: func() {
			looks++
			if sh.Version.Load()&1 == 0 {
				even++
			}
		}})
		sh.Unlock()
		if err := s.Remove("a"); err != nil {
			t.Fatal(err)
		}
		if looks < 2 || even > 0 {
			t.Errorf("%v: within Remove, %d of %d looks found the version even (the change not in progress)", ordering, even, looks)
		}
		if v, ok := s.Peek(0); !ok || v.key != "b" || v.p != 3 {
			t.Errorf("%v: after Remove a lock-free reader reads %+v, %v; want b at 3", ordering, v, ok)
		}
	}
}
