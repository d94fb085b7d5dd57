package shard

import (
	"errors"
	"testing"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/node"
)

// Exclude, Include and Suspend move a node between the heap and the
// rests, refuse the states they do not apply to with their sentinel
// errors, changing nothing, and report a rest they found over.
func TestTransitionsMoveANodeAndReportTheRestsTheyEnd(t *testing.T) {
	s, ns, _ := newShard(t, 1, 2)
	a := ns[0]
	var c Change
	var err error
	step(s, func() { c, err = s.Exclude(a, 0) })
	if err != nil || a.State != node.Excluded || s.Heap.Len() != 1 || c.Resumed != 0 {
		t.Fatalf("Exclude of an active node: %v, state %v, heap %d, %+v", err, a.State, s.Heap.Len(), c)
	}
	step(s, func() { _, err = s.Exclude(a, 0) })
	if !errors.Is(err, crserrors.ErrResourceNotActive) || a.State != node.Excluded {
		t.Fatalf("Exclude of an excluded node: %v, state %v", err, a.State)
	}
	step(s, func() { c, err = s.Include(a, 0) })
	if err != nil || a.State != node.Active || s.Heap.Len() != 2 {
		t.Fatalf("Include of an excluded node: %v, state %v, heap %d", err, a.State, s.Heap.Len())
	}
	step(s, func() { _, err = s.Include(a, 0) })
	if !errors.Is(err, crserrors.ErrResourceNotInactive) {
		t.Fatalf("Include of an active node: %v", err)
	}
	step(s, func() { c = s.Suspend(a, 0, 100) })
	if a.State != node.Resting || a.RestUntil != 100 || c.RestWas != 0 || s.Heap.Len() != 1 {
		t.Fatalf("Suspend: state %v until %d, %+v, heap %d", a.State, a.RestUntil, c, s.Heap.Len())
	}
	step(s, func() { c, err = s.Include(a, 150) }) // its rest is over: reported
	if err != nil || c.Resumed != 1 || c.RestWas != 100 || a.RestUntil != 0 || a.State != node.Active {
		t.Fatalf("Include after the rest ended: %v, %+v, until %d, state %v", err, c, a.RestUntil, a.State)
	}
}

// A transition whose comparator panics is undone whole: the node is
// back where it was, in the heap.
func TestAPanickingExcludeLeavesTheNodeActive(t *testing.T) {
	s, ns, cmp := newShard(t, 1, 2, 3)
	cmp.boom = true
	if !step(s, func() { _, _ = s.Exclude(ns[1], 0) }) {
		t.Fatal("the comparator did not panic")
	}
	cmp.boom = false
	step(s, func() { s.Repair(nil) })
	if ns[1].State != node.Active || s.Heap.Len() != 3 || s.Best() != ns[0] {
		t.Fatalf("after a panicking Exclude: state %v, heap %d", ns[1].State, s.Heap.Len())
	}
}

// Remove takes a node without holders out of the heap and the map, and
// lets one with holders drain, its key kept; either way the pool is
// smaller by one.
func TestRemoveTakesANodeOutOrLetsAHeldOneDrain(t *testing.T) {
	s, ns, _ := newShard(t, 1, 2)
	a, b := ns[0], ns[1]
	s.nodes.Insert(a.Key, a)
	s.nodes.Insert(b.Key, b)
	s.pool.Size.Store(2)
	take(s, a)
	step(s, func() { s.Remove(a) })
	step(s, func() { s.Remove(b) })
	if a.State != node.Draining || !a.Leaving.Load() || b.State != node.Removed || s.Heap.Len() != 0 || s.pool.Size.Load() != 0 {
		t.Fatalf("after Remove: held %v (leaving %v), free %v, heap %d, size %d", a.State, a.Leaving.Load(), b.State, s.Heap.Len(), s.pool.Size.Load())
	}
	if _, ok := s.nodes.Get(a.Key); !ok {
		t.Fatal("a draining node's key left the map")
	}
	if _, ok := s.nodes.Get(b.Key); ok {
		t.Fatal("a removed node's key stayed in the map")
	}
}

// Update moves an active node in the heap by its new value, and a
// capacity of more slots makes a held node active again.
func TestUpdateMovesANodeByItsNewValueAndCapacity(t *testing.T) {
	s, ns, _ := newShard(t, 1, 2)
	a, b := ns[0], ns[1]
	step(s, func() { s.Update(a, 3, 1, nil, at(0)) })
	if s.Best() != b || a.Value != 3 {
		t.Fatalf("after updating the top to 3: top %v, value %v", s.Best().Value, a.Value)
	}
	take(s, b)
	step(s, func() { s.Update(b, 2, 2, nil, at(0)) })
	if b.State != node.Active || s.Best() != b {
		t.Fatalf("a held node given a second slot: state %v", b.State)
	}
}

// at is a Clock stopped at its value.
type at int64

func (a at) Now() int64 { return int64(a) }

// Insert puts a new node in the map and the heap, and refuses a key
// taken, changing nothing; EndRest ends a rest only once it is over.
func TestInsertRefusesATakenKeyAndEndRestWaitsForTheRestsEnd(t *testing.T) {
	s, ns, _ := newShard(t, 1)
	s.nodes.Insert(ns[0].Key, ns[0])
	fresh, twin := node.New(5, 7, 0, 1), node.New(6, 7, 0, 1)
	var present *node.Node[int, int]
	step(s, func() { present = s.Insert(fresh) })
	if present != nil || fresh.State != node.Active || s.Heap.Len() != 2 || s.pool.Size.Load() != 1 {
		t.Fatalf("Insert of a new key: present %v, state %v, heap %d, size %d", present, fresh.State, s.Heap.Len(), s.pool.Size.Load())
	}
	step(s, func() { present = s.Insert(twin) })
	if present != fresh || twin.State == node.Active || s.Heap.Len() != 2 || s.pool.Size.Load() != 1 {
		t.Fatalf("Insert of a taken key: present %v, heap %d, size %d", present, s.Heap.Len(), s.pool.Size.Load())
	}
	step(s, func() { s.Suspend(fresh, 0, 100) })
	var c Change
	var over bool
	step(s, func() { c, over = s.EndRest(fresh, 99) })
	if over || fresh.State != node.Resting {
		t.Fatalf("EndRest before the rest's end: over %v, state %v", over, fresh.State)
	}
	step(s, func() { c, over = s.EndRest(fresh, 100) })
	if !over || c.Resumed != 1 || c.RestWas != 100 || fresh.State != node.Active {
		t.Fatalf("EndRest at the rest's end: over %v, %+v, state %v", over, c, fresh.State)
	}
}

// Rebudget stops at an error from its change, and otherwise puts the
// node back in the heap's order.
func TestRebudgetStopsAtItsChangesError(t *testing.T) {
	s, ns, _ := newShard(t, 1, 2)
	e := &node.Lease{Token: 1}
	want := errors.New("refused")
	var err error
	step(s, func() { _, err = s.Rebudget(ns[0], e, 0, func() error { return want }) })
	if !errors.Is(err, want) {
		t.Fatalf("Rebudget = %v, want its change's error", err)
	}
	step(s, func() { _, err = s.Rebudget(ns[1], e, 0, func() error { ns[1].Value = 0; return nil }) })
	if err != nil || s.Best() != ns[1] {
		t.Fatalf("Rebudget after a change that makes the node best: %v, top %v", err, s.Best().Value)
	}
}
