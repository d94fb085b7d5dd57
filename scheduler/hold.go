package scheduler

import (
	"time"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/waitq"
)

// grant is what an acquiring caller receives: the resource's value, and
// for a lease the token that identifies it. A grant sent to a waiter at
// Shutdown carries only err.
type grant[T any, ID comparable] struct {
	node     *node.Node[T, ID]
	token    uint64 // 0 unless a lease
	deadline int64  // the lease's deadline; 0: none
	value    T
	err      error
}

// hold hands n, an active node of sh, to a caller: it takes a rate-limit token
// if n is limited, and a hold: a lease when lease is set, otherwise an
// anonymous hold under the Exclusive policy and none under Shared (a
// shared resource is only read). Requires sh.mu.
func (s *Scheduler[T, ID]) hold(sh *shard[T, ID], n *node.Node[T, ID], lease bool, g *grant[T, ID]) {
	*g = grant[T, ID]{node: n, value: n.Value}
	holds := lease || sh.exclusive
	limited := n.Limited()
	if !holds && !limited {
		return
	}
	var deadline int64
	if lease && s.leaseTTL > 0 {
		deadline = s.after(s.leaseTTL)
	}
	var bucket node.Bucket
	rest, why := n.RestUntil, n.Rest
	if limited {
		bucket = n.Bucket()
		if next := n.Extra().Bucket.Spend(s.now()); next > n.RestUntil {
			sh.setRest(n, next, node.RateLimited)
		}
	}
	if holds {
		n.Holders++
		sh.holders++
		if lease {
			g.token = n.Issue()
			n.AddLease(node.Lease{Token: g.token, Deadline: deadline})
		} else {
			n.Anonymous++
		}
	}
	done := false
	defer func() {
		if done {
			return
		}
		if limited {
			n.SetBucket(bucket)
		}
		sh.setRest(n, rest, why)
		if holds {
			n.Holders--
			sh.holders--
			if lease {
				n.PopLease()
			} else {
				n.Anonymous--
			}
		}
	}()
	sh.place(n)
	done = true
	if n.RestUntil != rest {
		s.expiry.schedule(n.RestUntil, n, 0)
	}
	s.restMoved(n, rest)
	if deadline != 0 {
		g.deadline = deadline
		s.expiry.schedule(deadline, n, g.token)
	}
}

// outcome is how a hold ended, for the resource's health.
type outcome uint8

const (
	succeeded outcome = iota // Release: a success, which resets the failure count
	failed                   // Lease.Fail: counts toward ejection
	cooled                   // Lease.Cooldown: neither success nor failure
	reclaimed                // the lease expired: neither
)

// ending describes the end of a hold: how it went and, for Cooldown, how
// long the resource must rest.
type ending struct {
	how  outcome
	rest time.Duration
}

// unhold ends one hold on n: the lease at position i of n.Leases(), or an
// anonymous hold when i < 0. It applies the resource's health rules in
// the same step: the release cooldown, the failure count and ejection. A
// draining node whose last hold this was leaves the scheduler. It returns
// the event a resulting rest calls for (EventSuspend, EventEject), or
// noEvent.
// Requires sh.mu.
func (s *Scheduler[T, ID]) unhold(sh *shard[T, ID], n *node.Node[T, ID], i int, end ending) events.EventType {
	var ended node.Lease
	n.Holders--
	sh.holders--
	if i >= 0 {
		ended = *n.Lease(i)
		n.DropLease(i)
	} else {
		n.Anonymous--
	}
	failures, ejections := n.Health()
	rest, why := n.RestUntil, n.Rest
	switch end.how {
	case succeeded:
		n.ResetFailures()
	case failed:
		n.SetHealth(failures+1, ejections)
	}
	if n.State == node.Draining {
		if n.Holders == 0 {
			sh.setState(n, node.Removed)
			s.nodes.Delete(n.Key) // leaving: the affinity ring lost it at Remove
		}
		if i >= 0 {
			s.expiry.drop(ended.Deadline, n, ended.Token)
		}
		s.count(end, noEvent)
		return noEvent
	}
	event := s.restAfter(sh, n, end)
	done := false
	defer func() {
		if done {
			return
		}
		n.SetHealth(failures, ejections)
		sh.setRest(n, rest, why) // also gives back an ejection reserved above
		n.Holders++
		sh.holders++
		if i >= 0 {
			n.AddLease(ended)
		} else {
			n.Anonymous++
		}
	}()
	sh.place(n)
	done = true
	if n.RestUntil != rest {
		s.expiry.schedule(n.RestUntil, n, 0)
	}
	s.restMoved(n, rest)
	if i >= 0 {
		s.expiry.drop(ended.Deadline, n, ended.Token)
	}
	s.count(end, event)
	return event
}

// restAfter decides whether n rests after a hold on it ended: ejected when
// its failures reach the threshold and the pool allows another ejection,
// suspended for a cooldown. It reports the event to emit. Requires sh.mu.
func (s *Scheduler[T, ID]) restAfter(sh *shard[T, ID], n *node.Node[T, ID], end ending) events.EventType {
	event := noEvent
	if failures, _ := n.Health(); end.how == failed && s.ejection.Enabled() && failures >= s.ejection.ConsecutiveFailures &&
		(n.Rest == node.Ejected || s.reserveEjection()) {
		reserved := n.Rest != node.Ejected
		e := n.Extra()
		e.Ejections++
		e.Failures = 0
		if until := s.after(s.ejection.Duration(e.Ejections)); until > n.RestUntil || reserved {
			sh.setRest(n, max(until, n.RestUntil), node.Ejected)
		}
		event = events.EventEject
	}
	if cooldown := max(end.rest, s.releaseCooldown); cooldown > 0 {
		if until := s.after(cooldown); until > n.RestUntil {
			sh.setRest(n, until, node.Suspended)
		}
		if event == noEvent {
			event = events.EventSuspend
		}
	}
	return event
}

// reserveEjection takes one of the pool's ejection slots, if any is left:
// ejection never takes the last resource that is neither ejected nor
// excluded, nor more than MaxEjectedShare of the pool (but always allows
// one, as Envoy does).
func (s *Scheduler[T, ID]) reserveEjection() bool {
	size := s.size.Load()
	limit := size - s.pool.excluded.Load() - 1
	if share := s.ejection.MaxEjectedShare; share > 0 {
		limit = min(limit, max(1, int64(share*float64(size))))
	}
	for {
		cur := s.pool.ejected.Load()
		if cur >= limit {
			return false
		}
		if s.pool.ejected.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

// count adds an ended hold to the health totals.
func (s *Scheduler[T, ID]) count(end ending, event events.EventType) {
	if end.how == failed {
		s.totals.failures.Add(1)
	}
	switch event {
	case events.EventEject:
		s.totals.ejections.Add(1)
	case events.EventSuspend:
		s.totals.suspensions.Add(1)
	}
}

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
func (s *Scheduler[T, ID]) serve(sh *shard[T, ID]) bool {
	served := false
	for s.waiters.Len() > 0 && sh.heap.Len() > 0 {
		sure := true
		if s.global {
			var o *shard[T, ID]
			o, sure = s.betterShard(sh)
			if o != nil {
				if o.mu.TryLock() {
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
		s.grantTo(sh, w)
		served = true
	}
	return served
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
// for it while sh's lock is held could deadlock. The comparator may
// panic: sh is left broken, so that its next user serves the waiters
// (see repair). Requires sh.mu.
func (s *Scheduler[T, ID]) betterShard(sh *shard[T, ID]) (better *shard[T, ID], sure bool) {
	bestValue := sh.heap.Top().Value
	sure = true
	sh.broken = true
	for i := range s.shards {
		o := &s.shards[i]
		if o == sh {
			continue
		}
		n, v, _, ok := o.peek()
		if !ok {
			sure = false
			continue
		}
		if n != nil && s.cmp(v, bestValue) < 0 {
			better, bestValue = o, v
		}
	}
	sh.broken = false
	return better, sure
}

// serveFrom gives a waiter (see pop) the top of o, if it is still better
// than sh's, and reports whether it did. The caller holds sh.mu and took
// o.mu with TryLock (never waiting for it, which could deadlock: another
// giver may hold o and want sh); serveFrom unlocks it. A panic in the
// comparator, here or in grantTo, leaves sh broken, so that its next user
// serves its waiters, and o too once o's top is compared (see repair).
func (s *Scheduler[T, ID]) serveFrom(o, sh *shard[T, ID], sure bool) bool {
	defer o.mu.Unlock()
	sh.broken = true
	s.repair(o) // which may serve waiters itself
	top := o.heap.Top()
	if top == nil || s.waiters.Len() == 0 {
		sh.broken = false
		return false
	}
	o.broken = true
	better := s.cmp(top.Value, sh.heap.Top().Value) < 0
	o.broken = false
	var w *waitq.Waiter[grant[T, ID]]
	if better {
		w = s.pop(sure)
	}
	if w == nil {
		sh.broken = false
		return false
	}
	s.grantTo(o, w)
	sh.broken = false
	return true
}

// grantTo gives waiter w the top of sh. If the comparator panics, w goes
// back to the front of the queue so it is not forgotten, the shard is
// left broken, so that its next user serves it, and the panic continues to the
// caller that made the resource available (whose own operation is done).
func (s *Scheduler[T, ID]) grantTo(sh *shard[T, ID], w *waitq.Waiter[grant[T, ID]]) {
	granted := false
	defer func() {
		if granted {
			return
		}
		sh.broken = true
		if !s.waiters.PushFront(w) {
			w.C <- grant[T, ID]{err: crserrors.ErrSchedulerClosed}
		}
	}()
	var g grant[T, ID]
	s.hold(sh, sh.heap.Top(), w.Lease, &g)
	granted = true
	w.C <- g
	s.emit(events.EventAcquire, g.node.Key)
}

// repair brings sh back after a comparator panicked under its lock in an
// earlier operation (see shard.broken): it orders the heap again,
// publishes it, and serves the waiters the panic may have kept from a
// resource. Every operation calls it right after locking sh, with the
// unlock deferred: it runs the comparator, which may panic again and
// leave sh broken.
func (s *Scheduler[T, ID]) repair(sh *shard[T, ID]) {
	if sh.broken {
		sh.heap.Init()
		sh.broken = false
		sh.publish()
		s.serve(sh)
	}
}
