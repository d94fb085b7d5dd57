// Package waitq is the FIFO queue of goroutines waiting for a resource.
//
// A waiter is handed its grant through a buffered channel by whichever
// goroutine makes a resource available, so the hand-off never blocks the
// giver and the receiver never has to retry.
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
	// Lease records what the waiter asked for, for the giver.
	Lease bool

	prev, next *Waiter[G]
	queued     bool // guarded by the queue's mu
}

// NewWaiter returns a waiter that is in no queue.
func NewWaiter[G any](lease bool) *Waiter[G] {
	return &Waiter[G]{C: make(chan G, 1), Lease: lease}
}

// Queue is a FIFO of waiters. Its methods are safe for concurrent use.
type Queue[G any] struct {
	mu         sync.Mutex
	head, tail *Waiter[G]
	closed     bool

	// Len is the number of queued waiters. Givers read it without the
	// lock to skip the queue when nobody waits; it is updated under mu.
	len atomic.Int64

	cancelled atomic.Uint64
	waited    histogram.Histogram
}

// Len is the number of queued waiters.
func (q *Queue[G]) Len() int { return int(q.len.Load()) }

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
	w.queued = true
	q.len.Add(1)
	return true
}

// PushFront puts w back at the front, where a giver that popped it but
// could not serve it found it. It reports false if the queue is closed.
func (q *Queue[G]) PushFront(w *Waiter[G]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
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
	return true
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

// Remove takes w out of the queue and reports whether it was still queued.
// If it was not, a giver popped it and its grant is in, or on its way to,
// w.C.
func (q *Queue[G]) Remove(w *Waiter[G]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !w.queued {
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
