package redispool

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// tenantOption is the caller's tenant (WithTenant).
type tenantOption string

func (tenantOption) acquireOption() {}

// WithTenant makes the call wait as tenant name ("" is the default
// tenant): among the waiters of one priority, a freed slot goes to the
// tenant with the least usage for its weight (Tenant.Weight; usage as
// Options.ShareBy counts it), first come, first served within a tenant,
// and a grant spends the cost from the tenant's limits (Tenant.Limits)
// in the same step as from the resource's. A tenant that has been idle
// banks no credit. A cost above a limit's Max of the tenant returns
// ErrCostExceedsLimits at once.
func WithTenant(name string) AcquireOption { return tenantOption(name) }

// priorityOption is the caller's priority (WithPriority).
type priorityOption int

func (priorityOption) acquireOption() {}

// WithPriority makes the call wait at priority p (default 0, at most
// math.MaxInt32 in magnitude, or the call fails with ErrInvalidPriority):
// a freed slot goes to the waiters of the highest priority it can serve.
// A waiter that nothing can serve yet (its cost not covered, its
// tenant's limits short) holds back only its own tenant at its
// priority.
func WithPriority(p int) AcquireOption { return priorityOption(p) }

// classOf is the class that opts give, as the scripts name it
// (lua/fair.lua): 10 digits, MaxInt32 minus the priority, then the
// tenant's name in hex; "" for the default tenant at priority 0, so
// that a caller without options takes the plain path.
func classOf(opts []AcquireOption) (string, error) {
	var tenant string
	var prio int
	for _, opt := range opts {
		switch opt := opt.(type) {
		case tenantOption:
			tenant = string(opt)
		case priorityOption:
			prio = int(opt)
		}
	}
	if prio < -math.MaxInt32 || prio > math.MaxInt32 {
		return "", fmt.Errorf("redispool: acquire: %w: priority %d", ErrInvalidPriority, prio)
	}
	if tenant == "" && prio == 0 {
		return "", nil
	}
	return fmt.Sprintf("%010d%x", math.MaxInt32-int64(prio), tenant), nil
}

// Tenant is a tenant of the pool, as SyncTenants sets it.
type Tenant struct {
	// Name is the name WithTenant gives; "" is the default tenant.
	Name string
	// Weight is the tenant's share of a scarce pool against the other
	// tenants waiting at the same priority; 0 means 1.
	Weight int64
	// Limits are the tenant's own token buckets, spent in the same step
	// as the resource's by each of its grants (see WithCost), whichever
	// resource it gets. A bucket starts full.
	Limits []config.Limit
}

// SyncTenants makes the pool's tenants exactly ts, in one atomic step,
// for every process of the pool: a tenant left out (or never synced)
// has weight 1 and no limits. A bucket whose name and Per stay keeps its
// level (cut to a lower Max); a new one starts full. Every replica may
// call it with its configured tenants at start and on a timer, as with
// Sync. ErrInvalidTenant, wrapped, changing nothing: a repeated name, a
// Weight below 0 or above config.MaxUnits, invalid Limits, Limits for
// the default tenant "" (a call without options reads no tenant, so
// that it costs what it did before tenants; its Weight counts when
// other tenants wait).
func (p *Pool) SyncTenants(ctx context.Context, ts []Tenant) error {
	if p.closed.Load() {
		return p.errClosed("sync tenants")
	}
	args, err := tenantArgs(ts)
	if err != nil {
		return fmt.Errorf("redispool: sync tenants: %w", err)
	}
	if _, _, err := p.run(ctx, scriptTenants, newRequest(), args...); err != nil {
		return fmt.Errorf("redispool: sync tenants: %w", err)
	}
	return nil
}

// tenantArgs checks ts and writes them as the tenants script reads
// them: name (hex), weight, limits (formatLimits) for each.
func tenantArgs(ts []Tenant) ([]any, error) {
	seen := make(map[string]bool, len(ts))
	args := make([]any, 0, 3*len(ts))
	for _, t := range ts {
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: %q given twice", crserrors.ErrInvalidTenant, t.Name)
		}
		seen[t.Name] = true
		if err := (config.Tenant{Weight: t.Weight, Limits: t.Limits}).Validate(); err != nil {
			return nil, fmt.Errorf("tenant %q: %w", t.Name, err)
		}
		if t.Name == "" && len(t.Limits) > 0 {
			// A call without options reads no tenant, so that it costs
			// what it did before tenants.
			return nil, fmt.Errorf("%w: the default tenant has no limits", crserrors.ErrInvalidTenant)
		}
		limits, err := formatLimits(t.Limits)
		if err != nil {
			return nil, fmt.Errorf("tenant %q: %w: %w", t.Name, crserrors.ErrInvalidTenant, err)
		}
		w := max(t.Weight, 1)
		args = append(args, hex.EncodeToString([]byte(t.Name)), w, limits)
	}
	return args, nil
}
