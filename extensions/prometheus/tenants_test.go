package prometheus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crsprom "github.com/crsched/crs/extensions/prometheus"
	"github.com/crsched/crs/internal/fakeclock"
	"github.com/crsched/crs/scheduler"
	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var shareMetrics = []string{
	"crs_tenant_waiters", "crs_tenant_grants_total", "crs_tenant_usage",
	"crs_priority_waiters", "crs_priority_grants_total", "crs_priority_usage",
}

// tenantPool is one resource with a token budget, shared by tenant
// "batch" at priority 0 and tenant "team-a" (weight 3) at priority 5,
// counted in tokens. hold grants batch a lease of 300 tokens.
func tenantPool(t *testing.T) *pool {
	t.Helper()
	sched := newPool(t, config.Config[*worker, string]{
		AcquirePolicy: config.Exclusive,
		Clock:         fakeclock.New(),
		Limits: func(*worker) []config.Limit {
			return []config.Limit{{Name: "tokens", Max: 10_000, Per: time.Minute}}
		},
		Tenants: func(name string) config.Tenant {
			if name == "team-a" {
				return config.Tenant{Weight: 3}
			}
			return config.Tenant{}
		},
		ShareBy: "tokens",
	})
	must(t, "Add", sched.Add(&worker{"key", 1}))
	return sched
}

// servedTenantPool is tenantPool after one lease of team-a at priority 5,
// released: a pool with one series of each tenant and priority metric.
func servedTenantPool(t *testing.T) *pool {
	t.Helper()
	sched := tenantPool(t)
	lease, err := sched.Lease(context.Background(), scheduler.WithTenant("team-a"), scheduler.WithPriority(5))
	must(t, "Lease", err)
	must(t, "Release", lease.Release())
	return sched
}

func TestCollectorExportsEachTenantsAndPrioritysWaitersGrantsAndUsage(t *testing.T) {
	sched := tenantPool(t)
	ctx := context.Background()
	held, err := sched.Lease(ctx, scheduler.WithTenant("batch"), scheduler.WithCost(config.Cost{"tokens": 300}))
	must(t, "batch's lease", err)
	served := make(chan error)
	go func() {
		l, err := sched.Lease(ctx, scheduler.WithTenant("team-a"), scheduler.WithPriority(5), scheduler.WithCost(config.Cost{"tokens": 100}))
		if err == nil {
			err = l.Release()
		}
		served <- err
	}()
	untilWaiting(sched, 1)
	c := crsprom.NewCollector(sched, nil)
	const waiting = `
# HELP crs_priority_grants_total Grants to the callers of each priority.
# TYPE crs_priority_grants_total counter
crs_priority_grants_total{priority="0"} 1
crs_priority_grants_total{priority="5"} 0
# HELP crs_priority_usage Each priority's usage in share units (Config.ShareBy; one per grant without it), corrected by settlements, so it may fall.
# TYPE crs_priority_usage gauge
crs_priority_usage{priority="0"} 300
crs_priority_usage{priority="5"} 0
# HELP crs_priority_waiters Callers of each priority waiting for a resource now.
# TYPE crs_priority_waiters gauge
crs_priority_waiters{priority="0"} 0
crs_priority_waiters{priority="5"} 1
# HELP crs_tenant_grants_total Grants to the callers of each tenant.
# TYPE crs_tenant_grants_total counter
crs_tenant_grants_total{tenant="batch"} 1
crs_tenant_grants_total{tenant="team-a"} 0
# HELP crs_tenant_usage Each tenant's usage in share units (Config.ShareBy; one per grant without it), corrected by settlements, so it may fall.
# TYPE crs_tenant_usage gauge
crs_tenant_usage{tenant="batch"} 300
crs_tenant_usage{tenant="team-a"} 0
# HELP crs_tenant_waiters Callers of each tenant waiting for a resource now.
# TYPE crs_tenant_waiters gauge
crs_tenant_waiters{tenant="batch"} 0
crs_tenant_waiters{tenant="team-a"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(waiting), shareMetrics...); err != nil {
		t.Fatal(err)
	}

	must(t, "Settle", held.Settle(config.Cost{"tokens": 200}))
	must(t, "Release", held.Release())
	must(t, "team-a's lease", <-served)
	want := map[string]map[string]float64{
		"crs_tenant_usage":          {"batch": 200, "team-a": 100},
		"crs_tenant_grants_total":   {"batch": 1, "team-a": 1},
		"crs_tenant_waiters":        {"batch": 0, "team-a": 0},
		"crs_priority_usage":        {"0": 200, "5": 100},
		"crs_priority_grants_total": {"0": 1, "5": 1},
	}
	for name, byLabel := range want {
		label := "tenant"
		if strings.HasPrefix(name, "crs_priority") {
			label = "priority"
		}
		got := seriesBy(t, c, name, label)
		for l, v := range byLabel {
			if got[l] != v {
				t.Errorf("%s{%s=%q} = %v, want %v (all: %v)", name, label, l, got[l], v, got)
			}
		}
	}
}

func TestCollectorExportsNoTenantSeriesUntilATenantOrPriorityIsUsed(t *testing.T) {
	sched := newPool(t, config.Config[*worker, string]{})
	must(t, "Add", sched.Add(&worker{"a", 1}))
	lease, err := sched.Lease(context.Background())
	must(t, "Lease", err)
	must(t, "Release", lease.Release())
	if n := testutil.CollectAndCount(crsprom.NewCollector(sched, nil), shareMetrics...); n != 0 {
		t.Fatalf("%d tenant and priority series, want none", n)
	}
}

func TestCollectorExportsTheDefaultTenantWithAnEmptyLabel(t *testing.T) {
	st := stats.Stats{Tenants: []stats.TenantStats{{Name: "", Grants: 4}, {Name: "a", Grants: 1}}}
	got := seriesBy(t, crsprom.NewCollector(fixedStats(st), nil), "crs_tenant_grants_total", "tenant")
	if got[""] != 4 || got["a"] != 1 {
		t.Fatalf("grants by tenant = %v, want the default tenant as \"\": 4 and a: 1", got)
	}
}

func TestCollectorSumsTenantsWhoseNamesAreOneLabelValue(t *testing.T) {
	// "\xff" and "\xfe" are both U+FFFD as label values; two series with
	// one label set would fail the whole scrape.
	st := stats.Stats{Tenants: []stats.TenantStats{
		{Name: "\xff", Waiters: 1, Grants: 2, Usage: 3},
		{Name: "\xfe", Waiters: 10, Grants: 20, Usage: 30},
		{Name: "ok", Grants: 5},
	}}
	c := crsprom.NewCollector(fixedStats(st), nil)
	got := seriesBy(t, c, "crs_tenant_usage", "tenant")
	if len(got) != 2 || got["\uFFFD"] != 33 || got["ok"] != 0 {
		t.Fatalf("usage by tenant = %v, want U+FFFD: 33 and ok: 0", got)
	}
	if grants := seriesBy(t, c, "crs_tenant_grants_total", "tenant"); grants["\uFFFD"] != 22 {
		t.Fatalf("grants by tenant = %v, want U+FFFD: 22", grants)
	}
}
