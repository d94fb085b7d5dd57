package scheduler

import (
	"fmt"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waitq"
)

// serve hands resources to waiters, oldest first, for as long as sh has
// one and anyone waits, and reports whether it woke anyone. It runs, with
// sh.mu held, after anything that may have made a resource of sh
// available. Each waiter gets the top of sh or, under GlobalOrder, of a
// shard whose top is better (see betterShard); a giver that cannot read
// every shard serves only committed waiters and sends the others back to
// search (see pop, and docs/ARCHITECTURE.md, Waiting).
//
// Why no waiter is left behind: a giver makes the resource visible in the
// heap (publishing the shard's active count) before it reads the waiter
// count here, and a waiter counts itself before it reads the shards'
// active counts (see obtain). Both are sequentially consistent atomics, so
// at least one of the two sees the other: the giver serves the waiter, or
// the waiter sees the resource and searches again. So a giver must not
// stop while sh has a resource and someone waits, even when another shard
// has a better one: that shard's giver may have served before the waiter
// queued, or its resource may be gone by the time the waiter would get it
// (finding 10 in docs/TESTING.md).
//
// The comparator may panic anywhere in here, in sh or in another shard
// (serveFrom): the hold it was taking for a waiter is undone (see
// shard.Shard.Save), what the step did before serving has taken effect,
// and sh is left broken whichever shard panicked, so that its next user
// serves the waiters (see repair): its resource is still free.
func (s *Scheduler[T, ID]) serve(sh *shard.Shard[T, ID]) bool {
	if s.waiters.Len() == 0 || sh.Heap.Len() == 0 {
		return false
	}
	sh.Commit()
	done := false
	defer func() {
		if !done {
			sh.Broken = true
		}
	}()
	served := false
	for s.waiters.Len() > 0 && sh.Heap.Len() > 0 {
		sure := true
		if s.global {
			var o *shard.Shard[T, ID]
			o, sure = s.betterShard(sh)
			if o != nil {
				if o.TryLock() {
					if s.serveFrom(o, sh, sure) {
						served = true
						continue
					}
				} else {
					sure = false
				}
			}
		}
		w := s.pop(sure)
		if w == nil {
			break
		}
		if !s.grantTo(sh, w) {
			break
		}
		served = true
	}
	done = true
	if served && s.budgeted && s.waiters.Len() > 0 {
		// The oldest waiter changed here, and sh has nothing for it (or
		// no resource left): another shard may cover its cost now.
		s.kick(sh.Index)
	}
	return served
}

// serveAfter is serve after a change that has taken effect: a release,
// an Add, an Include. A comparator panic while it hands a resource to a
// waiter cannot undo that change, and the caller's operation succeeded,
// so the panic is recovered and counted (Stats.ComparatorPanics) rather
// than sent to a caller who would take it for a failure and might repeat
// the operation: a second Release would free someone else's slot. The
// shard is left broken, and its next operation serves the waiters (see
// repair).
func (s *Scheduler[T, ID]) serveAfter(sh *shard.Shard[T, ID]) bool {
	defer s.recovered()
	return s.serve(sh)
}

// recovered, deferred, stops a comparator panic that no caller can be
// told of, and counts it.
func (s *Scheduler[T, ID]) recovered() {
	if recover() != nil {
		s.panics.Add(1)
	}
}

// pop takes the waiter to serve next: the oldest, or, when the giver
// cannot be sure that it hands out the best resource of all shards, the
// oldest committed one (see Queue.PopCommitted).
func (s *Scheduler[T, ID]) pop(sure bool) *waitq.Waiter[grant[T, ID]] {
	if sure {
		return s.waiters.Pop()
	}
	return s.waiters.PopCommitted()
}

// betterShard returns the shard other than sh that publishes the best
// top strictly better than sh's, or nil, and whether it could read every
// shard's top. Under GlobalOrder a waiter must get the best resource of
// all shards. A shard with a change in progress cannot be read: waiting
// for it while sh's lock is held could deadlock. Requires sh's lock; the
// comparator may panic (see serve).
func (s *Scheduler[T, ID]) betterShard(sh *shard.Shard[T, ID]) (better *shard.Shard[T, ID], sure bool) {
	bestValue := sh.Best().Value
	sure = true
	for i := range s.shards {
		o := &s.shards[i]
		if o == sh {
			continue
		}
		n, v, _, ok := o.Peek()
		if !ok {
			sure = false
			continue
		}
		if n != nil && s.cmp(v, bestValue) < 0 {
			better, bestValue = o, v
		}
	}
	return better, sure
}

// serveFrom gives a waiter (see pop) the top of o, if it is still better
// than sh's, and reports whether it did. The caller holds sh.mu and took
// o.mu with TryLock (never waiting for it, which could deadlock: another
// giver may hold o and want sh); serveFrom unlocks it. A panic in the
// comparator, here or in grantTo, leaves o broken, so that its next user
// serves the waiters, and sh too (see serve).
func (s *Scheduler[T, ID]) serveFrom(o, sh *shard.Shard[T, ID], sure bool) bool {
	defer o.Unlock()
	s.repair(o, nil) // which may serve waiters itself
	top := o.Best()
	if top == nil || s.waiters.Len() == 0 {
		return false
	}
	ours := sh.Best().Value
	o.Broken = true // left set if the comparator panics; sh's is serve's
	better := s.cmp(top.Value, ours) < 0
	o.Broken = false
	if !better {
		return false
	}
	w := s.pop(sure)
	return w != nil && s.grantTo(o, w)
}

// grantTo gives waiter w the top of sh, or with a cost the best resource
// of sh that covers it (see covering), and reports whether it did. If
// none covers it, w goes back to the front of the queue, where it keeps
// the others waiting (strict FIFO, see obtain), and the wake of sh is
// armed for the instant one may. If the comparator panics, w goes back to the
// front of the queue so it is not forgotten, the shard is left broken, so
// that its next user serves it, and the panic continues (to serveAfter,
// which recovers it, or to a repair's caller, whose step has not begun). A w
// whose caller gave up while it was popped is not put back: it is sent
// an empty grant, on which its caller returns (see obtain).
func (s *Scheduler[T, ID]) grantTo(sh *shard.Shard[T, ID], w *waitq.Waiter[grant[T, ID]]) bool {
	granted, covered := false, true
	defer func() {
		if granted {
			return
		}
		if covered {
			sh.Broken = true
		}
		switch s.waiters.PushFront(w) {
		case waitq.Closed:
			w.C <- grant[T, ID]{err: crserrors.ErrSchedulerClosed}
		case waitq.Left:
			w.C <- grant[T, ID]{} // nothing: its caller gave up (see obtain)
		}
	}()
	n := sh.Best()
	if w.Cost != nil {
		now := s.now()
		var at int64
		if n, at = s.covering(sh, w.Cost, now); n == nil {
			if s.profiles.Exceeds(w.Cost) { // an Update or Remove since it queued
				granted = true // answered: not back in the queue
				w.C <- grant[T, ID]{err: fmt.Errorf("lease: %w", crserrors.ErrCostExceedsLimits)}
				return true
			}
			covered = false
			s.wake(sh, at)
			return false
		}
	}
	g := grant[T, ID]{cost: w.Cost}
	s.hold(sh, n, w.Lease, &g)
	granted = true
	w.C <- g
	s.emit(events.EventAcquire, g.node.Key)
	return true
}

// serveBest serves waiters from the shards a batch went into (added[i]
// nodes into shard i, all of them locked by the caller), each waiter from
// the shard whose top is best then, ties to the lower shard. Under
// GlobalOrder a waiter must get the best of the batch; serving shard by
// shard would give it the best of the first shard. If the comparator
// panics, every shard of the batch is left broken, so that its next user
// serves the waiters (see repair): each may hold a resource a waiter
// should have had.
func (s *Scheduler[T, ID]) serveBest(added []int) bool {
	done := false
	defer func() {
		for i, k := range added {
			if k > 0 && !done {
				s.shards[i].Broken = true
			}
		}
	}()
	served := false
	for s.waiters.Len() > 0 {
		best := s.bestOf(added)
		if best < 0 {
			break
		}
		// The shards the batch did not fill are not compared: a
		// committed waiter cannot be queued beside a resource that was
		// visible before the batch began (see Queue.PopCommitted).
		w := s.waiters.PopCommitted()
		if w == nil {
			break
		}
		if !s.grantTo(&s.shards[best], w) {
			break
		}
		served = true
	}
	done = true
	if served && s.budgeted && s.waiters.Len() > 0 {
		s.kick(-1)
	}
	return served
}

// bestOf returns the shard among those a batch went into (see serveBest)
// whose top is best, ties to the lower shard, or -1 if none has one.
func (s *Scheduler[T, ID]) bestOf(added []int) int {
	best := -1
	var top *node.Node[T, ID]
	for i, k := range added {
		if k == 0 {
			continue
		}
		if n := s.shards[i].Best(); n != nil && (top == nil || s.cmp(n.Value, top.Value) < 0) {
			best, top = i, n
		}
	}
	return best
}

// repair brings sh back to normal before an operation uses it. After a
// comparator panicked under its lock in an earlier operation (see
// shard.Shard.Broken), it orders the heap again, publishes it, and serves the
// waiters the panic may have kept from a resource. It also runs the sift
// that the heap left waiting when an operation took its top out (see
// heap.New), unless only is that node: an operation that changes only
// the node it names, off the heap, may leave the sift waiting, so that
// giving the top back costs no sift (the common exclusive use). Any
// other change must come after the sift, which compares by the values it
// finds. Every operation calls repair right after locking sh, with the
// unlock deferred: it runs the comparator, which may panic and leave sh
// broken.
func (s *Scheduler[T, ID]) repair(sh *shard.Shard[T, ID], only *node.Node[T, ID]) {
	if sh.Broken {
		sh.Heap.Init()
		sh.Broken = false
		sh.Publish()
		s.serve(sh)
	}
	if t := sh.Heap.Waiting(); t != nil && t != only {
		sh.Best()
	}
}
