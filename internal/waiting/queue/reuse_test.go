package queue

import "testing"

// Get hands out a waiter ready for a new caller: in no queue, its
// channel empty, asking for what this caller asks for; one put back after
// it was served comes back so, however it was used before.
func TestGetHandsOutAWaiterInNoQueueWithAnEmptyChannel(t *testing.T) {
	var q Queue[int]
	for round := range 100 {
		lease := round%2 == 0
		w := q.Get(lease)
		if w.Lease != lease || len(w.C) != 0 || cap(w.C) != 1 {
			t.Fatalf("round %d: Get(%v) gave lease %v, %d of %d grants in its channel", round, lease, w.Lease, len(w.C), cap(w.C))
		}
		if q.Remove(w) {
			t.Fatalf("round %d: a waiter from Get was queued", round)
		}
		if !q.Push(w) || !w.Commit() {
			t.Fatalf("round %d: a waiter from Get could not queue and commit", round)
		}
		// Served as a giver serves: popped, then sent its grant, which
		// the caller receives before putting the waiter back.
		if q.Pop() != w {
			t.Fatalf("round %d: Pop did not take the waiter", round)
		}
		w.C <- round
		if got := <-w.C; got != round {
			t.Fatalf("round %d: received %d", round, got)
		}
		q.Put(w)
	}
}
