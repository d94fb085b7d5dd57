package queue

import (
	"testing"

	"github.com/crsched/crs/internal/budget"
)

func tenantWaiter(t *budget.Tenant, prio int) *Waiter[int] {
	w := newWaiter(true)
	w.Tenant, w.Priority, w.Units = t, prio, 1
	return w
}

// pushTwo queues a waiter of tenant a at priority prio, then one of
// tenant b at 0.
func pushTwo(q *Queue[int], prio int) (a1, b1 *Waiter[int]) {
	a1 = tenantWaiter(&budget.Tenant{Name: "a", Weight: 1}, prio)
	b1 = tenantWaiter(&budget.Tenant{Name: "b", Weight: 1}, 0)
	q.Push(a1)
	q.Push(b1)
	return a1, b1
}

// A higher priority goes first, whatever the virtual times; within one
// priority the class with the least virtual time; within a class, the
// oldest.
func TestPopTakesTheHighestPriorityThenTheLeastVirtualTimeThenTheOldest(t *testing.T) {
	var q Queue[int]
	a, b := &budget.Tenant{Name: "a", Weight: 1}, &budget.Tenant{Name: "b", Weight: 1}
	a1, a2, b1, hi := tenantWaiter(a, 0), tenantWaiter(a, 0), tenantWaiter(b, 0), tenantWaiter(b, 7)
	for _, w := range []*Waiter[int]{a1, a2, b1, hi} {
		q.Push(w)
	}
	for i, want := range []*Waiter[int]{hi, a1, b1, a2} {
		if got := q.Pop(); got != want {
			t.Fatalf("pop %d: wrong waiter", i)
		}
	}
}

// A class its pass skipped is passed over by that pass alone, and keeps
// its first waiter first.
func TestASkippedClassIsPassedOverOnlyByThePassThatSkippedIt(t *testing.T) {
	var q Queue[int]
	a, b := &budget.Tenant{Name: "a", Weight: 1}, &budget.Tenant{Name: "b", Weight: 1}
	a1, a2, b1 := tenantWaiter(a, 0), tenantWaiter(a, 0), tenantWaiter(b, 0)
	for _, w := range []*Waiter[int]{a1, a2, b1} {
		q.Push(w)
	}
	if q.PopFor(1, false) != a1 || q.Skip(a1, 1) != Requeued {
		t.Fatal("the first pop or the skip")
	}
	if q.PopFor(1, false) != b1 {
		t.Fatal("the pass that skipped a's class did not pass over it")
	}
	if q.PopFor(1, false) != nil {
		t.Fatal("the pass found a waiter behind the one it skipped")
	}
	if q.PopFor(2, false) != a1 {
		t.Fatal("another pass did not take the skipped class's first waiter")
	}
}

// A parked class is passed over until its parking ends, and only one
// wake is asked for the earliest parking.
func TestAParkedClassWaitsForItsParkingToEnd(t *testing.T) {
	now := int64(0)
	q := Queue[int]{Now: func() int64 { return now }}
	a1, b1 := pushTwo(&q, 5)
	if q.Pop() != a1 {
		t.Fatal("priority")
	}
	if r, arm := q.Park(a1, 100); r != Requeued || !arm {
		t.Fatal("the first parking must ask for a wake")
	}
	if q.Pop() != b1 {
		t.Fatal("a parked class held back another")
	}
	q.PushFront(b1)
	if _, arm := q.NextPark(); arm {
		t.Fatal("a second wake asked for the same parking")
	}
	now = 100
	if q.Pop() != a1 {
		t.Fatal("the class was still parked after its parking ended")
	}
}

// When the wake of the earliest parking comes, the next parking gets a
// wake of its own.
func TestTheWakeOfOneParkingArmsTheNext(t *testing.T) {
	now := int64(0)
	q := Queue[int]{Now: func() int64 { return now }}
	a1, b1 := pushTwo(&q, 0)
	if q.Pop() != a1 || q.Pop() != b1 {
		t.Fatal("first come, first served")
	}
	if _, arm := q.Park(a1, 100); !arm {
		t.Fatal("the first parking must ask for a wake")
	}
	if _, arm := q.Park(b1, 200); arm {
		t.Fatal("a later parking asked for a wake while an earlier one is armed")
	}
	now = 100 // the wake comes
	if at, arm := q.NextPark(); at != 200 || !arm {
		t.Fatalf("NextPark at the first wake = %d, %v; want 200, true", at, arm)
	}
	if _, arm := q.NextPark(); arm {
		t.Fatal("a second wake asked for the same parking")
	}
}

// In the strict order a caller queues behind every waiter but those
// parked on their tenant's budgets, unless it is of a parked class
// itself; a class back from parking holds callers back again, and so
// does one whose parking is over before anyone unparked it.
func TestOnlyWaitersThatAreNotParkedHoldBackACallerOfAnotherClass(t *testing.T) {
	now := int64(0)
	q := Queue[int]{Now: func() int64 { return now }, Strict: true}
	a, b := &budget.Tenant{Name: "a", Weight: 1}, &budget.Tenant{Name: "b", Weight: 1}
	if q.MustQueue(a, 0) {
		t.Fatal("an empty queue held a caller back")
	}
	a1, a2 := tenantWaiter(a, 0), tenantWaiter(a, 0)
	q.Push(a1)
	if !q.MustQueue(b, 0) {
		t.Fatal("a ready waiter did not hold another tenant back")
	}
	if q.ParkQueued(a1, 100); q.MustQueue(b, 0) || q.MustQueue(nil, 0) {
		t.Fatal("a parked waiter held another class back")
	}
	q.Push(a2) // joins the parked class
	if q.MustQueue(b, 0) || !q.MustQueue(a, 0) {
		t.Fatal("a parked class must hold back its own tenant alone")
	}
	q.Remove(a2)
	now = 100 // the parking is over, though no giver has looked yet
	if !q.MustQueue(b, 0) {
		t.Fatal("a class whose parking ended did not hold another back")
	}
	if q.Pop() != a1 || q.MustQueue(b, 0) || q.Len() != 0 {
		t.Fatal("the queue did not empty")
	}
	if q.parkedN.Load() != 0 {
		t.Fatalf("%d waiters counted as parked in an empty queue", q.parkedN.Load())
	}
}

// A class counts the grants and share units of its callers that did not
// wait and of its waiters alike.
func TestAClassCountsGrantsToCallersAndToWaiters(t *testing.T) {
	var q Queue[int]
	a := &budget.Tenant{Name: "a", Weight: 1}
	q.Granted(a, 0, 3) // a caller that did not wait
	w := tenantWaiter(a, 0)
	q.Push(w)
	if q.Pop() != w {
		t.Fatal("the waiter")
	}
	q.GrantedTo(w, 5)
	got := q.Classes()
	if len(got) != 1 || got[0] != (ClassStats{Tenant: "a", Grants: 2, Usage: 8}) {
		t.Fatalf("Classes() = %+v, want a's 2 grants and 8 units, no waiter", got)
	}
}

// The default class is a class like any other: parked, it holds back
// callers of the default tenant, and no one else.
func TestAParkedDefaultClassHoldsBackItsOwnCallersAlone(t *testing.T) {
	q := Queue[int]{Now: func() int64 { return 0 }, Strict: true}
	w := tenantWaiter(nil, 0)
	q.Push(w)
	if q.ParkQueued(w, 100); !q.MustQueue(nil, 0) || q.MustQueue(&budget.Tenant{Name: "a", Weight: 1}, 0) {
		t.Fatal("a parked default class must hold back the default tenant alone")
	}
}

// A parking that ends before the one a wake is armed for asks for a wake
// of its own.
func TestAnEarlierParkingAsksForAnEarlierWake(t *testing.T) {
	q := Queue[int]{Now: func() int64 { return 0 }}
	a1, b1 := pushTwo(&q, 0)
	if arm := q.ParkQueued(a1, 200); !arm {
		t.Fatal("the first parking must ask for a wake")
	}
	if arm := q.ParkQueued(b1, 100); !arm {
		t.Fatal("an earlier parking did not ask for its wake")
	}
	if at, arm := q.NextPark(); arm || at != 0 {
		t.Fatalf("NextPark = %d, %v: a wake is already asked for the earliest parking", at, arm)
	}
}
