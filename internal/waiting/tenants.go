package waiting

import (
	"cmp"
	"slices"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// What a grant does to its tenant: it spends from the tenant's budgets
// in the step of the shard that holds the resource (Reserve, undone by
// Refund if the comparator panics in that step), and counts against the
// tenant's share (Granted, Settled). The tenants' budgets and usage are
// guarded by the queue's mu, taken after a shard lock.

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
// gives the cost back (Refund). Requires sh's lock.
func (r *Room[T, ID]) Reserve(sh *shard.Shard[T, ID], g *Grant[T, ID]) (ok bool, until int64) {
	t := g.Tenant
	if t == nil || t.Budgets == nil {
		return true, 0
	}
	now := r.cfg.Host.Now()
	r.queue.mu.Lock()
	defer r.queue.mu.Unlock()
	if ok, until = tenantCovers(t, g.Cost, now); ok {
		t.Budgets.Take(g.Cost, now)
		sh.SaveSpend(r, t, g.Cost, now)
	}
	return ok, until
}

// tenantCovers reports whether t's budgets cover cost at now, and if
// not, when they will. Requires the queue's mu.
func tenantCovers(t *budget.Tenant, cost config.Cost, now int64) (bool, int64) {
	if ok, _ := t.Budgets.Fits(cost, now); ok {
		return true, 0
	}
	if w, ok := t.Budgets.Wait(cost, now); ok {
		return false, node.After(now, w)
	}
	return false, node.Never
}

// Refund gives back cost, taken from t's budgets at at by a step that is
// undone (shard.Refunder).
func (r *Room[T, ID]) Refund(t *budget.Tenant, cost config.Cost, at int64) {
	r.queue.mu.Lock()
	defer r.queue.mu.Unlock()
	t.Refund(cost, at)
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

// Settled corrects what a lease of tenant t at priority prio spent, paid,
// by what it actually spent, for the names actual gives: t's budgets, as
// a resource's (budget.Bucket.Settle), and its usage. A refund may cover
// the cost a class of t is parked for: those classes are made ready and
// the shards kicked, rather than left parked until the refill would have
// covered it. The caller holds no lock.
func (r *Room[T, ID]) Settled(t *budget.Tenant, prio int, paid, actual config.Cost, now int64) {
	if t == nil && prio == 0 && !r.queue.Fair() {
		return
	}
	if t != nil && t.Budgets != nil && r.settleTenant(t, paid, actual, now) {
		r.Kick(-1)
	}
	if a, ok := actual[r.cfg.ShareBy]; ok && r.cfg.ShareBy != "" {
		r.queue.Resettled(t, prio, a-paid.Of(r.cfg.ShareBy))
	}
}

// settleTenant settles t's budgets (see Settled) and reports whether it
// made a parked class of t ready.
func (r *Room[T, ID]) settleTenant(t *budget.Tenant, paid, actual config.Cost, now int64) bool {
	q := &r.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	refund := false
	for i := range t.Budgets {
		b := &t.Budgets[i]
		if a, ok := actual[b.Name]; ok {
			refund = refund || a < paid.Of(b.Name)
			b.Bucket.Settle(now, paid.Of(b.Name), a)
		}
	}
	return refund && q.unparkTenant(t)
}

// TenantCovers reports whether t's budgets cover cost now, and if not,
// when they will.
func (r *Room[T, ID]) TenantCovers(t *budget.Tenant, cost config.Cost) (bool, int64) {
	if t == nil || t.Budgets == nil {
		return true, 0
	}
	r.queue.mu.Lock()
	defer r.queue.mu.Unlock()
	return tenantCovers(t, cost, r.cfg.Host.Now())
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

// ClassStats is one class's figures: its tenant's name, its priority,
// the callers waiting in it, its grants and their share units.
type ClassStats struct {
	Tenant   string
	Priority int
	Waiters  int
	Grants   uint64
	Usage    int64
}

// Classes returns the figures of every class, by tenant and priority, or
// nil while no tenant or priority is in use.
func (r *Room[T, ID]) Classes() []ClassStats {
	q := &r.queue
	if !q.Fair() {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []ClassStats
	for _, c := range q.all() {
		if c.lvl == nil {
			continue
		}
		name := ""
		if c.tenant != nil {
			name = c.tenant.Name
		}
		out = append(out, ClassStats{Tenant: name, Priority: c.prio, Waiters: c.n, Grants: c.grants, Usage: c.usage})
	}
	slices.SortFunc(out, func(a, b ClassStats) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(b.Priority, a.Priority))
	})
	return out
}
