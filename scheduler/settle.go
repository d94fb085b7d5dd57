package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// Settle replaces the lease's estimate (WithCost, or the default 1 of
// each limit) by what the call actually spent, for the limit names actual
// gives: a call that spent less refunds the difference (up to the
// bucket's Max), one that spent more takes the rest, which may put the
// bucket in debt; the resource then rests until the debt is repaid and a
// unit more has refilled. Names actual does not give keep their estimate.
// Settling again, through this handle or any copy of it, corrects what
// the last settlement recorded. A bucket added by an Update after the
// lease was granted, which the lease did not pay into, is left alone.
//
// It returns ErrInvalidCost for a negative or too large amount, and
// ErrLeaseReleased (or ErrLeaseExpired) once the lease has ended,
// changing nothing: settle before Release.
func (l *Lease[T, ID]) Settle(actual config.Cost) error {
	if err := actual.Validate(); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	if l.released || l.s == nil {
		return crserrors.ErrLeaseReleased
	}
	if l.s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	return l.s.settle(l, actual)
}

func (s *Scheduler[T, ID]) settle(l *Lease[T, ID], actual config.Cost) error {
	return s.onLease(l, func(n *node.Node[T, ID], e *node.Lease, now int64) error {
		paid := config.Cost(e.Cost)
		for i, qs := 0, n.Budgets(); i < len(qs); i++ {
			a, ok := actual[qs[i].Name]
			if !ok || qs[i].Born >= l.token || qs[i].PerHold() {
				continue
			}
			qs[i].Bucket.Settle(now, paid.Of(qs[i].Name), a)
		}
		if len(actual) > 0 {
			c := make(config.Cost, len(paid)+len(actual))
			maps.Copy(c, paid)
			maps.Copy(c, actual)
			e.Cost = c
		}
		return nil
	})
}

// Observe lowers the resource's budget called name to what the provider
// reports: remaining units left now, and its own bucket full again after
// reset (for OpenAI, the x-ratelimit-remaining-tokens and
// x-ratelimit-reset-tokens headers). The bucket then never believes it has
// more than the provider says, now or as both refill; it is never raised,
// since a provider that reports more has not yet counted the calls in
// flight. A reset longer than the limit's Per describes another window
// than this bucket's (OpenAI's own sample reports 149,984 of 150,000
// tokens left with a reset of 6m0s on a per-minute limit), so only
// remaining is applied then. A resource left with less than one unit
// rests until it has one. A 429 with a Retry-After is Cooldown's job, not
// Observe's.
//
// It returns ErrInvalidCost for a negative remaining or one above
// config.MaxUnits, ErrInvalidDuration for a negative reset,
// ErrUnknownLimit when the resource has no limit called name, and
// ErrLeaseReleased (or ErrLeaseExpired) once the lease has ended; in each
// case it changes nothing.
func (l *Lease[T, ID]) Observe(name string, remaining int64, reset time.Duration) error {
	switch {
	case remaining < 0 || remaining > config.MaxUnits:
		return fmt.Errorf("observe %q: %w: remaining %d", name, crserrors.ErrInvalidCost, remaining)
	case reset < 0:
		return fmt.Errorf("observe %q: %w: reset %v", name, crserrors.ErrInvalidDuration, reset)
	case l.released || l.s == nil:
		return crserrors.ErrLeaseReleased
	case l.s.closed.Load():
		return crserrors.ErrSchedulerClosed
	}
	return l.s.onLease(l, func(n *node.Node[T, ID], _ *node.Lease, now int64) error {
		qs := n.Budgets()
		i := slices.IndexFunc(qs, func(b budget.Budget) bool { return b.Name == name && !b.PerHold() })
		if i < 0 {
			return fmt.Errorf("observe %q: %w", name, crserrors.ErrUnknownLimit)
		}
		if reset > qs[i].Bucket.Per() {
			reset = 0
		}
		qs[i].Bucket.Clamp(now, remaining, reset)
		return nil
	})
}

// onLease runs change on the budgets of l's resource and on its lease
// record e, under the shard's lock, while the lease lasts, then moves the
// resource where its budgets now put it: resting while one holds less
// than a unit, back in the heap once a refund gives every one a unit,
// and in the heap's order by its FullAt. It serves waiters a refund may
// now cover.
func (s *Scheduler[T, ID]) onLease(l *Lease[T, ID], change func(n *node.Node[T, ID], e *node.Lease, now int64) error) error {
	n := l.node
	sh := &s.shards[n.Shard]
	served, err := func() (bool, error) {
		sh.Lock()
		defer sh.Unlock()
		s.room.Repair(sh, nil)
		i := n.FindLease(l.token)
		if i < 0 {
			return false, s.leaseGone(l.deadline)
		}
		now := s.now()
		e := n.Lease(i)
		if e.Deadline != 0 && now >= e.Deadline {
			return false, crserrors.ErrLeaseExpired // the timer is about to reclaim it
		}
		if !n.Budgeted() {
			return false, change(n, e, now) // nothing to move
		}
		rest := n.RestUntil
		sh.Save(n, shard.SavingBudgets)
		sh.SaveLease(e)
		if err := change(n, e, now); err != nil {
			return false, err
		}
		sh.SetLimitRest(n, shard.LimitRest(n, now))
		n.SetFullAt(n.Budgets().FullAt(now))
		s.place(sh, n)
		sh.Commit()
		s.restMoved(n, rest)
		return s.room.ServeAfter(sh), nil
	}()
	yieldTo(served)
	return err
}
