package waitq

import "testing"

func TestQueueIsFIFOAndRemovesFromAnywhere(t *testing.T) {
	var q Queue[int]
	ws := make([]*Waiter[int], 5)
	for i := range ws {
		ws[i] = NewWaiter[int](false)
		if !q.Push(ws[i]) {
			t.Fatal("push refused")
		}
	}
	if !q.Remove(ws[2]) || q.Remove(ws[2]) {
		t.Fatal("Remove must succeed once, then report the waiter gone")
	}
	if !q.PushFront(ws[2]) {
		t.Fatal("push front refused")
	}
	for _, want := range []int{2, 0, 1, 3, 4} {
		if got := q.Pop(); got != ws[want] {
			t.Fatalf("popped the wrong waiter, want %d", want)
		}
	}
	if q.Pop() != nil || q.Len() != 0 {
		t.Fatal("queue not empty")
	}
}

func TestClosedQueueRefusesAndHandsBackItsWaiters(t *testing.T) {
	var q Queue[int]
	a, b := NewWaiter[int](false), NewWaiter[int](true)
	q.Push(a)
	q.Push(b)
	if got := q.Close(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Close returned %v", got)
	}
	if q.Push(NewWaiter[int](false)) || q.PushFront(a) || q.Len() != 0 {
		t.Fatal("closed queue accepted a waiter")
	}
}
