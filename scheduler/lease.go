package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
)

// Lease is one hold on a resource, returned by Scheduler.Lease. It is a
// small value: keep it in a variable and call its methods on that
// variable (they take a pointer, so that Release can remember it was
// called). A Lease identifies its hold by a token that is never reused, so
// a stale Lease (released, expired, or from before a Remove) can never end
// or extend a later lease of the same resource.
//
// Under the Exclusive policy a lease takes one of the resource's slots
// (see config.Config.Capacity) until it is released or expires. Under the
// Shared policy it takes no slot; it counts the caller as in flight, which
// the least-loaded tie-break and Stats use.
type Lease[T any, ID comparable] struct {
	s        *Scheduler[T, ID]
	node     *node.Node[T, ID]
	token    uint64
	value    T
	deadline int64 // as granted or last extended through this handle; 0: none
	released bool
}

// Value is the resource's value when the lease was granted.
func (l *Lease[T, ID]) Value() T { return l.value }

// Key is the resource's key.
func (l *Lease[T, ID]) Key() ID {
	var zero ID
	if l.node == nil {
		return zero
	}
	return l.node.Key
}

// Release ends the lease and returns the slot to the pool (or to the
// oldest waiter), counting a success: it resets the resource's failure
// count. It returns ErrLeaseReleased if the lease was already released,
// and ErrLeaseExpired if it passed its deadline first; in both cases it
// changes nothing. Releasing a lease on a resource removed while leased
// succeeds, and the resource leaves for good with its last lease.
func (l *Lease[T, ID]) Release() error { return l.end(shard.Ending{How: shard.Succeeded}) }

// Cooldown ends the lease and suspends the resource for d, in one step,
// so no other caller can take it in between: for an API key that answered
// 429 with a retry-after, say. It counts neither success nor failure. It
// returns ErrInvalidDuration for d <= 0, and otherwise what Release does.
func (l *Lease[T, ID]) Cooldown(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("cooldown %v: %w", d, crserrors.ErrInvalidDuration)
	}
	return l.end(shard.Ending{How: shard.Cooled, Rest: d})
}

// Fail ends the lease and counts a failure of the resource. With Ejection
// configured, enough failures in a row eject it. It returns what Release
// does.
func (l *Lease[T, ID]) Fail() error { return l.end(shard.Ending{How: shard.Failed}) }

func (l *Lease[T, ID]) end(how shard.Ending) error {
	if l.released || l.s == nil {
		return crserrors.ErrLeaseReleased
	}
	if l.s.closed.Load() {
		return crserrors.ErrSchedulerClosed
	}
	err := l.s.endHold(l.node, l.token, l.deadline, how)
	if err == nil {
		l.released = true
	}
	return err
}

// Extend moves the lease's deadline to d from now, whatever LeaseTTL is
// (a lease without a deadline gets one). It returns ErrInvalidDuration for
// d <= 0, and ErrLeaseReleased or ErrLeaseExpired if the lease has ended.
func (l *Lease[T, ID]) Extend(d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("extend by %v: %w", d, crserrors.ErrInvalidDuration)
	case l.released || l.s == nil:
		return crserrors.ErrLeaseReleased
	case l.s.closed.Load():
		return crserrors.ErrSchedulerClosed
	}
	deadline, err := l.s.extend(l.node, l.token, l.deadline, d)
	if err == nil {
		l.deadline = deadline
	}
	return err
}

// Lease waits like AcquireContext and returns a lease on the resource. The
// lease must be released (or left to expire, with LeaseTTL set).
//
// With WithCost, or with budgets configured (config.Config.Limits), only
// a resource whose every budget covers the cost is handed out, and the
// cost is taken from them in the same step as the hold. A cost that no
// resource covers yet is waited for, without polling, until a refill or
// a refund covers it; a cost above a limit's Max on every resource fails
// at once with ErrCostExceedsLimits (resources where it is above are
// skipped). A cost that names a limit no resource present has is refused
// with ErrUnknownLimit, changing nothing, unless AllowUnknownLimits is
// given. See the package documentation, Budgets.
//
// With WithTenant and WithPriority the call waits in its tenant's and
// priority's place in the order of service (see WithTenant), and also
// spends the cost from its tenant's budgets (config.Config.Tenants).
func (s *Scheduler[T, ID]) Lease(ctx context.Context, opts ...LeaseOption) (Lease[T, ID], error) {
	if len(opts) == 0 {
		return s.lease(ctx, nil, nil)
	}
	ask, err := s.askOf(opts)
	if err != nil {
		return Lease[T, ID]{}, err
	}
	return s.lease(ctx, nil, &ask)
}

// askOf reads the options of a Lease: what it asks for, checked.
func (s *Scheduler[T, ID]) askOf(opts []LeaseOption) (waiting.Grant[T, ID], error) {
	var ask waiting.Grant[T, ID]
	o, err := leaseOptionsOf(opts)
	if err == nil {
		err = s.checkNames(o)
	}
	if err != nil {
		return ask, err
	}
	if ask.Tenant, err = s.tenantOf(o.tenant); err != nil {
		return ask, fmt.Errorf("lease: %w", err)
	}
	if ask.Tenant != nil && ask.Tenant.Exceeds(o.cost) {
		return ask, fmt.Errorf("lease: tenant %q: %w", o.tenant, crserrors.ErrCostExceedsLimits)
	}
	ask.Cost, ask.Priority = o.cost, o.priority
	return ask, nil
}

// LeaseByAffinity waits like AcquireByAffinityContext and returns a lease;
// its options are Lease's.
func (s *Scheduler[T, ID]) LeaseByAffinity(ctx context.Context, id acquire.AffinityIdentifier, opts ...LeaseOption) (Lease[T, ID], error) {
	if id == nil {
		return Lease[T, ID]{}, crserrors.ErrNilAffinityIdentifier
	}
	ask, err := s.askOf(opts)
	if err != nil {
		return Lease[T, ID]{}, err
	}
	return s.lease(ctx, id, &ask)
}

// lease takes a lease for ask (its Cost, Tenant and Priority; nil: the
// default tenant's, at no cost), waiting until ctx ends (see request).
// (ask is a pointer: a call without options then copies no grant.)
func (s *Scheduler[T, ID]) lease(ctx context.Context, id acquire.AffinityIdentifier, ask *waiting.Grant[T, ID]) (Lease[T, ID], error) {
	g := waiting.Grant[T, ID]{Tenant: s.defTenant}
	if ask != nil {
		g = *ask
	}
	start, err := s.begin(id)
	if err == nil {
		err = s.request(ctx, start, id, true, &g)
	}
	if err != nil {
		return Lease[T, ID]{}, err
	}
	return Lease[T, ID]{s: s, node: g.Node, token: g.Token, value: g.Value, deadline: g.Deadline}, nil
}

// endHold ends the lease with token on n and serves waiters from the
// freed slot. handleDeadline tells an expired lease from a released one
// when the node no longer has it. A lease found past its deadline is
// expired here rather than released, so expiry is exact whenever the
// timer runs late.
func (s *Scheduler[T, ID]) endHold(n *node.Node[T, ID], token uint64, handleDeadline int64, end shard.Ending) error {
	sh := &s.shards[n.Shard]
	rest := noEvent
	reclaimedHere := false
	served, err := func() (bool, error) {
		sh.Lock()
		defer sh.Unlock()
		s.room.Repair(sh, n)
		i := n.FindLease(token)
		if i < 0 {
			return false, s.leaseGone(handleDeadline)
		}
		if d := n.Lease(i).Deadline; d != 0 && s.now() >= d {
			rest, reclaimedHere = s.reclaim(sh, n, i), true
			return s.room.ServeAfter(sh), crserrors.ErrLeaseExpired
		}
		rest = s.unhold(sh, n, i, end)
		return s.room.ServeAfter(sh), nil
	}()
	yieldTo(served)
	switch {
	case err == nil:
		s.emit(events.EventRelease, n.Key)
	case reclaimedHere: // not when the timer reclaimed it earlier: it reported that
		s.emit(events.EventExpire, n.Key)
	}
	if rest != noEvent {
		s.emit(rest, n.Key)
	}
	return err
}

// leaseGone says why a lease is no longer on its node: it expired if the
// handle's deadline has passed, otherwise it was released (through a copy
// of the handle).
func (s *Scheduler[T, ID]) leaseGone(handleDeadline int64) error {
	if handleDeadline != 0 && s.now() >= handleDeadline {
		return crserrors.ErrLeaseExpired
	}
	return crserrors.ErrLeaseReleased
}

func (s *Scheduler[T, ID]) extend(n *node.Node[T, ID], token uint64, handleDeadline int64, d time.Duration) (int64, error) {
	sh := &s.shards[n.Shard]
	sh.Lock()
	defer sh.Unlock()
	i := n.FindLease(token)
	if i < 0 {
		return 0, s.leaseGone(handleDeadline)
	}
	now := s.now()
	if old := n.Lease(i).Deadline; old != 0 && now >= old {
		return 0, crserrors.ErrLeaseExpired // the timer is about to reclaim it
	}
	deadline := node.After(now, d)
	s.deadlines.Drop(n.Lease(i).Deadline, leaseEnd(n, token))
	n.Lease(i).Deadline = deadline
	s.deadlines.Schedule(deadline, leaseEnd(n, token))
	return deadline, nil
}

// LeaseOption configures one call of Lease or LeaseByAffinity.
type LeaseOption interface{ leaseOption() }

type leaseOptions struct {
	cost         config.Cost
	allowUnknown bool // AllowUnknownLimits
	tenant       string
	priority     int
}

// costOption is a map, so that passing it as a LeaseOption allocates
// nothing.
type costOption config.Cost

func (costOption) leaseOption() {}

// WithCost makes a lease spend cost from the resource's budgets (see
// config.Config.Limits) instead of the default, 1 unit of every limit. The
// cost is an estimate, taken in the same step as the hold; Lease.Settle
// replaces it by what the call really spent. A limit the cost does not
// name costs 1; a name that a resource has no limit for is ignored by that
// resource, but one that no resource has is refused (ErrUnknownLimit;
// see AllowUnknownLimits). A negative amount, or one above
// config.MaxUnits, makes the call fail with ErrInvalidCost.
func WithCost(cost config.Cost) LeaseOption { return costOption(cost) }

type allowUnknown struct{}

func (allowUnknown) leaseOption() {}

// AllowUnknownLimits lets a WithCost name limits that no resource of the
// pool has: each resource ignores those names (and a limit the cost does
// not name costs 1). Without it, such a cost is refused with
// ErrUnknownLimit, since a misspelt name would otherwise be granted
// silently at a cost of 1; a pool without Limits has no limit names, so
// there every cost with a name is refused. The names are checked against
// the resources present: while there are none, they are not checked.
func AllowUnknownLimits() LeaseOption { return allowUnknown{} }

// tenantOption names the caller's tenant (WithTenant).
type tenantOption string

func (tenantOption) leaseOption() {}

// WithTenant makes a lease count against tenant name: its share among the
// tenants waiting at the lease's priority, by their weights, and its own
// budgets (config.Config.Tenants). "" is the default tenant, the one of
// every call without this option. Waiters of one tenant and priority are
// served first come, first served; between tenants, the one with the
// least usage for its weight (config.Config.ShareBy) goes first, and a
// tenant back from idle banks no credit. A cost above one of the
// tenant's limits fails at once with ErrCostExceedsLimits.
func WithTenant(name string) LeaseOption { return tenantOption(name) }

// priorityOption is the caller's priority (WithPriority).
type priorityOption int

func (priorityOption) leaseOption() {}

// WithPriority makes a lease wait at priority p: a freed resource, or a
// refilled budget, goes to the waiters of the highest priority it can
// serve; the default is 0. A waiter that nothing can serve yet (its cost
// not covered, its tenant's budgets short) holds back only its own
// tenant at its priority.
func WithPriority(p int) LeaseOption { return priorityOption(p) }

func leaseOptionsOf(opts []LeaseOption) (leaseOptions, error) {
	var o leaseOptions
	for _, opt := range opts {
		// A type switch rather than a method that fills o: o passed
		// through an interface would escape, an allocation per Lease.
		switch opt := opt.(type) {
		case costOption:
			o.cost = config.Cost(opt)
		case allowUnknown:
			o.allowUnknown = true
		case tenantOption:
			o.tenant = string(opt)
		case priorityOption:
			o.priority = int(opt)
		}
	}
	if len(o.cost) == 0 {
		o.cost = nil // the default: nothing to check on an active resource
	} else if err := o.cost.Validate(); err != nil {
		return o, fmt.Errorf("lease: %w", err)
	}
	return o, nil
}

// checkNames refuses, with ErrUnknownLimit, a cost that names a limit no
// resource present has, unless o allows it; it reads the profiles without
// their lock, so a resource added or updated meanwhile may or may not be
// seen, as if the call came just before or after.
func (s *Scheduler[T, ID]) checkNames(o leaseOptions) error {
	if o.cost == nil || o.allowUnknown {
		return nil
	}
	var name string
	var unknown bool
	if s.budgeted {
		name, unknown = s.profiles.Unknown(o.cost)
	} else {
		name, unknown = budget.FirstMissing(o.cost, nil)
	}
	if unknown {
		return fmt.Errorf("lease: %w: %q", crserrors.ErrUnknownLimit, name)
	}
	return nil
}
