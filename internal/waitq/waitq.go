// Package waitq is the FIFO queue of goroutines waiting for a resource.
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
package waitq

import (
	"sync"
	"sync/atomic"
	"time"

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

// Queue is a FIFO of waiters. Its methods are safe for concurrent use.
type Queue[G any] struct {
	mu         sync.Mutex
	head, tail *Waiter[G]
	closed     bool

	// free holds waiters put back, in no queue, with empty channels.
	free sync.Pool

	// Len is the number of queued waiters. Givers read it without the
	// lock to skip the queue when nobody waits; it is updated under mu.
	len atomic.Int64

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
	w.Lease, w.Cost = lease, nil
	return w
}

// First reports whether w is the oldest queued waiter.
func (q *Queue[G]) First(w *Waiter[G]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.head == w
}

// Put gives w back for reuse. Its caller must be done with it: w is in no
// queue and no giver has it (see the package doc).
func (q *Queue[G]) Put(w *Waiter[G]) { q.free.Put(w) }

// Push queues w at the back, or reports false if the queue is closed.
func (q *Queue[G]) Push(w *Waiter[G]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	w.prev, w.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	w.queued, w.left = true, false
	w.state.Store(pending)
	q.len.Add(1)
	return true
}

// Requeue is what PushFront did with a waiter.
type Requeue uint8

const (
	Requeued Requeue = iota // back at the front
	Closed                  // left out: the queue is closed
	Left                    // left out: its caller gave up while it was popped
)

// PushFront puts w back at the front, where a giver that popped it but
// could not serve it found it, unless the queue is closed or w's caller
// gave up meanwhile: its Remove found w popped, and it waits for the
// grant on w.C, which the giver must then send (or it would wait until
// some resource served it, its context long over).
func (q *Queue[G]) PushFront(w *Waiter[G]) Requeue {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return Closed
	case w.left:
		return Left
	}
	w.prev, w.next = nil, q.head
	if q.head != nil {
		q.head.prev = w
	} else {
		q.tail = w
	}
	q.head = w
	w.queued = true
	q.len.Add(1)
	return Requeued
}

// Pop removes and returns the oldest waiter, or nil.
func (q *Queue[G]) Pop() *Waiter[G] {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.head
	if w != nil {
		q.unlink(w)
	}
	return w
}

// PopCommitted removes and returns the oldest waiter that has committed
// to waiting (see Commit), or nil. It tells each pending waiter before it
// to search again; they stay queued until they leave. A giver that cannot
// tell whether its resource is the best of all uses it: a committed
// waiter looked for a resource after it queued and found none, so every
// resource visible now appeared after that, under a giver that then
// served the queue (docs/ARCHITECTURE.md, Waiting); a pending one will
// look for itself.
func (q *Queue[G]) PopCommitted() *Waiter[G] {
	q.mu.Lock()
	defer q.mu.Unlock()
	for w := q.head; w != nil; w = w.next {
		if w.state.CompareAndSwap(pending, redirected) || w.state.Load() == redirected {
			continue
		}
		q.unlink(w)
		return w
	}
	return nil
}

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
// that were queued, oldest first.
func (q *Queue[G]) Close() []*Waiter[G] {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var all []*Waiter[G]
	for q.head != nil {
		w := q.head
		q.unlink(w)
		all = append(all, w)
	}
	return all
}

func (q *Queue[G]) unlink(w *Waiter[G]) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	w.queued = false
	q.len.Add(-1)
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
