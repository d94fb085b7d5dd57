package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crsched/crs/config"
)

// The tenants scenario: callers of two tenants and an interactive
// priority share a few exclusive keys, in one process. A heavy tenant
// runs many goroutines, a light one few, each leasing a key back to back
// and holding it for Hold; the interactive callers, at a higher priority,
// lease one now and then. The same workload runs twice, one run after the
// other: with the scheduler's tenants and priorities (WithTenant,
// WithPriority, Config.Tenants giving the weights), and first come, first
// served (no options). The report sets each tenant's share of the grants
// against its share of the weights, gives Jain's fairness index of the
// shares per unit of weight, and the interactive callers' wait.

// Tenants is the tenants scenario's name.
const Tenants = "tenants"

// The tenants' names, as the pool sees them.
const (
	HeavyTenant       = "heavy"
	LightTenant       = "light"
	InteractiveTenant = "interactive"
)

// TenantsConfig is what the tenants scenario reads beyond Resources (the
// keys), Duration (of each of its two runs) and Pool.
type TenantsConfig struct {
	// Weights are the heavy and the light tenant's weights
	// (config.Tenant.Weight), 1 to config.MaxUnits.
	Weights [2]int64
	// Workers are the heavy and the light tenant's goroutines.
	Workers [2]int
	// Interactive is the number of interactive callers, 0 for none;
	// they wait at Priority, the batch callers at 0, and pause
	// InteractivePause between their calls.
	Interactive int
	Priority    int
	// Hold is how long each caller holds the key it leased.
	Hold time.Duration
}

// DefaultTenants is the workload: one exclusive key, a heavy
// tenant of 12 goroutines and a light one of 2 with equal weights, holds
// of half a millisecond, and one interactive caller at priority 5.
var DefaultTenants = TenantsConfig{
	Weights:     [2]int64{1, 1},
	Workers:     [2]int{12, 2},
	Interactive: 1,
	Priority:    5,
	Hold:        500 * time.Microsecond,
}

// InteractivePause is how long an interactive caller pauses between its
// calls, in holds: long enough that it does not saturate the keys itself,
// so that its wait is the wait of a call that arrives among busy batch
// callers.
const InteractivePause = 10

// maxTenantWorkers bounds each tenant's goroutines: the scenario is about
// shares of scarce keys, not about many workers (the other scenarios are).
const maxTenantWorkers = 10_000

// validate checks the settings the tenants scenario reads.
func (t TenantsConfig) validate() error {
	switch {
	case t.Weights[0] < 1 || t.Weights[1] < 1 || t.Weights[0] > config.MaxUnits || t.Weights[1] > config.MaxUnits:
		return fmt.Errorf("tenant-weights: want two weights from 1 to %d, as HEAVY:LIGHT", int64(config.MaxUnits))
	case t.Workers[0] < 1 || t.Workers[1] < 1 || t.Workers[0] > maxTenantWorkers || t.Workers[1] > maxTenantWorkers:
		return fmt.Errorf("tenant-workers: want two counts from 1 to %d, as HEAVY:LIGHT", maxTenantWorkers)
	case t.Interactive < 0 || t.Interactive > maxTenantWorkers:
		return fmt.Errorf("interactive: want 0 to %d", maxTenantWorkers)
	case t.Priority < 1:
		return errors.New("interactive-priority: want at least 1, above the batch callers' 0")
	case t.Hold <= 0 || t.Hold > time.Second:
		return errors.New("hold: want above 0 and at most 1s")
	}
	return nil
}

// workers is the scenario's number of goroutines.
func (t TenantsConfig) workers() int { return t.Workers[0] + t.Workers[1] + t.Interactive }

// validateTenants checks what the tenants scenario reads; ext's pool can
// run it only if the extension has a Tenants.
func (c Config) validateTenants(ext *Extension) error {
	switch {
	case c.Resources < 1:
		return errors.New("resources: want at least 1")
	case c.Duration <= 0:
		return errors.New("duration: want > 0")
	case ext != nil && c.Pool == ext.Name && ext.Tenants == nil:
		return fmt.Errorf("scenario tenants: not on the %s pool yet (crsload runs it in one process)", ext.Name)
	case c.Pool != "crs" && (ext == nil || c.Pool != ext.Name):
		return fmt.Errorf("pool %q: the tenants scenario runs on crs", c.Pool)
	}
	return c.Tenants.validate()
}

// TenantsPool is what the tenants scenario's callers lease keys from:
// the scheduler, or an Extension's pool (see Extension.Tenants). Its
// methods are called from many goroutines at once, except Finish and
// Close, called once each after the callers have stopped.
type TenantsPool interface {
	// Lease waits until ctx ends for a key, for a caller of tenant at
	// priority. A pool opened first come, first served ignores both.
	// Its error wraps ctx's when ctx ended.
	Lease(ctx context.Context, tenant string, priority int) (TenantsLease, error)
	// Finish returns the pool's own checks for the accounting: grants is
	// what the harness counted for each tenant over the run.
	Finish(grants map[string]uint64) []Check
	Close()
}

// TenantsLease is one lease of a TenantsPool.
type TenantsLease interface {
	Release() error
}

// tenantsReads are the harness's flags that the tenants scenario reads,
// besides tenantsFlags.
var tenantsReads = []string{"scenario", "resources", "duration", "pool", "json", "progress", "force"}

// tenantsFlags are the flags that only the tenants scenario reads.
var tenantsFlags = []string{"tenant-weights", "tenant-workers", "interactive", "interactive-priority", "hold"}

// registerTenantsFlags adds the tenants scenario's flags to fs.
func registerTenantsFlags(fs *flag.FlagSet, t *TenantsConfig) {
	fs.Var((*pairFlag[int64])(&t.Weights), "tenant-weights", "tenants: the heavy and the light tenant's weights, `HEAVY:LIGHT`")
	fs.Var((*pairFlag[int])(&t.Workers), "tenant-workers", "tenants: the heavy and the light tenant's goroutines, `HEAVY:LIGHT`")
	fs.IntVar(&t.Interactive, "interactive", t.Interactive, fmt.Sprintf("tenants: interactive callers, each pausing %d holds between its calls; 0: none", InteractivePause))
	fs.IntVar(&t.Priority, "interactive-priority", t.Priority, "tenants: the interactive callers' priority (WithPriority), above the batch callers' 0")
	fs.DurationVar(&t.Hold, "hold", t.Hold, "tenants: how long each caller holds the key it leased")
}

// parseTenants rejects the tenants flags elsewhere, and in the tenants
// scenario the flags it does not read.
func parseTenants(o *Options, set map[string]bool) error {
	c := &o.Config
	if c.Scenario != Tenants {
		for _, name := range tenantsFlags {
			if set[name] {
				return fmt.Errorf("%s: only with -scenario tenants", name)
			}
		}
		return nil
	}
	if o.Compare {
		return errors.New("compare: the tenants scenario always runs first come, first served beside tenants and priorities")
	}
	c.Workers = c.Tenants.workers() // for the memory check
	reads := map[string]bool{}
	for _, name := range append(tenantsReads, tenantsFlags...) {
		reads[name] = true
	}
	var refused error
	harnessFlags(func(f *flag.Flag) {
		if refused == nil && set[f.Name] && !reads[f.Name] {
			refused = fmt.Errorf("%s: not read by -scenario tenants (it reads -%s and the tenants: flags)", f.Name, strings.Join(tenantsReads[1:], ", -"))
		}
	})
	if refused != nil {
		return refused
	}
	if set["interactive-priority"] && c.Tenants.Interactive == 0 {
		return errors.New("interactive-priority: the interactive callers', and there are none (-interactive 0)")
	}
	return nil
}

// pairFlag reads two positive integers, A:B.
type pairFlag[N int | int64] [2]N

func (p *pairFlag[N]) String() string { return fmt.Sprintf("%d:%d", p[0], p[1]) }

func (p *pairFlag[N]) Set(s string) error {
	a, b, ok := strings.Cut(s, ":")
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if !ok || errA != nil || errB != nil || x < 1 || y < 1 || int64(N(x)) != x || int64(N(y)) != y {
		return errors.New("want two positive integers, as 12:2")
	}
	p[0], p[1] = N(x), N(y)
	return nil
}
