package scheduler

import (
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// unhold ends one hold on n: the lease at position i of n.Leases(), or an
// anonymous hold when i < 0, with the resource's health rules (see
// shard.Shard.Unhold), and returns the event a resulting rest calls for
// (EventSuspend, EventEject), or noEvent. Requires sh.mu.
func (s *Scheduler[T, ID]) unhold(sh *shard.Shard[T, ID], n *node.Node[T, ID], i int, end shard.Ending) events.EventType {
	c, event := sh.Unhold(n, end, (*host[T, ID])(s))
	if c.Resumed != 0 || c.RestWas != n.RestUntil { // not the common release
		s.report(n, c)
	}
	// The lease goes once the step is done: the step looks at the
	// holder count, not at the leases, so a panic in it leaves no lease
	// to put back.
	s.dropLease(n, i)
	if end.How == shard.Failed || event != noEvent {
		s.count(end, event)
	}
	return event
}

// dropLease ends the record of the lease at position i of n's leases,
// and its deadline; nothing when i < 0 (an anonymous hold).
func (s *Scheduler[T, ID]) dropLease(n *node.Node[T, ID], i int) {
	if i < 0 {
		return
	}
	token, deadline := n.Lease(i).Token, n.Lease(i).Deadline
	n.DropLease(i)
	s.deadlines.Drop(deadline, leaseEnd(n, token))
}

// reclaim ends the lease at position i of n's leases at its deadline,
// counts it, and returns what unhold does. Requires sh's lock. The count
// comes after the step, which a panicking comparator undoes.
func (s *Scheduler[T, ID]) reclaim(sh *shard.Shard[T, ID], n *node.Node[T, ID], i int) events.EventType {
	rest := s.unhold(sh, n, i, shard.Ending{How: shard.Reclaimed})
	s.expired.Add(1)
	return rest
}
