package loadtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// tenantClass is what one kind of caller (a tenant, the interactive
// callers) counts, lock-free.
type tenantClass struct {
	name     string
	priority int
	workers  int
	weight   int64
	pause    time.Duration // between calls: the interactive callers'
	grants   atomic.Uint64
	wait     Histogram // from the call to its grant
}

// tenantsRun is one run of the tenants scenario on one pool.
type tenantsRun struct {
	cfg      Config
	pool     TenantsPool
	classes  []*tenantClass
	held     Histogram     // from a grant to its release: the hold as it ran
	failures atomic.Uint64 // leases or releases that failed, the window still open
	cut      bool          // a signal ended the window early
	firstErr atomic.Pointer[string]
}

// runTenants runs the tenants scenario: with tenants and priorities,
// then first come, first served, unless a signal ended the first run.
func runTenants(ctx context.Context, cfg Config, ext *Extension, progress *Progress) (*Report, error) {
	start := time.Now()
	tr := newTenantsReport(cfg, ext)
	var in *Interruption
	for _, fair := range []bool{true, false} {
		if progress != nil {
			progress.note(fmt.Sprintf("tenants scenario, %s, on the %s: %s exclusive keys, %s callers: %s",
				modeTitle(fair), tr.PoolTitle, group(cfg.Resources), group(cfg.Tenants.workers()), dur(cfg.Duration)))
		}
		runStart := time.Now()
		run, err := runTenantsOnce(ctx, cfg, ext, fair)
		if err != nil {
			return nil, err
		}
		if fair {
			tr.Fair = run
		} else {
			tr.FCFS = &run
		}
		if ctx.Err() != nil {
			in = &Interruption{Cause: interruptCause(context.Cause(ctx)), AtNs: int64(time.Since(runStart))}
			break
		}
	}
	tr.Accounting, tr.Interrupted = tr.accounting(), in
	return &Report{
		Pool: cfg.Pool, PoolTitle: tr.PoolTitle, Config: configReport(cfg), Environment: tr.Environment,
		ElapsedNs: int64(time.Since(start)), Interrupted: in, Accounting: tr.Accounting, Tenants: tr,
	}, nil
}

// runTenantsOnce runs the workload for cfg.Duration on a fresh pool.
func runTenantsOnce(ctx context.Context, cfg Config, ext *Extension, fair bool) (TenantsRun, error) {
	pool, err := openTenantsPool(ctx, cfg, ext, fair)
	if err != nil {
		return TenantsRun{}, err
	}
	r := &tenantsRun{cfg: cfg, pool: pool, classes: tenantClasses(cfg.Tenants)}
	start := time.Now()
	window, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration))
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range r.classes {
		for range c.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.caller(window, c)
			}()
		}
	}
	wg.Wait()
	r.cut = ctx.Err() != nil
	elapsed := min(time.Since(start), cfg.Duration)
	grants := map[string]uint64{}
	for _, c := range r.classes {
		grants[c.name] = c.grants.Load()
	}
	checks := pool.Finish(grants)
	pool.Close()
	return r.report(fair, elapsed, checks), nil
}

// openTenantsPool opens the scheduler, or ext's pool when cfg names it.
func openTenantsPool(ctx context.Context, cfg Config, ext *Extension, fair bool) (TenantsPool, error) {
	if ext != nil && cfg.Pool == ext.Name {
		p, err := ext.Tenants(ctx, cfg, fair)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ext.Name, err)
		}
		return p, nil
	}
	p, err := newCRSTenantsPool(cfg, fair)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	return p, nil
}

// tenantClasses are the run's callers: the heavy tenant, the light one,
// and the interactive callers, a tenant of their own.
func tenantClasses(t TenantsConfig) []*tenantClass {
	cs := []*tenantClass{
		{name: HeavyTenant, workers: t.Workers[0], weight: t.Weights[0]},
		{name: LightTenant, workers: t.Workers[1], weight: t.Weights[1]},
	}
	if t.Interactive > 0 {
		cs = append(cs, &tenantClass{name: InteractiveTenant, workers: t.Interactive, weight: 1,
			priority: t.Priority, pause: InteractivePause * t.Hold})
	}
	return cs
}

// caller leases a key, holds it and releases it, until the window ends.
// Its wait is counted from the call to the grant, and a grant only while
// the window is open, so that both runs count the same span.
func (r *tenantsRun) caller(window context.Context, c *tenantClass) {
	hold := time.NewTimer(0)
	<-hold.C
	for window.Err() == nil {
		asked := time.Now()
		l, err := r.pool.Lease(window, c.name, c.priority)
		if err != nil {
			if window.Err() == nil || !errors.Is(err, window.Err()) {
				r.failures.Add(1)
				noteErr(&r.firstErr, err)
			}
			return
		}
		granted := time.Now()
		c.wait.Record(granted.Sub(asked))
		c.grants.Add(1)
		hold.Reset(r.cfg.Tenants.Hold)
		<-hold.C
		r.held.Record(time.Since(granted))
		if err := l.Release(); err != nil {
			r.failures.Add(1)
			noteErr(&r.firstErr, err)
		}
		if c.pause > 0 {
			hold.Reset(c.pause)
			select {
			case <-hold.C:
			case <-window.Done():
				return
			}
		}
	}
}

func modeTitle(fair bool) string {
	if fair {
		return "tenants and priorities"
	}
	return "first come, first served"
}
