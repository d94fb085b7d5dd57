package waiting

// The order of service: this file alone decides which waiter a giver
// serves next (Pop, PopCommitted), where a new waiter and one a giver
// could not serve go (Push, PushFront), and whether a caller that does
// not wait may take a resource while others wait (MustQueue).
//
// Today's order is first come, first served: waiters are served in the
// order they queued, and one that a giver popped but could not serve
// goes back to the front. With budgets (Room.budgeted) the order is
// strict: the oldest waiter, whose cost no resource may cover yet,
// holds back every other, and no caller overtakes it (see MustQueue and
// Room.Wait), so a large cost is not starved by small ones.

// First reports whether w is the oldest queued waiter.
func (q *Queue[G]) First(w *Waiter[G]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.head == w
}

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

// MustQueue reports whether a caller that has not waited must queue
// behind the waiters rather than take a resource: in the strict order,
// whenever anyone waits.
func (r *Room[T, ID]) MustQueue() bool { return r.cfg.Budgeted && r.queue.Len() > 0 }
