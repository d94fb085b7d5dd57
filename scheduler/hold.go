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
// anonymous hold when i < 0. It applies the resource's health rules in
// the same step: the release cooldown, the failure count and ejection. A
// draining node whose last hold this was leaves the scheduler. It returns
// the event a resulting rest calls for (EventSuspend, EventEject), or
// noEvent.
// Requires sh.mu.
func (s *Scheduler[T, ID]) unhold(sh *shard.Shard[T, ID], n *node.Node[T, ID], i int, end ending) events.EventType {
	if end == (ending{how: succeeded}) && s.releaseCooldown == 0 &&
		n.State == node.Held && n.Holders <= n.Capacity && n.RestUntil == 0 {
		// The common release, of an anonymous hold or a lease, frees a
		// slot of a full node that does not rest, and so only moves it
		// back into the heap: a branch of its own, since the
		// bookkeeping below measured to cost more than the move. The
		// holder count goes first, since the heap breaks ties by it;
		// the lease goes once the move is done, with nothing to undo.
		sh.Save(n, shard.SavingHolders)
		n.Holders--
		sh.Holders--
		sh.Activate(n)
		sh.Commit()
		n.ResetFailures()
		s.dropLease(n, i)
		return noEvent
	}
	// The lease goes once place is done: place looks at the holder
	// count, not at the leases, so a panic in it leaves no lease to put
	// back.
	sh.Save(n, shard.SavingHolders|shard.SavingHealth)
	back := sh.LimitsOnly(n) // n may rest: freeing a slot can leave only its limits in the way
	n.Holders--
	sh.Holders--
	sh.Recount(n, back)
	failures, ejections := n.Health()
	rest := n.RestUntil
	switch end.how {
	case succeeded:
		n.ResetFailures()
	case failed:
		n.SetHealth(failures+1, ejections)
	}
	if n.State == node.Draining {
		sh.Commit() // no comparator below
		if n.Holders == 0 {
			sh.SetState(n, node.Removed)
			s.nodes.Delete(n.Key) // leaving: the affinity ring lost it at Remove
		}
		s.dropLease(n, i)
		s.count(end, noEvent)
		return noEvent
	}
	// A rest that is over ended before this release: restAfter would
	// replace it unreported.
	resumed := sh.ForgetEnded(n, s.now())
	event := s.restAfter(sh, n, end)
	s.place(sh, n)
	sh.Commit()
	if resumed {
		s.emit(events.EventResume, n.Key)
	}
	s.restMoved(n, rest)
	s.dropLease(n, i)
	s.count(end, event)
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
