package scheduler

import (
	"fmt"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/budget"
)

// tenantOf returns the record of the tenant called name: nil for the
// default tenant of a scheduler without Tenants, which has weight 1 and
// no limits. The first call that names a tenant asks config.Tenants,
// outside any lock, and the answer is kept; two first calls at once may
// both ask, and one answer is kept. A panic in Tenants, or an invalid
// answer, fails the call and keeps nothing.
func (s *Scheduler[T, ID]) tenantOf(name string) (*budget.Tenant, error) {
	if name == "" {
		return s.defTenant, nil
	}
	if t, ok := s.tenantTable.Load(name); ok {
		return t.(*budget.Tenant), nil
	}
	var cfg config.Tenant
	if s.tenants != nil {
		var err error
		if cfg, err = askTenant(s.tenants, name); err != nil {
			return nil, err
		}
	}
	t, _ := s.tenantTable.LoadOrStore(name, budget.NewTenant(name, cfg, s.now()))
	return t.(*budget.Tenant), nil
}

// askTenant calls the user's Tenants for name and checks the answer; a
// panic in it is an error, since the call that named the tenant has
// changed nothing yet.
func askTenant(tenants func(string) config.Tenant, name string) (cfg config.Tenant, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tenant %q: Tenants panicked: %v: %w", name, p, crserrors.ErrInvalidTenant)
		}
	}()
	cfg = tenants(name)
	if err = cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("tenant %q: %w", name, err)
	}
	return cfg, nil
}

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
