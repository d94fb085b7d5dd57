package shard

import (
	"testing"

	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
)

// panicky is a comparator by value that panics while boom is set.
type panicky struct{ boom bool }

func (p *panicky) compare(a, b int) int {
	if p.boom {
		panic("comparator")
	}
	return a - b
}

// newShard is an exclusive shard holding nodes of the given values, all
// active, and the comparator that orders them.
func newShard(t *testing.T, values ...int) (*Shard[int, int], []*node.Node[int, int], *panicky) {
	t.Helper()
	cmp := &panicky{}
	s := &Shard[int, int]{}
	s.Init(0, cmp.compare, true, false, true, &Pool{}, lookup.New[int, int]())
	var ns []*node.Node[int, int]
	for i, v := range values {
		n := node.New(v, i, 0, 1)
		s.Lock()
		s.Save(n, 0)
		s.Activate(n)
		s.Commit()
		s.Unlock()
		ns = append(ns, n)
	}
	return s, ns, cmp
}

// step runs f as a step on s, with the lock held and Unlock deferred, and
// reports whether it panicked.
func step(s *Shard[int, int], f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	s.Lock()
	defer s.Unlock()
	f()
	return false
}

// take holds a, the top of s, in a step of its own: it leaves the heap
// held, with no comparison.
func take(s *Shard[int, int], a *node.Node[int, int]) {
	step(s, func() {
		s.Save(a, SavingHolders)
		a.Holders++
		s.Holders++
		s.Deactivate(a, node.Held)
		s.Commit()
	})
}

func TestUnlockPutsBackTheNodeAStepSavedWhenTheComparatorPanics(t *testing.T) {
	s, ns, cmp := newShard(t, 1, 2, 3)
	a := ns[0]
	take(s, a)
	cmp.boom = true
	panicked := step(s, func() { // its release: back into the heap
		s.Save(a, SavingHolders)
		a.Holders--
		s.Holders--
		s.Activate(a)
		s.Commit()
	})
	cmp.boom = false
	if !panicked {
		t.Fatal("the release did not compare: the test misses its target")
	}
	if a.State != node.Held || a.Index >= 0 || a.Holders != 1 || s.Holders != 1 || s.Held != 1 {
		t.Fatalf("after the undo: state %v, index %d, holders %d (shard %d), held %d; want held, off the heap, 1, 1, 1",
			a.State, a.Index, a.Holders, s.Holders, s.Held)
	}
	if s.Heap.Len() != 2 || s.Active.Load() != 2 || !s.Broken() {
		t.Fatalf("heap %d, published %d, broken %v; want 2, 2, true", s.Heap.Len(), s.Active.Load(), s.Broken())
	}
}

func TestACommittedStepStandsWhateverPanicsAfterIt(t *testing.T) {
	s, ns, cmp := newShard(t, 1, 2, 3)
	b := ns[1]
	panicked := step(s, func() {
		s.Save(b, 0)
		s.Deactivate(b, node.Excluded)
		s.Commit()
		cmp.boom = true
		s.Fix(ns[0]) // a later comparison, in the same step, panics
	})
	cmp.boom = false
	if !panicked {
		t.Fatal("nothing panicked: the test misses its target")
	}
	if b.State != node.Excluded || b.Index >= 0 || s.Excluded != 1 || s.Heap.Len() != 2 {
		t.Fatalf("b %v at %d, excluded %d, heap %d; want the exclusion to stand", b.State, b.Index, s.Excluded, s.Heap.Len())
	}
}

func TestARollbackPutsBackARestAndItsEjectionSlot(t *testing.T) {
	s, ns, cmp := newShard(t, 1, 2)
	a := ns[0]
	s.pool.Ejected.Add(1) // the slot of the ejection below, reserved
	step(s, func() {
		s.Save(a, 0)
		s.SetRest(a, 100, node.Ejected)
		s.Deactivate(a, node.Resting)
		s.Commit()
	})
	cmp.boom = true
	panicked := step(s, func() { // the ejection ends early, then the comparator panics
		s.Save(a, 0)
		s.SetRest(a, 0, node.NoRest)
		s.Place(a, 50)
		s.Commit()
	})
	cmp.boom = false
	if !panicked {
		t.Fatal("placing a did not compare: the test misses its target")
	}
	if a.Rest != node.Ejected || a.RestUntil != 100 || a.State != node.Resting || s.Resting[node.Ejected] != 1 {
		t.Fatalf("a rests %v until %d, %v; want ejected until 100, resting", a.Rest, a.RestUntil, a.State)
	}
	if got := s.pool.Ejected.Load(); got != 1 {
		t.Fatalf("ejected slots %d, want 1: the ejection put back keeps its slot", got)
	}
}

func TestARollbackPutsBackWhatTheStepSaidItWouldChange(t *testing.T) {
	s, ns, cmp := newShard(t, 1, 2)
	a := ns[0]
	take(s, a)
	a.SetHealth(1, 0)
	cmp.boom = true
	panicked := step(s, func() { // a failed release: one failure more, a new value
		s.Save(a, SavingHealth|SavingValue|SavingHolders)
		a.SetHealth(2, 1)
		a.Stage(7)
		a.Holders--
		s.Holders--
		s.Activate(a)
		s.Commit()
	})
	cmp.boom = false
	if !panicked {
		t.Fatal("the release did not compare: the test misses its target")
	}
	if f, e := a.Health(); f != 1 || e != 0 {
		t.Fatalf("health %d, %d after the undo, want 1, 0", f, e)
	}
	if a.Value != 1 || a.Holders != 1 {
		t.Fatalf("value %d, holders %d after the undo, want 1, 1", a.Value, a.Holders)
	}
}

func TestARolledBackInsertTakesTheKeyOutOfTheMap(t *testing.T) {
	s, _, cmp := newShard(t, 1, 2, 3)
	n := node.New(0, 9, 0, 1)
	cmp.boom = true
	panicked := step(s, func() {
		if _, ok := s.nodes.Insert(n.Key, n); !ok {
			t.Fatal("key 9 taken")
		}
		s.Save(n, SavingInsert)
		s.Activate(n)
		s.Commit()
	})
	cmp.boom = false
	if !panicked {
		t.Fatal("the insert did not compare: the test misses its target")
	}
	if _, ok := s.nodes.Get(9); ok {
		t.Fatal("the key of the rolled back insert is still in the map")
	}
	if n.State != node.Removed || n.Index >= 0 || s.Heap.Len() != 3 {
		t.Fatalf("node %v at %d, heap %d; want removed, off the heap, 3", n.State, n.Index, s.Heap.Len())
	}
}

func TestARolledBackBatchLeavesNoneOfItsNodesInTheHeapOrTheMap(t *testing.T) {
	s, _, cmp := newShard(t, 5, 6)
	slab := []node.Node[int, int]{{Key: 10, Index: -1}, {Key: 11, Index: -1}, {Key: 12, Index: -1, Shard: 1}}
	for i := range slab {
		slab[i].Init(i, false)
	}
	cmp.boom = true
	panicked := step(s, func() {
		s.nodes.InsertAll(slab)
		s.SaveBatch(slab)
		s.Risk()
		for i := range slab[:2] { // the third belongs to another shard
			s.Heap.Append(&slab[i])
			slab[i].State = node.Active
		}
		s.Order(2)
		s.Safe()
		s.Commit()
	})
	cmp.boom = false
	if !panicked {
		t.Fatal("the batch did not compare: the test misses its target")
	}
	for i := range slab[:2] {
		if n := &slab[i]; n.State != node.Removed || n.Index >= 0 {
			t.Fatalf("node %d: %v at %d; want removed, off the heap", n.Key, n.State, n.Index)
		}
		if _, ok := s.nodes.Get(slab[i].Key); ok {
			t.Fatalf("node %d is still in the map", slab[i].Key)
		}
	}
	if _, ok := s.nodes.Get(12); !ok {
		t.Fatal("another shard's node of the batch was taken out: that shard's undo does it")
	}
	if s.Heap.Len() != 2 || s.Active.Load() != 2 {
		t.Fatalf("heap %d, published %d; want the two nodes from before", s.Heap.Len(), s.Active.Load())
	}
}

func TestAPanicInAnOuterRiskedStretchLeavesTheShardBroken(t *testing.T) {
	s, _, _ := newShard(t, 1, 2)
	panicked := step(s, func() {
		s.Risk()
		s.Best() // an inner stretch that ends safely
		panic("after the inner stretch, before the outer one ends")
	})
	if !panicked || !s.Broken() {
		t.Fatalf("panicked %v, broken %v: a panic inside Risk..Safe must leave the shard broken", panicked, s.Broken())
	}
	s.Lock()
	s.Repair(nil)
	s.Unlock()
	if s.Broken() {
		t.Fatal("Repair left the shard broken")
	}
}
