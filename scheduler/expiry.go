package scheduler

import (
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/deadline"
	"github.com/crsched/crs/internal/node"
)

// The scheduler's deadlines (see package deadline) are the end of a lease
// or of a rest of a node, and the wake of a shard's waiters.

func leaseEnd[T any, ID comparable](n *node.Node[T, ID], token uint64) deadline.Entry[*node.Node[T, ID]] {
	return deadline.Entry[*node.Node[T, ID]]{Kind: deadline.LeaseEnd, Node: n, Token: token}
}

func restEnd[T any, ID comparable](n *node.Node[T, ID]) deadline.Entry[*node.Node[T, ID]] {
	return deadline.Entry[*node.Node[T, ID]]{Kind: deadline.RestEnd, Node: n}
}

func wake[T any, ID comparable](shard int) deadline.Entry[*node.Node[T, ID]] {
	return deadline.Entry[*node.Node[T, ID]]{Kind: deadline.Wake, Shard: shard}
}

// restMoved keeps the deadlines in step with n's rest after a committed
// change that may have moved it from was: it queues the new rest, if
// any, and drops the entry of the old one (a rest other than the one
// queued last is never queued: every change that sets one queues it).
// Requires n's shard lock.
func (s *Scheduler[T, ID]) restMoved(n *node.Node[T, ID], was int64) {
	if n.RestUntil == was {
		return
	}
	if n.RestUntil != 0 {
		s.deadlines.Schedule(n.RestUntil, restEnd(n))
	}
	s.deadlines.Drop(was, restEnd(n))
}

// due handles a deadline that came due, on the timer's goroutine. Each
// may be stale: the rest extended or ended early, the lease released or
// extended. A panic here is the timer's to recover (see deadline.Timer).
func (s *Scheduler[T, ID]) due(e deadline.Entry[*node.Node[T, ID]]) {
	switch e.Kind {
	case deadline.LeaseEnd:
		s.leaseEnded(e.Node, e.Token)
	case deadline.RestEnd:
		s.restEnded(e.Node)
	case deadline.Wake:
		s.room.Woken(&s.shards[e.Shard])
	}
}

// leaseEnded reclaims the lease with token on n if it is still there and
// past its deadline.
func (s *Scheduler[T, ID]) leaseEnded(n *node.Node[T, ID], token uint64) {
	sh := &s.shards[n.Shard]
	rest, expired := noEvent, false
	func() {
		sh.Lock()
		defer sh.Unlock()
		s.room.Repair(sh, n)
		i := n.FindLease(token)
		if i < 0 || s.now() < n.Lease(i).Deadline {
			return // released, or extended
		}
		rest = s.unhold(sh, n, i, ending{how: reclaimed})
		expired = true
		s.expired.Add(1)
		// The timer goroutine has nothing else to do, so a waiter served
		// here gets a processor without yielding.
		s.room.ServeAfter(sh)
	}()
	if expired {
		s.emit(events.EventExpire, n.Key)
	}
	if rest != noEvent {
		s.emit(rest, n.Key)
	}
}

// restEnded ends n's rest if it is over, and places the node.
func (s *Scheduler[T, ID]) restEnded(n *node.Node[T, ID]) {
	sh := &s.shards[n.Shard]
	resumed := false
	func() {
		sh.Lock()
		defer sh.Unlock()
		s.room.Repair(sh, n)
		if n.RestUntil == 0 || s.now() < n.RestUntil {
			return // ended early, or extended: a later entry is queued
		}
		// place leaves an excluded node as it is, so its rest ends, and
		// is reported, here; place reports the others'.
		sh.Save(n, 0)
		resumed = n.State == node.Excluded && sh.ForgetEnded(n, s.now())
		was := n.RestUntil
		s.place(sh, n)
		sh.Commit()
		if n.RestUntil != was && n.RestUntil != 0 { // the limits' rest after a suspension
			s.deadlines.Schedule(n.RestUntil, restEnd(n))
		}
		s.room.ServeAfter(sh)
	}()
	if resumed {
		s.emit(events.EventResume, n.Key)
	}
}
