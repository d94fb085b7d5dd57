package queue

import "testing"

func newWaiter(lease bool) *Waiter[int] { return &Waiter[int]{C: make(chan int, 1), Lease: lease} }

func TestQueueIsFIFOAndRemovesFromAnywhere(t *testing.T) {
	var q Queue[int]
	ws := make([]*Waiter[int], 5)
	for i := range ws {
		ws[i] = newWaiter(false)
		if !q.Push(ws[i]) {
			t.Fatal("push refused")
		}
	}
	if !q.Remove(ws[2]) {
		t.Fatal("Remove of a queued waiter failed")
	}
	if q.PushFront(ws[2]) != Requeued {
		t.Fatal("push front refused")
	}
	for _, want := range []int{2, 0, 1, 3, 4} {
		if got := q.Pop(); got != ws[want] {
			t.Fatalf("popped the wrong waiter, want %d", want)
		}
	}
	if q.Remove(ws[2]) {
		t.Fatal("Remove of a popped waiter must report it gone")
	}
	if q.Pop() != nil || q.Len() != 0 {
		t.Fatal("queue not empty")
	}
}

func TestClosedQueueRefusesAndHandsBackItsWaiters(t *testing.T) {
	var q Queue[int]
	a, b := newWaiter(false), newWaiter(true)
	q.Push(a)
	q.Push(b)
	if got := q.Close(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Close returned %v", got)
	}
	if q.Push(newWaiter(false)) || q.PushFront(a) != Closed || q.Len() != 0 {
		t.Fatal("closed queue accepted a waiter")
	}
}

// PopCommitted passes over waiters that have not committed, telling each
// to search again, so that none of them can commit afterwards; it takes
// the oldest committed one, and a later Push makes a waiter pending again.
func TestPopCommittedRedirectsPendingWaitersAndTakesTheOldestCommitted(t *testing.T) {
	var q Queue[int]
	ws := make([]*Waiter[int], 4)
	for i := range ws {
		ws[i] = newWaiter(false)
		q.Push(ws[i])
	}
	if !ws[1].Commit() || !ws[3].Commit() {
		t.Fatal("a pending waiter must be able to commit")
	}
	if got := q.PopCommitted(); got != ws[1] {
		t.Fatal("PopCommitted did not take the oldest committed waiter")
	}
	if ws[0].Commit() {
		t.Fatal("a waiter passed over by PopCommitted could still commit")
	}
	if ws[2].Commit() == false {
		t.Fatal("a waiter behind the one taken was told to search again")
	}
	if got := q.PopCommitted(); got != ws[2] {
		t.Fatal("second PopCommitted did not take the next committed waiter")
	}
	if got := q.PopCommitted(); got != ws[3] {
		t.Fatal("third PopCommitted did not take the last committed waiter")
	}
	if q.PopCommitted() != nil || q.Len() != 1 {
		t.Fatal("the redirected waiter must stay queued until it leaves, and never be taken")
	}
	if !q.Remove(ws[0]) || !q.Push(ws[0]) || !ws[0].Commit() {
		t.Fatal("a waiter pushed again must be pending again")
	}
}
