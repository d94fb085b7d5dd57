package loadtest

import (
	"context"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// crsTenantsPool is the tenants scenario on the scheduler: exclusive
// keys, with Config.Tenants giving the weights when fair, and no tenant
// or priority at all (first come, first served) otherwise.
type crsTenantsPool struct {
	s    *scheduler.Scheduler[int, int]
	fair bool
	// callers bounds the grants a scheduler may count beyond the
	// harness's: one per caller, a grant its context's end beat.
	callers int
}

func newCRSTenantsPool(cfg Config, fair bool) (*crsTenantsPool, error) {
	c := config.Config[int, int]{
		Comparator:    func(a, b int) int { return a - b },
		KeyFunc:       func(k int) int { return k },
		AcquirePolicy: config.Exclusive,
	}
	if fair {
		w := cfg.Tenants.Weights
		c.Tenants = func(name string) config.Tenant {
			switch name {
			case HeavyTenant:
				return config.Tenant{Weight: w[0]}
			case LightTenant:
				return config.Tenant{Weight: w[1]}
			}
			return config.Tenant{}
		}
	}
	s, err := scheduler.New(c)
	if err != nil {
		return nil, err
	}
	keys := make([]int, cfg.Resources)
	for i := range keys {
		keys[i] = i
	}
	if err := s.BatchAdd(keys); err != nil {
		s.Shutdown()
		return nil, err
	}
	return &crsTenantsPool{s: s, fair: fair, callers: cfg.Tenants.workers()}, nil
}

func (p *crsTenantsPool) Lease(ctx context.Context, tenant string, priority int) (TenantsLease, error) {
	var l scheduler.Lease[int, int]
	var err error
	if p.fair {
		l, err = p.s.Lease(ctx, scheduler.WithTenant(tenant), scheduler.WithPriority(priority))
	} else {
		l, err = p.s.Lease(ctx)
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// Finish checks the scheduler's Stats against the harness's counts: no
// holder or waiter left and, with tenants, each tenant's grants.
func (p *crsTenantsPool) Finish(grants map[string]uint64) []Check {
	st := p.s.Stats()
	checks := []Check{{
		Name: "no lease or waiter left", OK: st.Holders == 0 && st.Waiters == 0,
		Detail: "the scheduler's Stats: " + group(st.Holders) + " holders, " + group(st.Waiters) + " waiters",
	}}
	if !p.fair {
		return append(checks, Check{Name: "no tenant or priority in use", OK: st.Tenants == nil && st.Priorities == nil,
			Detail: group(len(st.Tenants)) + " tenants and " + group(len(st.Priorities)) + " priorities in the scheduler's Stats"})
	}
	for _, t := range st.Tenants {
		want := grants[t.Name]
		checks = append(checks, Check{
			Name:   "the scheduler's grants to " + t.Name + " match the callers'",
			OK:     t.Grants >= want && t.Grants <= want+uint64(p.callers),
			Detail: group(t.Grants) + " granted, " + group(want) + " received (at most one a caller may be beaten by its context)",
		})
	}
	return checks
}

func (p *crsTenantsPool) Close() { p.s.Shutdown() }
