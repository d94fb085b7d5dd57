package waiting

import (
	"slices"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/stats"
)

// What a grant does to its tenant: it spends from the tenant's budgets
// in the step of the shard that holds the resource (Reserve, undone with
// that step if the comparator panics in it), and counts against the
// tenant's share (Granted, Settled). A tenant's budgets have a lock of
// their own, taken after a shard lock (budget.Tenant); its share, with
// its class, is the queue's.

// Units is what a grant of cost counts against its tenant's share: its
// amount of config.Config.ShareBy, or 1 without ShareBy.
func (r *Room[T, ID]) Units(cost config.Cost) int64 {
	if r.cfg.ShareBy == "" {
		return 1
	}
	return cost.Of(r.cfg.ShareBy)
}

// Reserve takes g.Cost from the budgets of g's tenant, if it has any, in
// the step of sh that holds a resource for g next, and reports whether
// they covered it; if not, it takes nothing and returns when they will
// (node.Never: never). If the comparator panics in that step, its undo
// gives the cost back. Requires sh's lock.
func (r *Room[T, ID]) Reserve(sh *shard.Shard[T, ID], g *Grant[T, ID]) (ok bool, until int64) {
	t := g.Tenant
	if t == nil || t.Budgets == nil {
		return true, 0
	}
	now := r.cfg.Host.Now()
	if ok, until = t.Take(g.Cost, now); ok {
		sh.SaveSpend(t, g.Cost, now)
	}
	return ok, until
}

// Fair reports whether tenants or priorities are in use (Queue.Fair).
func (r *Room[T, ID]) Fair() bool { return r.queue.Fair() }

// Granted counts g, just granted to a caller that did not wait, against
// its tenant's share (a waiter's grant is counted by grantTo). Without
// tenants or priorities in use it does nothing.
func (r *Room[T, ID]) Granted(g *Grant[T, ID]) {
	if g.Tenant == nil && g.Priority == 0 && !r.queue.Fair() {
		return
	}
	r.queue.Granted(g.Tenant, g.Priority, r.Units(g.Cost))
}

// Settled corrects the tenant of a lease whose record was was (its
// tenant, priority and what it paid) by what it actually spent, for the
// names actual gives: the tenant's budgets, as a resource's
// (budget.Bucket.Settle), and its usage. A refund may cover the cost a
// class of the tenant is parked for: those classes are made ready and
// the shards kicked, rather than left parked until the refill would have
// covered it. The caller holds no lock: it runs once the resource's step
// is done, since that step may be undone and this could not be.
func (r *Room[T, ID]) Settled(was *node.Lease, actual config.Cost, now int64) {
	t, paid := was.Tenant, config.Cost(was.Cost)
	if t == nil && was.Priority == 0 && !r.queue.Fair() {
		return
	}
	if t != nil && t.Settle(paid, actual, now) && r.queue.UnparkTenant(t) {
		r.Kick(-1)
	}
	if a, ok := actual[r.cfg.ShareBy]; ok && r.cfg.ShareBy != "" {
		r.queue.Resettled(t, was.Priority, a-paid.Of(r.cfg.ShareBy))
	}
}

// TenantCovers reports whether t's budgets cover cost now, and if not,
// when they will.
func (r *Room[T, ID]) TenantCovers(t *budget.Tenant, cost config.Cost) (bool, int64) {
	if t == nil {
		return true, 0
	}
	return t.Covers(cost, r.cfg.Host.Now())
}

// armPark makes every shard's waiters served at at, when a parked class
// may be ready (see Queue.Park).
func (r *Room[T, ID]) armPark(at int64) {
	if at == node.Never {
		return
	}
	for i := range r.cfg.Shards {
		r.cfg.Host.Wake(i, at)
	}
}

// Shares sums the classes of waiters by tenant and by priority, for
// Stats: nil while no tenant or priority is in use.
func (r *Room[T, ID]) Shares() ([]stats.TenantStats, []stats.PriorityStats) {
	classes := r.queue.Classes()
	if classes == nil {
		return nil, nil
	}
	var ts []stats.TenantStats
	var ps []stats.PriorityStats
	for _, c := range classes { // by tenant, then priority from the highest
		if len(ts) == 0 || ts[len(ts)-1].Name != c.Tenant {
			ts = append(ts, stats.TenantStats{Name: c.Tenant})
		}
		t := &ts[len(ts)-1]
		t.Waiters, t.Grants, t.Usage = t.Waiters+c.Waiters, t.Grants+c.Grants, t.Usage+c.Usage
		i, found := slices.BinarySearchFunc(ps, c.Priority, func(p stats.PriorityStats, prio int) int { return prio - p.Priority })
		if !found {
			ps = slices.Insert(ps, i, stats.PriorityStats{Priority: c.Priority})
		}
		p := &ps[i]
		p.Waiters, p.Grants, p.Usage = p.Waiters+c.Waiters, p.Grants+c.Grants, p.Usage+c.Usage
	}
	return ts, ps
}
