package scheduler

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// hold hands n, an active node of sh, to a caller of tenant t at priority
// prio: it takes a rate-limit token if n is limited, cost from its budgets
// (which must cover it, see shard.Shard.Covering), and a hold: a lease
// when lease is set, whose token and deadline it returns, otherwise an
// anonymous hold under the Exclusive policy and none under Shared (a
// shared resource is only read). Requires sh.mu.
func (s *Scheduler[T, ID]) hold(sh *shard.Shard[T, ID], n *node.Node[T, ID], lease bool, cost config.Cost, t *budget.Tenant, prio int) (token uint64, deadline int64) {
	if sh.Exclusive && n.RestUntil == 0 && n.Holders+1 >= n.Capacity && !n.Budgeted() {
		// The common exclusive hold, by Acquire or by Lease, takes the
		// last slot of a node with no rate limit or rest: the node
		// leaves the heap, which then no longer orders by its holder
		// count, so the counts change after the move and nothing needs
		// undoing. A branch of its own, since the bookkeeping below
		// measured to cost more than it.
		sh.Save(n, 0)
		sh.Deactivate(n, node.Held)
		sh.Commit()
		n.Holders++
		sh.Holders++
		if lease {
			return s.addLease(n, s.leaseDeadline(), cost, t, prio)
		}
		return 0, 0
	}
	holds := lease || sh.Exclusive
	limited := n.Budgeted()
	if !holds && !limited {
		return 0, 0
	}
	rest := n.RestUntil
	sh.Save(n, shard.SavingHolders|shard.SavingBudgets)
	if limited {
		sh.Meter(n, cost, s.now())
	}
	if holds {
		n.Holders++
		sh.Holders++
	}
	// The lease is recorded once place is done, as in the branch above:
	// place looks at the holder count, not at the leases, so a panic in
	// it leaves no lease to take back.
	s.place(sh, n)
	sh.Commit()
	s.restMoved(n, rest)
	if lease {
		return s.addLease(n, s.leaseDeadline(), cost, t, prio)
	}
	return 0, 0
}

// leaseDeadline is when a lease granted now expires; 0: never.
func (s *Scheduler[T, ID]) leaseDeadline() int64 {
	if s.leaseTTL > 0 {
		return s.after(s.leaseTTL)
	}
	return 0
}

// addLease records a new lease on n, held already, due at deadline (0:
// never), for a caller of tenant t at priority prio that pays cost,
// queues its expiry, and returns its token and deadline.
func (s *Scheduler[T, ID]) addLease(n *node.Node[T, ID], deadline int64, cost config.Cost, t *budget.Tenant, prio int) (uint64, int64) {
	token := n.Issue()
	n.AddLease(node.Lease{Token: token, Deadline: deadline, Cost: cost, Tenant: t, Priority: prio})
	if deadline != 0 {
		s.deadlines.Schedule(deadline, leaseEnd(n, token))
	}
	return token, deadline
}

// unhold ends one hold on n: the lease at position i of n.Leases(), or an
// anonymous hold when i < 0, with the resource's health rules (see
// shard.Shard.Unhold), and returns the event a resulting rest calls for
// (EventSuspend, EventEject), or noEvent. Requires sh.mu.
func (s *Scheduler[T, ID]) unhold(sh *shard.Shard[T, ID], n *node.Node[T, ID], i int, end shard.Ending) events.EventType {
	c, event := sh.Unhold(n, end, s.now)
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
	ended := *n.Lease(i)
	n.DropLease(i)
	s.deadlines.Drop(ended.Deadline, leaseEnd(n, ended.Token))
}

// place is shard.Place at the scheduler's time; it reports the end of a
// rest that Place found over (under the lock: emit never blocks and runs
// no user code).
func (s *Scheduler[T, ID]) place(sh *shard.Shard[T, ID], n *node.Node[T, ID]) {
	if sh.Place(n, s.now()) {
		s.emit(events.EventResume, n.Key)
	}
}
