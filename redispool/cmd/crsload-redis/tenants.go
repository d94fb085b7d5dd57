package main

import (
	"context"
	"fmt"
	"io"

	"github.com/crsched/crs/harness/loadtest"
	"github.com/crsched/crs/redispool"
)

// tenantsPool is the tenants scenario's pool on Redis: cfg.Resources
// exclusive keys of a redispool pool shared by every process of its
// session, leased with the caller's tenant and priority when fair (the
// tenants' weights synced by each process), with no options otherwise.
type tenantsPool struct {
	*redisPool
	fair bool
}

// openTenantsPool opens the run's pool. The fair run and the first come,
// first served one use two pools (the -redis-pool name, then "-fair" or
// "-fifo"), so that neither run meets what the other left in Redis.
func openTenantsPool(ctx context.Context, cfg loadtest.Config, f redisFlags, log io.Writer, fair bool) (*tenantsPool, error) {
	mode := "fifo"
	if fair {
		mode = "fair"
	}
	f.name += "-" + mode
	rs := make([]redispool.Resource, cfg.Resources)
	for i := range rs {
		rs[i] = redispool.Resource{ID: fmt.Sprintf("key-%02d", i+1), Capacity: 1}
	}
	p, err := openPoolOf(ctx, cfg, f, log, rs, "tenants-"+mode)
	if err != nil {
		return nil, err
	}
	if fair {
		w := cfg.Tenants.Weights
		err = withTimeout(ctx, func(ctx context.Context) error {
			return p.pool.SyncTenants(ctx, []redispool.Tenant{
				{Name: loadtest.HeavyTenant, Weight: w[0]},
				{Name: loadtest.LightTenant, Weight: w[1]},
			})
		})
		if err != nil {
			p.session.abandon()
			_ = p.pool.Close()
			_ = p.client.Close()
			return nil, err
		}
	}
	return &tenantsPool{redisPool: p, fair: fair}, nil
}

func (p *tenantsPool) Lease(ctx context.Context, tenant string, priority int) (loadtest.TenantsLease, error) {
	var opts []redispool.AcquireOption
	if p.fair {
		opts = []redispool.AcquireOption{redispool.WithTenant(tenant), redispool.WithPriority(priority)}
	}
	l, err := p.pool.Acquire(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return tenantsLease{l}, nil
}

// tenantsLease is a lease of the tenants scenario.
type tenantsLease struct{ l *redispool.Lease }

func (t tenantsLease) Release() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return t.l.Release(ctx)
}

// Finish waits for the session's other processes, then checks the
// pool's figures once every process is done: no lease or waiter left
// and, when fair, each tenant granted at least what this process counted
// (the other processes' grants count there too).
func (p *tenantsPool) Finish(grants map[string]uint64) []loadtest.Check {
	if err := p.redisPool.Finish(); err != nil {
		return []loadtest.Check{{Name: "every process of the pool finished", Detail: err.Error()}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	st, ts, err := p.pool.Tenants(ctx)
	if err != nil {
		return []loadtest.Check{{Name: "the pool's figures", Detail: err.Error()}}
	}
	checks := []loadtest.Check{{
		Name: "no lease or waiter left", OK: st.Leases == 0 && st.Queued == 0,
		Detail: fmt.Sprintf("the pool's Stats, %d other process(es) done: %d leased, %d waiting", p.others, st.Leases, st.Queued),
	}}
	if !p.fair {
		return append(checks, loadtest.Check{Name: "no tenant or priority in use", OK: len(ts) == 0,
			Detail: fmt.Sprintf("%d tenant classes in the pool's figures", len(ts))})
	}
	got := map[string]int64{}
	for _, t := range ts {
		got[t.Tenant] += t.Grants
	}
	for name, want := range grants {
		checks = append(checks, loadtest.Check{
			Name: fmt.Sprintf("tenant %q's grants in the pool", name), OK: got[name] >= int64(want),
			Detail: fmt.Sprintf("%d in the pool, %d counted by this process", got[name], want),
		})
	}
	return checks
}

func (p *tenantsPool) Close() { p.redisPool.Close() }
