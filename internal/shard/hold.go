package shard

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/node"
)

// Hold hands n, an active node of s, to a caller of tenant t at priority
// prio: it takes a rate-limit token if n is limited, cost from its
// budgets (which must cover it, see Covering), and a hold: a lease when
// lease is set, recorded on n with its token and its deadline (after the
// pool's LeaseTTL; 0: none), which it returns for the caller's timer,
// otherwise an anonymous hold under the Exclusive policy and none under
// Shared (a shared resource is only read). It returns what to report as
// well. now is read only if n is limited or rests, or the lease has a
// deadline. Requires s.mu.
func (s *Shard[T, ID]) Hold(n *node.Node[T, ID], lease bool, cost config.Cost, t *budget.Tenant, prio int, now Clock) (token uint64, deadline int64, c Change) {
	c.RestWas = n.RestUntil
	if s.Exclusive && n.RestUntil == 0 && n.Holders+1 >= n.Capacity && !n.Budgeted() {
		// The common exclusive hold, by Acquire or by Lease, takes the
		// last slot of a node with no rate limit or rest: the node
		// leaves the heap, which then no longer orders by its holder
		// count, so the counts change after the move and nothing needs
		// undoing. A branch of its own, since the bookkeeping below
		// measured to cost more than it.
		s.Save(n, 0)
		s.Deactivate(n, node.Held)
		s.Commit()
		n.Holders++
		s.Holders++
	} else if holds, limited := lease || s.Exclusive, n.Budgeted(); holds || limited {
		s.Save(n, SavingHolders|SavingBudgets)
		at := now.Now()
		if limited {
			s.Meter(n, cost, at)
		}
		if holds {
			n.Holders++
			s.Holders++
		}
		// The lease is recorded once Place is done, as in the branch
		// above: Place looks at the holder count, not at the leases,
		// so a panic in it leaves no lease to take back.
		c.resumed(s.Place(n, at))
		s.Commit()
	}
	if !lease {
		return 0, 0, c
	}
	if ttl := s.pool.LeaseTTL; ttl > 0 {
		deadline = node.After(now.Now(), ttl)
	}
	token = n.Issue()
	n.AddLease(node.Lease{Token: token, Deadline: deadline, Cost: cost, Tenant: t, Priority: prio})
	return token, deadline, c
}

// Unhold ends one hold on n, applying the pool's health rules in the
// same step; the caller drops the hold's lease record, if any, once it
// returns. A draining node whose last hold this was leaves the pool
// (and the lookup map). It returns what to report, and the event a
// resulting rest calls for (EventSuspend, EventEject) or NoEvent. now
// is read only if a rest may begin or end. Requires s.mu.
func (s *Shard[T, ID]) Unhold(n *node.Node[T, ID], end Ending, now Clock) (Change, events.EventType) {
	c := Change{RestWas: n.RestUntil}
	if end == (Ending{How: Succeeded}) && s.pool.Health.ReleaseCooldown == 0 &&
		n.State == node.Held && n.Holders <= n.Capacity && n.RestUntil == 0 {
		// The common release, of an anonymous hold or a lease, frees a
		// slot of a full node that does not rest, and so only moves it
		// back into the heap: a branch of its own, since the
		// bookkeeping below measured to cost more than the move. The
		// holder count goes first, since the heap breaks ties by it.
		s.Save(n, SavingHolders)
		n.Holders--
		s.Holders--
		s.Activate(n)
		s.Commit()
		n.ResetFailures()
		return c, NoEvent
	}
	s.Save(n, SavingHolders|SavingHealth)
	back := s.LimitsOnly(n) // n may rest: freeing a slot can leave only its limits in the way
	n.Holders--
	s.Holders--
	s.Recount(n, back)
	failures, ejections := n.Health()
	switch end.How {
	case Succeeded:
		n.ResetFailures()
	case Failed:
		n.SetHealth(failures+1, ejections)
	}
	if n.State == node.Draining {
		s.Commit() // no comparator below
		if n.Holders == 0 {
			s.SetState(n, node.Removed)
			s.nodes.Delete(n.Key) // leaving: the affinity ring lost it at Remove
		}
		return c, NoEvent
	}
	// A rest that is over ended before this release: restAfter would
	// replace it unreported.
	at := now.Now()
	c.resumed(s.ForgetEnded(n, at))
	event := s.restAfter(n, end, at)
	c.resumed(s.Place(n, at))
	s.Commit()
	return c, event
}
