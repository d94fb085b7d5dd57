package budget

import (
	"github.com/crsched/crs/config"
)

// Tenant is a tenant's record: what config.Config.Tenants gave it and
// what it has used. Name and Weight never change, nor do its buckets'
// Max and Per; the levels and the usage are guarded by the owner (the
// waiting room's queue lock), like a resource's budgets by its shard's.
type Tenant struct {
	Name   string
	Weight int64 // >= 1
	// Budgets are the tenant's own limits; nil: none.
	Budgets Budgets
	// Usage is the sum of the share units (config.Config.ShareBy) of the
	// tenant's grants, corrected by settlements; Grants counts them.
	Usage  int64
	Grants uint64
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

// Refund gives back cost, taken from the tenant's budgets at now by a
// step that is undone. Requires the owner's lock.
func (t *Tenant) Refund(cost config.Cost, now int64) {
	for i := range t.Budgets {
		t.Budgets[i].Bucket.Settle(now, t.Budgets[i].units(cost), 0)
	}
}
