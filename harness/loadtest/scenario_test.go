package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
)

// run runs cfg and fails the test unless the run's accounting holds.
func run(t *testing.T, cfg Config) *Report {
	t.Helper()
	r, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Accounting.OK {
		var b strings.Builder
		writeAccounting(&b, r.Accounting)
		t.Fatalf("%s/%s: accounting failed:\n%s", cfg.Scenario, cfg.Pool, b.String())
	}
	if r.Requests.Attempts == 0 {
		t.Fatalf("%s/%s: no request was made", cfg.Scenario, cfg.Pool)
	}
	return r
}

func TestEveryScenarioBalancesItsAccountsOnBothPools(t *testing.T) {
	t.Parallel()
	for _, scenario := range Scenarios {
		for _, v := range variants {
			t.Run(scenario+"/"+v.String(), func(t *testing.T) {
				t.Parallel()
				cfg := v.apply(quick(scenario))
				r := run(t, cfg)
				if len(r.Resources) != cfg.Resources || len(r.Timeline) < 2 {
					t.Fatalf("report has %d resources and %d samples", len(r.Resources), len(r.Timeline))
				}
			})
		}
	}
}

func TestCooldownScenarioNeverHandsOutAResourceDuringItsCooldown(t *testing.T) {
	t.Parallel()
	for _, v := range variants {
		r := run(t, v.apply(quick(Cooldown)))
		if !r.Requests.CooldownChecked {
			t.Fatalf("%s: cooldown not checked with one exclusive slot per resource", v)
		}
		if r.Requests.CooldownViolations != 0 {
			t.Fatalf("%s: %d acquisitions within a cooldown", v, r.Requests.CooldownViolations)
		}
	}
}

func TestCooldownWithCapacityAboveOneBalancesItsAccounts(t *testing.T) {
	t.Parallel()
	// With two slots, a release rests the resource while its other holder
	// still has it; the accounting checks that every release started a
	// cooldown (the scheduler's Suspensions).
	for _, v := range variants[:2] {
		cfg := v.apply(quick(Cooldown))
		cfg.Capacity = 2
		r := run(t, cfg)
		if r.Requests.CooldownChecked {
			t.Fatal("cooldown checked with two slots per resource, where it is ambiguous")
		}
		if h := r.PoolState.Health; h == nil || h.Suspensions == 0 {
			t.Fatalf("%s: no resource was rested: %+v", v, h)
		}
	}
}

func TestSharedAcquisitionsWithoutALeaseTakeNoCooldown(t *testing.T) {
	t.Parallel()
	cfg := quick(Cooldown)
	cfg.Policy = config.Shared
	if err := cfg.Validate(); err == nil {
		t.Fatal("a cooldown no release can start was accepted")
	}
	cfg.API = "lease"
	r := run(t, cfg)
	if h := r.PoolState.Health; h == nil || h.Suspensions == 0 {
		t.Fatalf("no lease release started a cooldown: %+v", h)
	}
	cfg.API, cfg.Pool = "acquire", "mutex" // the baseline rests on every end
	run(t, cfg)
}

func TestFailuresReachTheSchedulerAndEjectUnderLeases(t *testing.T) {
	t.Parallel()
	for _, pool := range []string{"crs", "mutex"} {
		cfg := quick(Failure)
		cfg.Pool, cfg.API = pool, "lease"
		cfg.FailureRate = 0.5
		cfg.Eject, cfg.EjectBase, cfg.EjectMax = 2, 5*time.Millisecond, 20*time.Millisecond
		r := run(t, cfg)
		if pool == "mutex" {
			continue // it keeps no health totals; its accounting held
		}
		h, c := r.PoolState.Health, r.PoolState.Calls
		if h == nil || h.Failures == 0 || h.Failures != c.Fails || h.Ejections == 0 {
			t.Fatalf("failures not reported, or nothing ejected: totals %+v, calls %+v", h, c)
		}
	}
	cfg := quick(Failure)
	cfg.API, cfg.Eject, cfg.EjectBase = "acquire", 2, time.Millisecond
	if err := cfg.Validate(); err == nil {
		t.Fatal("ejection accepted where no failure reaches the scheduler (-api acquire)")
	}
}

func TestFailedBackendCallsAreCountedApartFromSchedulerFailures(t *testing.T) {
	t.Parallel()
	cfg := quick(Failure)
	cfg.FailureRate = 1
	r := run(t, cfg)
	q := r.Requests
	if q.Success != 0 || q.BackendFailures != q.Acquisitions || q.AcquireFailures != 0 || q.ReleaseFailures != 0 {
		t.Fatalf("every call fails: got %d successes, %d backend failures of %d acquisitions, %d acquire and %d release failures",
			q.Success, q.BackendFailures, q.Acquisitions, q.AcquireFailures, q.ReleaseFailures)
	}
}

func TestSuspensionAfterFailureRestsTheResourceAndBringsItBack(t *testing.T) {
	t.Parallel()
	for _, policy := range []config.AcquirePolicy{config.Shared, config.Exclusive} {
		for _, v := range variants {
			cfg := v.apply(quick(Failure))
			cfg.Policy = policy
			cfg.FailureRate = 1
			cfg.Suspend = time.Millisecond
			r := run(t, cfg)
			if h := r.PoolState.Health; v.pool == "crs" && (h == nil || h.Suspensions == 0 || r.PoolState.Calls.Suspends == 0) {
				t.Fatalf("%s %v: no resource was suspended: %+v", v, policy, h)
			}
		}
	}
}

func TestCancelledRequestsAreCountedOnceWhereverTheyWere(t *testing.T) {
	t.Parallel()
	for _, policy := range []config.AcquirePolicy{config.Shared, config.Exclusive} {
		for _, v := range variants {
			cfg := v.apply(quick(Normal))
			cfg.Policy = policy
			cfg.CancelRate = 1
			r := run(t, cfg)
			q := r.Requests
			if q.Success+q.BackendFailures != 0 || q.CancelledWaiting+q.CancelledBackend == 0 {
				t.Fatalf("%s %v: every request abandoned: got %d completed, %d cancelled while waiting, %d during the call",
					v, policy, q.Success+q.BackendFailures, q.CancelledWaiting, q.CancelledBackend)
			}
		}
	}
}

func TestGlobalOrderingBalancesItsAccounts(t *testing.T) {
	t.Parallel()
	for _, policy := range []config.AcquirePolicy{config.Shared, config.Exclusive} {
		cfg := quick(Normal)
		cfg.Policy = policy
		cfg.Ordering = config.GlobalOrder
		cfg.Strategy = "round_robin"
		run(t, cfg)
	}
}

func TestEveryStrategyBalancesItsAccounts(t *testing.T) {
	t.Parallel()
	for _, name := range strategyNames {
		cfg := quick(Normal)
		cfg.Policy = config.Exclusive
		cfg.Strategy = name
		if r := run(t, cfg); r.Requests.Success == 0 {
			t.Fatalf("strategy %s: no request succeeded", name)
		}
	}
}

func TestWaitsLongerThanTheTimeoutAreCountedAsTimeouts(t *testing.T) {
	t.Parallel()
	// One exclusive resource held at least 20 ms at a time, and twenty
	// workers allowed to wait 1 ms: waits must time out.
	cfg := quick(Normal)
	cfg.Policy = config.Exclusive
	cfg.Resources, cfg.Workers = 1, 20
	cfg.Latency = Latency{Kind: "fixed", Min: 20 * time.Millisecond, Max: 20 * time.Millisecond}
	cfg.Timeout = time.Millisecond
	for _, v := range variants {
		r := run(t, v.apply(cfg))
		if r.Requests.AcquireTimeouts == 0 {
			t.Fatalf("%s: no timeout", v)
		}
	}
}

func TestBurstRunsMoreWorkersInTheMiddleThird(t *testing.T) {
	t.Parallel()
	cfg := quick(Burst)
	r := run(t, cfg)
	// Every worker, surge included, makes at least one request.
	if r.Requests.Attempts < uint64(cfg.Workers) {
		t.Fatalf("%d attempts by %d workers: the surge never ran", r.Requests.Attempts, cfg.Workers)
	}
	plan := cohorts(cfg)
	if len(plan) != 2 || plan[0].workers+plan[1].workers != cfg.Workers || plan[1].start <= int64(cfg.Warmup) {
		t.Fatalf("burst plan %+v %+v", *plan[0], *plan[1])
	}
}
