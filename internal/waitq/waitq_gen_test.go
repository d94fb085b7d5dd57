package waitq

import (
	"testing"
	"time"
)

// Tests added to kill mutants the other tests let live (docs/TESTING.md).

func TestPushFrontOnAnEmptyQueueIsAlsoItsBack(t *testing.T) {
	var q Queue[int]
	a, b := NewWaiter[int](false), NewWaiter[int](false)
	if !q.PushFront(a) || q.Len() != 1 {
		t.Fatal("PushFront on an empty queue")
	}
	q.Push(b) // must go behind a: a is the tail as well as the head
	if q.Pop() != a || q.Pop() != b || q.Pop() != nil || q.Len() != 0 {
		t.Fatal("order after PushFront on an empty queue")
	}
}

func TestRemovingTheTailKeepsTheQueueLinked(t *testing.T) {
	var q Queue[int]
	ws := []*Waiter[int]{NewWaiter[int](false), NewWaiter[int](false), NewWaiter[int](false)}
	for _, w := range ws {
		q.Push(w)
	}
	if !q.Remove(ws[2]) || q.Len() != 2 {
		t.Fatal("Remove of the tail")
	}
	c := NewWaiter[int](true)
	q.Push(c)
	if !q.Remove(ws[0]) || q.Pop() != ws[1] || q.Pop() != c || q.Pop() != nil {
		t.Fatal("the queue lost its links after removing the tail and the head")
	}
	if q.Remove(c) {
		t.Fatal("Remove of a popped waiter reported it queued")
	}
}

func TestWaitedCountsCancelledWaitsAndTheirTime(t *testing.T) {
	var q Queue[int]
	q.Waited(3*time.Millisecond, false)
	q.Waited(2*time.Millisecond, true)
	q.Waited(time.Millisecond, true)
	counts, waited, cancelled := q.Totals()
	total := uint64(0)
	for _, c := range counts {
		total += c
	}
	if total != 3 || waited != 6*time.Millisecond || cancelled != 2 {
		t.Fatalf("counts %v (total %d), waited %v, cancelled %d", counts, total, waited, cancelled)
	}
}
