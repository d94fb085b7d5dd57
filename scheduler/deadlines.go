package scheduler

import (
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/deadline"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
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

// report reports what a committed transition of n left to report (see
// shard.Change): the rests it found over, and its rest's deadline moved.
func (s *Scheduler[T, ID]) report(n *node.Node[T, ID], c shard.Change) {
	for range c.Resumed {
		s.emit(events.EventResume, n.Key)
	}
	s.restMoved(n, c.RestWas)
}
