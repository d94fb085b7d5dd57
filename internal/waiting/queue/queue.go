// Package queue is the queue of waiters of a waiting room and its order
// of service (order.go, the one file that decides it): who is served
// next, by priority, then fair shares between tenants, then first come,
// first served.
//
// A waiter is handed its grant through a buffered channel by whichever
// goroutine makes a resource available, so the hand-off never blocks the
// giver and the receiver never has to retry.
//
// Waiters, each with its channel, are reused (Get, Put), so that waiting
// allocates nothing once the queue has served as many waiters at a time
// before. A waiter may be put back only when no giver can still send to
// it: while it is queued, a giver may pop it at any moment; once popped,
// its grant is in, or on its way to, its channel. So its caller puts it
// back after Remove reported it still queued (then nobody has it), or
// after receiving its grant (then the giver is done with it); and the
// channel is empty whenever it is put back, so a reused waiter never
// receives a grant meant for an earlier caller.
package queue

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/histogram"
)

// Waiter is one goroutine waiting for a grant of type G.
type Waiter[G any] struct {
	// C receives exactly one grant once the waiter has been popped.
	C chan G
	// Lease and Cost record what the waiter asked for, for the giver: a
	// lease, and what it spends of the resource's budgets (nil: the
	// default, 1 of each).
	Lease bool
	Cost  map[string]int64
	// Tenant, Priority and Units place the waiter in the order of
	// service (see order.go): its class, and the share units (see
	// config.Config.ShareBy) a grant adds to its class's virtual time.
	Tenant   *budget.Tenant
	Priority int
	Units    int64

	class      *class[G] // guarded by the queue's mu, as its links
	was        float64   // its class's virtual time before a giver popped it
	prev, next *Waiter[G]
	queued     bool // guarded by the queue's mu
	// left: its caller gave up (Remove) while a giver had it popped;
	// guarded by the queue's mu. PushFront then leaves it out.
	left bool
	// state is pending from Push until the waiter commits to waiting
	// (Commit) or a giver tells it to search again (PopCommitted).
	state atomic.Int32
}

// A waiter's state.
const (
	pending    int32 = iota // queued, has not committed yet
	committed               // waits to be served
	redirected              // told to leave the queue and search again
)

// Commit records that the waiter, queued and having found no resource,
// waits to be served. It reports false if a giver has told it to search
// again instead (see PopCommitted): then it must leave the queue and
// search.
func (w *Waiter[G]) Commit() bool { return w.state.CompareAndSwap(pending, committed) }

// Queue is the waiters, in classes (see class.go), served in the order
// of service (order.go). Its methods are safe for concurrent use. The
// zero value is an empty queue.
type Queue[G any] struct {
	mu     sync.Mutex
	closed bool
	// def is the class of callers that name no tenant and no priority;
	// the others are in classes, made on first use and kept.
	def     class[G]
	classes map[classKey]*class[G]
	levels  []*level[G] // by priority, highest first
	parked  classHeap[G]
	// parkWake is the end of a parking that the room has armed a wake
	// for (see Park); 0: none.
	parkWake int64
	seq      uint64
	aside    []*class[G] // pick's scratch
	fair     atomic.Bool // a class other than def was made (see Fair)
	// Now is the time a parking ends by; read only while a class is
	// parked. Strict: callers do not pass the waiters (see MustQueue).
	// Both are set before the queue is used, and never change.
	Now    func() int64
	Strict bool

	// free holds waiters put back, in no queue, with empty channels.
	free sync.Pool

	// Len is the number of queued waiters. Givers read it without the
	// lock to skip the queue when nobody waits; it is updated under mu.
	len atomic.Int64
	// parkedN is the number of waiters in parked classes, read without
	// the lock by MustQueue; it is updated under mu. parkedN <= len.
	parkedN atomic.Int64

	cancelled atomic.Uint64
	waited    histogram.Histogram
}

// Len is the number of queued waiters.
func (q *Queue[G]) Len() int { return int(q.len.Load()) }

// Get returns a waiter in no queue, with an empty channel, for a caller
// that asks for a lease if lease is set: one put back earlier if any.
func (q *Queue[G]) Get(lease bool) *Waiter[G] {
	w, _ := q.free.Get().(*Waiter[G])
	if w == nil {
		w = &Waiter[G]{C: make(chan G, 1)}
	}
	w.Lease, w.Cost, w.Tenant, w.Priority, w.Units = lease, nil, nil, 0, 1
	return w
}

// Put gives w back for reuse. Its caller must be done with it: w is in no
// queue and no giver has it (see the package doc).
func (q *Queue[G]) Put(w *Waiter[G]) { q.free.Put(w) }

// Remove takes w out of the queue and reports whether it was still queued.
// If it was not, a giver popped it and its grant is in, or on its way to,
// w.C: the giver's resource, or, from a giver that could not serve it,
// whatever that giver sends when PushFront reports Left.
func (q *Queue[G]) Remove(w *Waiter[G]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !w.queued {
		w.left = true
		return false
	}
	q.unlink(w)
	return true
}

// Close empties the queue, refuses later pushes, and returns the waiters
// that were queued, each class oldest first.
func (q *Queue[G]) Close() []*Waiter[G] {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var all []*Waiter[G]
	for _, c := range q.all() {
		for c.head != nil {
			w := c.head
			q.unlink(w)
			all = append(all, w)
		}
	}
	return all
}

// all returns every class that exists, the default one first.
func (q *Queue[G]) all() []*class[G] {
	cs := []*class[G]{&q.def}
	for _, c := range q.classes {
		cs = append(cs, c)
	}
	return cs
}

// unlink takes w out of its class, and the class out of its heap when
// w was its last waiter.
func (q *Queue[G]) unlink(w *Waiter[G]) {
	c := w.class
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		c.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		c.tail = w.prev
	}
	w.prev, w.next = nil, nil
	w.queued = false
	q.len.Add(-1)
	if c.parked != 0 {
		q.parkedN.Add(-1)
	}
	if c.n--; c.n == 0 {
		q.leave(c)
	}
}

// Waited records a wait that ended after d, cancelled or not.
func (q *Queue[G]) Waited(d time.Duration, cancelled bool) {
	q.waited.Record(d)
	if cancelled {
		q.cancelled.Add(1)
	}
}

// Totals returns the wait-time histogram (bucket counts over
// histogram.Bounds, then overflow), the total time waited, and the number
// of waits that were cancelled.
func (q *Queue[G]) Totals() (counts []uint64, waited time.Duration, cancelled uint64) {
	counts, waited = q.waited.Snapshot()
	return counts, waited, q.cancelled.Load()
}
