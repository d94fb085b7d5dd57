package prometheus

import (
	"strconv"

	"github.com/crsched/crs/stats"
	"github.com/prometheus/client_golang/prometheus"
)

// shareDescs are the series of stats.Stats.Tenants (labelled by tenant
// name) and stats.Stats.Priorities (by priority). A scheduler reports
// them once a call has named a tenant or a priority, or Config.Tenants
// is set; until then there are none.
type shareDescs struct {
	tenantWaiters, tenantGrants, tenantUsage       *prometheus.Desc
	priorityWaiters, priorityGrants, priorityUsage *prometheus.Desc
}

// Usage is a gauge, not a counter: a settlement below its estimate
// lowers it, which rate() would take for a restart.
func newShareDescs(desc descFunc) *shareDescs {
	const usage = " share units (Config.ShareBy; one per grant without it), corrected by settlements, so it may fall."
	return &shareDescs{
		tenantWaiters:   desc(nameTenantWaiters, "Callers of each tenant waiting for a resource now.", labelTenant),
		tenantGrants:    desc(nameTenantGrants, "Grants to the callers of each tenant.", labelTenant),
		tenantUsage:     desc(nameTenantUsage, "Each tenant's usage in"+usage, labelTenant),
		priorityWaiters: desc(namePriorityWaiters, "Callers of each priority waiting for a resource now.", labelPriority),
		priorityGrants:  desc(namePriorityGrants, "Grants to the callers of each priority.", labelPriority),
		priorityUsage:   desc(namePriorityUsage, "Each priority's usage in"+usage, labelPriority),
	}
}

// collect exports one series of each kind per tenant and per priority.
// Tenant names are the user's; two that are the same label value once
// made valid UTF-8 are exported as one series, their sum, since the
// registry would refuse the scrape for a duplicate.
func (d *shareDescs) collect(ch chan<- prometheus.Metric, st *stats.Stats) {
	tenants := make([]stats.TenantStats, 0, len(st.Tenants))
	index := make(map[string]int, len(st.Tenants))
	for _, t := range st.Tenants {
		t.Name = labelValue(t.Name)
		i, seen := index[t.Name]
		if !seen {
			index[t.Name] = len(tenants)
			tenants = append(tenants, t)
			continue
		}
		s := &tenants[i]
		s.Waiters, s.Grants, s.Usage = s.Waiters+t.Waiters, s.Grants+t.Grants, s.Usage+t.Usage
	}
	for _, t := range tenants {
		d.emit(ch, d.tenantWaiters, d.tenantGrants, d.tenantUsage, t.Name, t.Waiters, t.Grants, t.Usage)
	}
	for _, p := range st.Priorities {
		d.emit(ch, d.priorityWaiters, d.priorityGrants, d.priorityUsage, strconv.Itoa(p.Priority), p.Waiters, p.Grants, p.Usage)
	}
}

func (d *shareDescs) emit(ch chan<- prometheus.Metric, waiters, grants, usage *prometheus.Desc, label string, w int, g uint64, u int64) {
	ch <- constMetric(waiters, prometheus.GaugeValue, float64(w), label)
	ch <- constMetric(grants, prometheus.CounterValue, float64(g), label)
	ch <- constMetric(usage, prometheus.GaugeValue, float64(u), label)
}
