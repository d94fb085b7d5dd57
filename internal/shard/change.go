package shard

import (
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/node"
)

// The administrative transitions of one node (Exclude, Include,
// Suspend, Remove, Update, Insert, EndRest, Rebudget): each takes the time as an argument and returns what its
// caller reports once the step is done (a Change), so that a shard
// knows no scheduler. Each requires s.mu; the comparator may panic in
// it, and the step's undo then puts the node back (see Save).

// Clock is the time of a step that may need it: a transition reads it
// only when it needs it, as a node that rests or has limits does.
type Clock interface{ Now() int64 }

// Change is what a transition leaves its caller to report: the rests it
// found over (Resumed, one EventResume each), and the deadline of the
// node's rest before it (RestWas), which the caller's timer moves to the
// node's RestUntil if the two differ.
type Change struct {
	Resumed int
	RestWas int64
}

// resumed counts a rest found over.
func (c *Change) resumed(over bool) {
	if over {
		c.Resumed++
	}
}

// Exclude takes n, active or resting, out of the pool; a suspension or
// ejection it was serving ends (a rate limit's rest is kept). It returns
// ErrResourceNotActive if n is held (every slot taken) or excluded.
func (s *Shard[T, ID]) Exclude(n *node.Node[T, ID], now int64) (Change, error) {
	c := Change{RestWas: n.RestUntil}
	switch n.State {
	case node.Active:
		s.Save(n, 0)
		s.Deactivate(n, node.Excluded)
		s.Commit()
	case node.Resting:
		s.SetState(n, node.Excluded)
	default:
		return c, crserrors.ErrResourceNotActive
	}
	if n.Rest == node.Suspended || n.Rest == node.Ejected {
		// A rest that is over ended before the exclusion: its end is
		// reported, as its timer would have. One still running just
		// ends.
		c.resumed(s.ForgetEnded(n, now))
		s.SetRest(n, 0, node.NoRest)
	}
	return c, nil
}

// Include returns n, excluded, to the pool, or ends its suspension or
// ejection early, and clears its failure count. It returns
// ErrResourceNotInactive if n is active, and ErrResourceNotExcluded if
// it is held (including it would hand it to a second holder) or only
// waits for its next rate-limit token (which no one may hand out early).
func (s *Shard[T, ID]) Include(n *node.Node[T, ID], now int64) (Change, error) {
	c := Change{RestWas: n.RestUntil}
	switch {
	case n.State == node.Active:
		return c, crserrors.ErrResourceNotInactive
	case n.State == node.Held,
		n.State == node.Resting && n.Rest == node.RateLimited:
		return c, crserrors.ErrResourceNotExcluded
	}
	why := n.Rest
	s.Save(n, SavingHealth)
	c.resumed(s.ForgetEnded(n, now))
	if why != node.RateLimited {
		s.SetRest(n, 0, node.NoRest)
	}
	n.ResetFailures()
	s.SetState(n, node.Held) // off the heap, for Place to decide
	c.resumed(s.Place(n, now))
	s.Commit()
	return c, nil
}

// Suspend makes n rest until until, unless it rests longer already (a
// rate limit's rest gives way); a rest that is over ends first, and is
// not extended. A node with holders rests once the last one releases.
func (s *Shard[T, ID]) Suspend(n *node.Node[T, ID], now, until int64) Change {
	c := Change{RestWas: n.RestUntil}
	s.Save(n, 0)
	c.resumed(s.ForgetEnded(n, now))
	if until > n.RestUntil || n.Rest == node.RateLimited {
		s.SetRest(n, until, node.Suspended)
	}
	c.resumed(s.Place(n, now))
	s.Commit()
	return c
}

// Remove takes n out of the pool and the lookup map, whatever its
// state; a node with holders drains instead, its key kept in the map
// until the last one ends its hold (Unhold). Readers without the lock see
// the pool's size and the shard change at once (Version).
func (s *Shard[T, ID]) Remove(n *node.Node[T, ID]) Change {
	s.Begin()
	defer s.End()
	c := Change{RestWas: n.RestUntil}
	to := node.Removed
	if n.Holders > 0 {
		to = node.Draining
	}
	if n.State == node.Active {
		s.Save(n, 0)
		s.Deactivate(n, to)
		s.Commit()
	} else {
		s.SetState(n, to)
	}
	if n.Rest == node.Ejected {
		// The pool is smaller by one: its ejection slot goes back, or
		// later ejections would be refused for good.
		s.SetRest(n, 0, node.NoRest)
	}
	if to == node.Removed {
		s.nodes.Delete(n.Key)
	} else {
		n.Leaving.Store(true)
	}
	s.pool.Size.Add(-1)
	return c
}

// Update gives n the value v, the capacity and the limits (nil: keep
// none, or those n has for a rate limit) the new value gives, and puts
// it back where they place it. A bucket whose name stays keeps its
// level (budget.Budgets.Retuned). now is read only if n has limits or
// may change state.
func (s *Shard[T, ID]) Update(n *node.Node[T, ID], v T, capacity int32, limits []config.Limit, now Clock) Change {
	c := Change{RestWas: n.RestUntil}
	if n.State == node.Active && n.Capacity == capacity && limits == nil && !n.Budgeted() {
		// The common case, an active resource that stays active, only
		// moves in its heap: a branch of its own, since the bookkeeping
		// below measured to cost more than the move.
		s.Save(n, SavingValue)
		n.Stage(v)
		s.Fix(n)
		s.Commit()
		return c
	}
	s.Save(n, SavingValue|SavingHolders|SavingBudgets)
	// Readers without the lock see the new value once Place has made
	// the node the top, or found it there (see publishTop).
	n.Stage(v)
	back := s.LimitsOnly(n)
	n.Capacity = capacity
	s.Recount(n, back)
	at := now.Now()
	if limits != nil || n.Budgeted() {
		n.SetBudgets(n.Budgets().Retuned(limits, at, n.Extra().Issued))
		n.SetFullAt(n.Budgets().FullAt(at))
		// A faster rate or a larger Max brings the end of a rest
		// forward; a wait kept from the old limits could be forever
		// (node.Never).
		s.SetLimitRest(n, LimitRest(n, at))
	}
	c.resumed(s.Place(n, at))
	s.Commit()
	return c
}

// EndRest ends n's rest if it is over at now, and reports whether it
// was: n goes where its state puts it (Place), or, excluded, stays out.
// Change.Resumed counts the rest's end, whoever reports it; a rest for
// the limits may follow a suspension (RestUntil then differs from
// RestWas).
func (s *Shard[T, ID]) EndRest(n *node.Node[T, ID], now int64) (c Change, over bool) {
	c.RestWas = n.RestUntil
	if n.RestUntil == 0 || now < n.RestUntil {
		return c, false
	}
	s.Save(n, 0)
	// Place leaves an excluded node as it is, so its rest ends here.
	c.resumed(n.State == node.Excluded && s.ForgetEnded(n, now))
	c.resumed(s.Place(n, now))
	s.Commit()
	return c, true
}

// Insert puts n, new, into the lookup map and the heap, and the pool is
// one larger, unless n's key is taken: it returns the node that has it
// then, and changes nothing. Readers without the lock see the map, the
// pool's size and the shard change at once (Version).
func (s *Shard[T, ID]) Insert(n *node.Node[T, ID]) (present *node.Node[T, ID]) {
	s.Begin()
	defer s.End()
	// n is in the map before it is in the heap, but only while s's lock
	// is held: anyone who finds it must take the lock, and by then it is
	// either fully active or rolled back to Removed.
	if present, ok := s.nodes.Insert(n.Key, n); !ok {
		return present
	}
	s.Save(n, SavingInsert)
	s.Activate(n)
	s.Commit()
	s.pool.Size.Add(1)
	return nil
}

// Rebudget runs change on n's budgets and on e, the record of one of its
// leases, in one step at now, and moves n where its budgets now put it:
// resting while one holds less than a unit, back in the heap once a
// refund gives every one a unit, in the heap's order by its FullAt. An
// error from change ends the step there.
func (s *Shard[T, ID]) Rebudget(n *node.Node[T, ID], e *node.Lease, now int64, change func() error) (Change, error) {
	c := Change{RestWas: n.RestUntil}
	s.Save(n, SavingBudgets)
	s.SaveLease(e)
	if err := change(); err != nil {
		return c, err
	}
	s.SetLimitRest(n, LimitRest(n, now))
	n.SetFullAt(n.Budgets().FullAt(now))
	c.resumed(s.Place(n, now))
	s.Commit()
	return c, nil
}
