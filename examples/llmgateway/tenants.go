package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/crsched/crs/config"
	"github.com/crsched/crs/scheduler"
)

// The headers that name a call's tenant and priority. Neither goes on to
// the provider.
const (
	TenantHeader   = "X-Tenant"
	PriorityHeader = "X-Priority"
)

// MaxPriority bounds X-Priority: -MaxPriority to MaxPriority, higher
// served first, 0 without the header. Each tenant and priority is a
// queue of its own in the scheduler, kept for its life, so the callers
// must not be able to make as many as they like.
const MaxPriority = 9

// maxTenantName bounds a tenant's name, which becomes a label value of
// the metrics (extensions/prometheus).
const maxTenantName = 64

// who is a call's tenant and priority, read from its headers.
type who struct {
	tenant   string
	priority int
}

// whoOf reads a call's X-Tenant and X-Priority, before any budget is
// taken, so that a bad one is a 400 that costs nothing. Without either,
// the call is the default tenant's, at priority 0. With Options.Tenants
// set, a tenant must be one of them.
func (g *Gateway) whoOf(r *http.Request) (who, error) {
	var c who
	tenants, prios := r.Header.Values(TenantHeader), r.Header.Values(PriorityHeader)
	if len(tenants) > 1 || len(prios) > 1 {
		return c, fmt.Errorf("give %s and %s at most once each", TenantHeader, PriorityHeader)
	}
	if len(tenants) == 1 {
		c.tenant = strings.TrimSpace(tenants[0])
		if err := checkTenantName(c.tenant); err != nil {
			return c, fmt.Errorf("%s: %w", TenantHeader, err)
		}
		if _, known := g.tenants[c.tenant]; g.tenants != nil && !known {
			return c, fmt.Errorf("%s: unknown tenant %q", TenantHeader, c.tenant)
		}
	}
	if len(prios) == 1 {
		p, err := strconv.Atoi(strings.TrimSpace(prios[0]))
		if err != nil || p < -MaxPriority || p > MaxPriority {
			return c, fmt.Errorf("%s: want a whole number from %d to %d", PriorityHeader, -MaxPriority, MaxPriority)
		}
		c.priority = p
	}
	return c, nil
}

// checkTenantName accepts 1 to maxTenantName letters, digits, '.', '_'
// and '-': a name that reads well in a log and a metric label.
func checkTenantName(name string) error {
	if name == "" || len(name) > maxTenantName {
		return fmt.Errorf("want a name of 1 to %d characters", maxTenantName)
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q: want letters, digits, '.', '_' and '-' only", name)
		}
	}
	return nil
}

// options are the lease options of a call of c's with estimate est.
func (c who) options(est int64) []scheduler.LeaseOption {
	// Keys given without a TPM have no tokens limit, perhaps all of them:
	// they ignore the tokens rather than refuse them as unknown.
	opts := []scheduler.LeaseOption{scheduler.WithCost(config.Cost{"tokens": est}), scheduler.AllowUnknownLimits()}
	if c.tenant != "" {
		opts = append(opts, scheduler.WithTenant(c.tenant))
	}
	if c.priority != 0 {
		opts = append(opts, scheduler.WithPriority(c.priority))
	}
	return opts
}

// ParseTenants reads -tenants: NAME=WEIGHT or NAME=WEIGHT:TPM, separated
// by commas, TPM being the tenant's own budget of tokens per minute,
// spent with the key's (config.Tenant). It returns nil for "".
func ParseTenants(s string) (map[string]config.Tenant, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]config.Tenant{}
	for _, item := range strings.Split(s, ",") {
		name, spec, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want NAME=WEIGHT or NAME=WEIGHT:TPM", item)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("tenant %q given twice", name)
		}
		weight, tpm, hasTPM := strings.Cut(spec, ":")
		var t config.Tenant
		var err error
		if t.Weight, err = strconv.ParseInt(weight, 10, 64); err != nil || t.Weight < 1 {
			return nil, fmt.Errorf("%s: weight %q: want a whole number from 1", name, weight)
		}
		if hasTPM {
			n, err := strconv.ParseInt(tpm, 10, 64)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s: tokens per minute %q: want a whole number from 1", name, tpm)
			}
			t.Limits = []config.Limit{{Name: "tokens", Max: n, Per: time.Minute}}
		}
		if err := checkTenants(map[string]config.Tenant{name: t}); err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

// checkTenants checks Options.Tenants: names as X-Tenant takes them, and
// each Tenant valid (config.Tenant.Validate).
func checkTenants(ts map[string]config.Tenant) error {
	for name, t := range ts {
		if err := checkTenantName(name); err != nil {
			return fmt.Errorf("tenant: %w", err)
		}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("tenant %q: %w", name, err)
		}
	}
	return nil
}
