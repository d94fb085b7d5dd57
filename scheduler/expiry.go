package scheduler

import (
	"sync"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/deadline"
	"github.com/crsched/crs/internal/node"
)

// expiry reclaims leases that pass their deadline, with one timer for the
// whole scheduler: a queue of deadlines and a single clock timer armed for
// the earliest. A lease that ends or is extended leaves its entry in the
// queue, marked as dropped, so nothing is searched; when the dropped
// entries outnumber the others, they are taken out in one pass, so the
// queue's memory stays bounded by the live leases (and rests) rather
// than by the leases of the last TTL.
type expiry[T any, ID comparable] struct {
	s *Scheduler[T, ID]

	mu      sync.Mutex
	queue   deadline.Queue[leaseRef[T, ID]] // guarded by mu
	timer   config.Timer                    // guarded by mu; nil when not armed
	armedAt int64                           // guarded by mu
	closed  bool                            // guarded by mu
	// popped is the latest time up to which fire has popped the queue:
	// every entry due at or before it that was queued before that pop
	// is out of the queue. Guarded by mu.
	popped int64
	// dropped counts, by entry, the queued entries that stand for no
	// deadline any more; each is in the queue (see drop), and fire or
	// compact takes it out. dropping is their total. Guarded by mu.
	dropped  map[due[T, ID]]int
	dropping int
	// running counts timer callbacks in progress, so stop can wait for
	// them. Add is called only under mu while not closed.
	running sync.WaitGroup
}

type leaseRef[T any, ID comparable] struct {
	node  *node.Node[T, ID]
	token uint64
}

// due identifies a queue entry: a lease's (or a rest's) deadline.
type due[T any, ID comparable] struct {
	ref leaseRef[T, ID]
	at  int64
}

// schedule queues a lease deadline. Called with the lease's shard lock
// held (lock order: shard, then expiry). A deadline of node.Never is not
// queued: it never comes due.
func (e *expiry[T, ID]) schedule(at int64, n *node.Node[T, ID], token uint64) {
	if at == node.Never {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.queue.Push(at, leaseRef[T, ID]{n, token})
	if e.timer == nil || at < e.armedAt {
		e.arm(at)
	}
}

// arm points the single timer at the deadline at. Requires mu.
func (e *expiry[T, ID]) arm(at int64) {
	if e.timer != nil {
		e.timer.Stop()
	}
	e.armedAt = at
	e.timer = e.s.clock.AfterFunc(time.Duration(at-e.s.now()), e.fire)
}

// fire reclaims the due leases and re-arms the timer for the next one.
func (e *expiry[T, ID]) fire() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.running.Add(1)
	defer e.running.Done()
	now := e.s.now()
	e.popped = max(e.popped, now)
	entries := e.queue.PopDue(now, nil)
	live := entries[:0]
	for _, d := range entries {
		if !e.forget(due[T, ID]{d.Item, d.At}) {
			live = append(live, d)
		}
	}
	e.timer = nil
	if e.queue.Len() > 0 {
		e.arm(e.queue.Next())
	}
	e.mu.Unlock()
	for _, d := range live {
		e.run(d.Item)
	}
}

// panicRetry is how long after a comparator panic on the timer its entry
// comes due again: soon, for a lease past its deadline keeps its slot and
// a waiter may wait for it, but not in a loop, for a comparator that
// panics every time would then keep the timer busy.
const panicRetry = 10 * time.Millisecond

// run handles one due entry on the timer's goroutine, where a comparator
// panic has no caller to go to and would end the process. The step it
// panicked in is undone as for any caller (see shard), so the panic is
// recovered and counted (Stats.ComparatorPanics), and the entry queued
// again: the lease still ends, the rest still ends and the waiters are
// still served once the comparator stops panicking.
func (e *expiry[T, ID]) run(ref leaseRef[T, ID]) {
	defer func() {
		if recover() != nil {
			e.s.panics.Add(1)
			e.schedule(node.After(e.s.now(), panicRetry), ref.node, ref.token)
		}
	}()
	e.s.expire(ref.node, ref.token)
}

// drop marks the entry for the lease with token on n, due at at, as
// standing for no deadline any more: the lease ended or was extended.
// Called with the lease's shard lock held, after the entry was queued
// (by schedule, under the same lock). An entry due at or before popped
// may already have left the queue, to an expire that will find the
// lease gone; it is not marked, for a mark must stand for an entry in
// the queue (one left there is popped as soon as the timer next fires).
func (e *expiry[T, ID]) drop(at int64, n *node.Node[T, ID], token uint64) {
	if at == 0 || at == node.Never {
		return // never queued
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || at <= e.popped {
		return
	}
	if e.dropped == nil {
		e.dropped = make(map[due[T, ID]]int)
	}
	e.dropped[due[T, ID]{leaseRef[T, ID]{n, token}, at}]++
	e.dropping++
	if 2*e.dropping > e.queue.Len() {
		e.queue.Filter(func(d deadline.Entry[leaseRef[T, ID]]) bool {
			return !e.forget(due[T, ID]{d.Item, d.At})
		})
	}
}

// restMoved keeps the queue in step with n's rest after a committed
// change that may have moved it from was: it queues the new rest, if
// any, and drops the entry of the old one (a rest other than the one
// queued last is never queued: every change that sets one queues it).
// Requires n's shard lock.
func (s *Scheduler[T, ID]) restMoved(n *node.Node[T, ID], was int64) {
	if n.RestUntil == was {
		return
	}
	if n.RestUntil != 0 {
		s.expiry.schedule(n.RestUntil, n, 0)
	}
	s.expiry.drop(was, n, 0)
}

// forget reports whether d was dropped, and if so unmarks it: its entry
// is leaving the queue. Requires mu.
func (e *expiry[T, ID]) forget(d due[T, ID]) bool {
	if e.dropped[d] == 0 {
		return false
	}
	if e.dropped[d]--; e.dropped[d] == 0 {
		delete(e.dropped, d)
	}
	e.dropping--
	return true
}

// stop disarms the timer and waits for a callback in progress to finish.
func (e *expiry[T, ID]) stop() {
	e.mu.Lock()
	e.closed = true
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.mu.Unlock()
	e.running.Wait()
}

// expire handles a due entry: with token 0 the end of n's rest, with
// wakeToken a wake of the waiters of n's shard (see Scheduler.wake),
// otherwise the deadline of the lease with that token. Either may be stale: the rest
// extended or ended early, the lease released or extended.
func (s *Scheduler[T, ID]) expire(n *node.Node[T, ID], token uint64) {
	sh := &s.shards[n.Shard]
	if token == wakeToken {
		s.woken(sh)
		return
	}
	first, second := noEvent, noEvent
	func() {
		sh.mu.Lock()
		defer sh.unlock()
		s.repair(sh, n)
		now := s.now()
		if token == 0 {
			if n.RestUntil == 0 || now < n.RestUntil {
				return // ended early, or extended: a later entry is queued
			}
			// place leaves an excluded node as it is, so its rest
			// ends, and is reported, here; place reports the others'.
			if n.State == node.Excluded && sh.forgetEnded(n) {
				first = events.EventResume
			}
			was := n.RestUntil
			sh.place(n)
			if n.RestUntil != was && n.RestUntil != 0 { // the limits' rest after a suspension
				s.expiry.schedule(n.RestUntil, n, 0)
			}
		} else {
			i := n.FindLease(token)
			if i < 0 || now < n.Lease(i).Deadline {
				return // released, or extended
			}
			first = events.EventExpire
			second = s.unhold(sh, n, i, ending{how: reclaimed})
			s.expired.Add(1)
		}
		// The timer goroutine has nothing else to do, so a waiter served
		// here gets a processor without yielding.
		s.serveAfter(sh)
	}()
	for _, e := range []events.EventType{first, second} {
		if e != noEvent {
			s.emit(e, n.Key)
		}
	}
}
