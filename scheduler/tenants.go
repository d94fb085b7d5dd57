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
