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
