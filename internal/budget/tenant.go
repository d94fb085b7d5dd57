package budget

import (
	"sync"

	"github.com/crsched/crs/config"
)

// Tenant is a tenant's record: what config.Config.Tenants gave it, and
// its own budgets. Name and Weight never change, nor do its buckets' Max
// and Per; the buckets' levels are guarded by mu, which a step takes
// after its shard's lock (a grant spends from both in one step) and
// which is held across no other lock.
type Tenant struct {
	Name   string
	Weight int64 // >= 1
	// Budgets are the tenant's own limits; nil: none.
	Budgets Budgets
	mu      sync.Mutex
}

// NewTenant makes the record of tenant name from t, its buckets full as
// of now. t must be valid (config.Tenant.Validate).
func NewTenant(name string, t config.Tenant, now int64) *Tenant {
	return &Tenant{Name: name, Weight: max(t.Weight, 1), Budgets: New(t.Limits, now, 0)}
}

// Exceeds reports whether cost is above the Max of one of the tenant's
// limits: no refill will ever cover it. It reads only what never
// changes, so it needs no lock.
func (t *Tenant) Exceeds(cost config.Cost) bool {
	for i := range t.Budgets {
		if cost.Of(t.Budgets[i].Name) > t.Budgets[i].Bucket.Max() {
			return true
		}
	}
	return false
}

// Covers reports whether the tenant's budgets cover cost at now, and if
// not, when they will (math.MaxInt64: never).
func (t *Tenant) Covers(cost config.Cost, now int64) (ok bool, until int64) {
	if t.Budgets == nil {
		return true, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.covers(cost, now)
}

// Take is Covers, and takes cost from the budgets when they cover it.
func (t *Tenant) Take(cost config.Cost, now int64) (ok bool, until int64) {
	if t.Budgets == nil {
		return true, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok, until = t.covers(cost, now); ok {
		t.Budgets.Take(cost, now)
	}
	return ok, until
}

func (t *Tenant) covers(cost config.Cost, now int64) (bool, int64) {
	if ok, _ := t.Budgets.Fits(cost, now); ok {
		return true, 0
	}
	if w, ok := t.Budgets.Wait(cost, now); ok {
		return false, after(now, w)
	}
	return false, maxInt64
}

// Refund gives back cost, taken from the tenant's budgets at now by a
// step that is undone.
func (t *Tenant) Refund(cost config.Cost, now int64) {
	if t.Budgets == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.Budgets {
		t.Budgets[i].Bucket.Settle(now, t.Budgets[i].units(cost), 0)
	}
}

// Settle corrects what a lease paid of the tenant's budgets by what it
// actually spent, for the names actual gives (Bucket.Settle), and
// reports whether it gave any back.
func (t *Tenant) Settle(paid, actual config.Cost, now int64) (refunded bool) {
	if t.Budgets == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.Budgets {
		b := &t.Budgets[i]
		if a, ok := actual[b.Name]; ok {
			refunded = refunded || a < b.units(paid)
			b.Bucket.Settle(now, b.units(paid), a)
		}
	}
	return refunded
}
