package scheduler

import (
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/deadline"
	"github.com/crsched/crs/internal/node"
)

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
		rest, expired = s.reclaim(sh, n, i), true
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
	sh.Lock()
	defer sh.Unlock()
	s.room.Repair(sh, n)
	c, over := sh.EndRest(n, s.now())
	if !over {
		return // ended early, or extended: a later entry is queued
	}
	for range c.Resumed { // before a waiter acquires n (emit never blocks)
		s.emit(events.EventResume, n.Key)
	}
	if n.RestUntil != c.RestWas && n.RestUntil != 0 { // the limits' rest after a suspension
		s.deadlines.Schedule(n.RestUntil, restEnd(n))
	}
	s.room.ServeAfter(sh)
}
