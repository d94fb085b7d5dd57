package scheduler

import (
	"fmt"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/node"
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
	var was node.Lease
	var at int64
	err := s.onLease(l, func(n *node.Node[T, ID], e *node.Lease, now int64) error {
		was, at = *e, now
		e.Settle(n.Budgets(), actual, now)
		return nil
	})
	if err == nil {
		s.room.Settled(&was, actual, at)
	}
	return err
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
		b := n.Budgets().Named(name)
		if b == nil {
			return fmt.Errorf("observe %q: %w", name, crserrors.ErrUnknownLimit)
		}
		n.Budgets().Admitted(now)
		b.Observe(now, remaining, reset)
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
		c, err := sh.Rebudget(n, e, now, func() error { return change(n, e, now) })
		if err != nil {
			return false, err
		}
		s.report(n, c)
		return s.room.ServeAfter(sh), nil
	}()
	yieldTo(served)
	return err
}

// Reported is what a provider said about one limit of a resource in its
// answer to a call (for OpenAI, the x-ratelimit-limit-*,
// x-ratelimit-remaining-* and x-ratelimit-reset-* headers of one name).
type Reported struct {
	// Remaining is the units the provider had left when it answered;
	// negative: not reported.
	Remaining int64
	// Reset is how long until the provider's bucket is full again; 0:
	// not reported.
	Reset time.Duration
	// Limit is the size of the provider's bucket; 0: not reported. A
	// Limit other than the resource's Max becomes its Max, Per kept.
	Limit int64
}

// Reconcile takes a call's answer back in one step: it settles the
// lease to actual, as Settle (the lease's tenant, its budgets and its
// share, too), then applies what the provider reported for each limit
// name, so that no waiter is ever served on a level between the two.
//
// A reported Limit other than the bucket's Max retunes the bucket (as an
// Update whose Limits changed, for this one limit): the provider is the
// authority on its limits. A reported Remaining first lowers the bucket
// as Observe does, then raises it to Remaining less what the provider
// cannot have counted yet: the estimates of the resource's other leases
// (granted, maybe not yet received). So a refund the provider gave
// after an earlier answer's figure, or an overrun counted both by an
// earlier answer's figure and by its own settlement, is put right by
// the next answer, and the bucket never believes it has more than the
// provider will have once the calls out are counted. The figures must
// be the provider's as it answered, this call charged what it spent: a
// non-streamed answer's headers. (A provider that keeps the estimate
// charged reports that, and the bucket follows it.)
//
// It returns what Settle returns, ErrInvalidCost for a Remaining above
// config.MaxUnits or a Limit below 0 or above it, ErrInvalidDuration for
// a negative Reset, and ErrUnknownLimit when the resource has no limit
// of a reported name; in each case it changes nothing.
func (l *Lease[T, ID]) Reconcile(actual config.Cost, reported map[string]Reported) error {
	if err := actual.Validate(); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	for name, r := range reported {
		switch {
		case r.Remaining > config.MaxUnits || r.Limit < 0 || r.Limit > config.MaxUnits:
			return fmt.Errorf("reconcile %q: %w: remaining %d, limit %d", name, crserrors.ErrInvalidCost, r.Remaining, r.Limit)
		case r.Reset < 0:
			return fmt.Errorf("reconcile %q: %w: reset %v", name, crserrors.ErrInvalidDuration, r.Reset)
		}
	}
	if l.released || l.s == nil {
		return crserrors.ErrLeaseReleased
	}
	if l.s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	var was, now []config.Limit
	var paid node.Lease
	var paidAt int64
	err := l.s.onLease(l, func(n *node.Node[T, ID], e *node.Lease, at int64) error {
		qs := n.Budgets()
		for name := range reported {
			if qs.Named(name) == nil {
				return fmt.Errorf("reconcile %q: %w", name, crserrors.ErrUnknownLimit)
			}
		}
		was, paid, paidAt = qs.Limits(), *e, at
		e.Settle(qs, actual, at)
		for i := range qs {
			if r, ok := reported[qs[i].Name]; ok && !qs[i].PerHold() {
				qs[i].Reconcile(at, r.Limit, r.Remaining, r.Reset, n.OthersPaid(l.token, &qs[i]))
			}
		}
		now = qs.Limits()
		return nil
	})
	if err != nil {
		return err
	}
	l.s.room.Settled(&paid, actual, paidAt) // as Settle does
	if l.s.budgeted && l.s.profiles.Move(was, now) && l.s.room.Len() > 0 {
		l.s.room.Kick(-1) // the oldest waiter's cost may now exceed every resource's limits
	}
	return err
}
