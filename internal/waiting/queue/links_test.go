package queue

import "testing"

// The queue stays linked whichever end a waiter joins or leaves by.

func TestPushFrontOnAnEmptyQueueIsAlsoItsBack(t *testing.T) {
	var q Queue[int]
	a, b := newWaiter(false), newWaiter(false)
	if q.PushFront(a) != Requeued || q.Len() != 1 {
		t.Fatal("PushFront on an empty queue")
	}
	q.Push(b) // must go behind a: a is the tail as well as the head
	if q.Pop() != a || q.Pop() != b || q.Pop() != nil || q.Len() != 0 {
		t.Fatal("order after PushFront on an empty queue")
	}
}

func TestRemovingTheTailKeepsTheQueueLinked(t *testing.T) {
	var q Queue[int]
	ws := []*Waiter[int]{newWaiter(false), newWaiter(false), newWaiter(false)}
	for _, w := range ws {
		q.Push(w)
	}
	if !q.Remove(ws[2]) || q.Len() != 2 {
		t.Fatal("Remove of the tail")
	}
	c := newWaiter(true)
	q.Push(c)
	if !q.Remove(ws[0]) || q.Pop() != ws[1] || q.Pop() != c || q.Pop() != nil {
		t.Fatal("the queue lost its links after removing the tail and the head")
	}
	if q.Remove(c) {
		t.Fatal("Remove of a popped waiter reported it queued")
	}
}

// A giver that popped a waiter it cannot serve puts it back, unless the
// waiter's caller gave up meanwhile: it found the waiter popped (Remove
// false) and waits for a grant, which it would otherwise get only once
// some resource served it, however long after its context ended.
func TestPushFrontLeavesOutAWaiterWhoseCallerGaveUpWhilePopped(t *testing.T) {
	var q Queue[int]
	a, b := newWaiter(false), newWaiter(false)
	q.Push(a)
	q.Push(b)
	if q.Pop() != a {
		t.Fatal("Pop did not return the oldest")
	}
	if q.Remove(a) { // a's context ended while a giver had it
		t.Fatal("Remove found a popped waiter queued")
	}
	if got := q.PushFront(a); got != Left || q.Len() != 1 || q.Pop() != b {
		t.Fatalf("PushFront of a waiter that left = %v, len %d: it must stay out", got, q.Len())
	}
	q.Push(a) // reused for a later wait: it may be put back again
	q.Pop()
	if q.PushFront(a) != Requeued || q.Len() != 1 {
		t.Fatal("a waiter queued again after leaving is not put back")
	}
}
