package redispool

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
)

// Stats is a snapshot of a pool, taken in one step on the server (after
// the leases past their deadline and the suspensions that are over have
// ended). Every resource is in exactly one of the states Available,
// Held, Excluded and Suspended, so they add up to Resources; a resource
// removed while leased is Draining until its last lease ends, and
// counted in no other state.
type Stats struct {
	// Resources is the number of resources added and not removed.
	Resources int
	// Available resources have a free slot: the next Acquire gets one.
	Available int
	// Held resources have every slot leased.
	Held int
	// Excluded resources are out until Include (leased or not).
	Excluded int
	// Suspended resources are out until a time, leased or not, but not
	// excluded: suspended (Suspend, Cooldown), ejected (Lease.Fail), or
	// resting for their budgets (Resource.Limits) until each of their
	// buckets holds a unit.
	Suspended int
	// Limited is how many of the Suspended rest for their budgets.
	Limited int
	// Draining resources were removed while leased.
	Draining int
	// Leases is the number of leases running, on all resources.
	Leases int
	// ExpiredLeases counts the leases that ended by passing their
	// deadline, since the pool's keys were created (they go with the last
	// resource).
	ExpiredLeases int64
	// LimitWaits counts the Acquire calls, of every process, that
	// queued while a resource had a free slot (its budgets short of the
	// call's cost, or the call behind one whose cost was not covered) or
	// while a resource rested for its budgets, since the pool's keys
	// were created (they go with the last resource).
	LimitWaits int64
	// Waiters is the number of Acquire calls of this Pool value waiting
	// now.
	Waiters int
	// Queued is the number of Acquire calls of every process in the
	// pool's queue now. A waiter whose process died counts until a
	// script meets its expired entry at the front of the queue.
	Queued int
	// WakeFailures counts the grants to waiters that writes of this Pool
	// value made but could not tell the waiters' processes (the server
	// refused the PUBLISH, as for a user without the pool's channels in
	// its ACL). The writes were applied; each such waiter finds its grant
	// at its next re-check instead.
	WakeFailures int64
}

// TenantStats are the figures of a tenant at a priority (Pool.Tenants).
type TenantStats struct {
	Tenant   string
	Priority int
	// Queued is its waiters now, of every process.
	Queued int
	// Grants and Usage (in Options.ShareBy, corrected by Lease.Settle;
	// 1 per grant without it) count its leases since the first.
	Grants, Usage int64
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats(ctx context.Context) (Stats, error) {
	s, _, err := p.stats(ctx)
	return s, err
}

// Tenants returns the figures of each tenant at each priority that has
// waited or been granted a lease with WithTenant or WithPriority (while
// such a call waits, calls without them count as tenant "" at priority
// 0), by priority, highest first, then name, in the same step as Stats.
// Tenant names are the callers': a collector that makes them label
// values has as many series as the pool has names.
func (p *Pool) Tenants(ctx context.Context) (Stats, []TenantStats, error) {
	return p.stats(ctx)
}

func (p *Pool) stats(ctx context.Context) (Stats, []TenantStats, error) {
	_, r, err := p.run(ctx, scriptStats, "")
	if err != nil {
		return Stats{}, nil, fmt.Errorf("redispool: stats: %w", err)
	}
	if len(r) < 10 || (len(r)-10)%4 != 0 {
		return Stats{}, nil, fmt.Errorf("redispool: stats: unexpected reply %v", r)
	}
	n := make([]int64, 10)
	for i, v := range r[:10] {
		n[i], _ = v.(int64)
	}
	s := Stats{
		Resources:     int(n[0]),
		Available:     int(n[1]),
		Excluded:      int(n[2]),
		Suspended:     int(n[3]),
		Draining:      int(n[4]),
		Leases:        int(n[5]),
		ExpiredLeases: n[6],
		Limited:       int(n[7]),
		LimitWaits:    n[8],
		Queued:        int(n[9]),
		Waiters:       p.hub.waiting(),
		WakeFailures:  p.wakeFailures.Load(),
	}
	s.Held = s.Resources - s.Available - s.Excluded - s.Suspended
	return s, tenantStats(r[10:]), nil
}

// tenantStats reads the stats script's figures of the classes: cid
// (classOf), waiters, grants, usage for each.
func tenantStats(r []any) []TenantStats {
	var ts []TenantStats
	for i := 0; i+3 < len(r); i += 4 {
		cid, _ := r[i].(string)
		if len(cid) < 10 {
			continue
		}
		level, _ := strconv.ParseInt(cid[:10], 10, 64)
		name, _ := hex.DecodeString(cid[10:])
		t := TenantStats{Tenant: string(name), Priority: int(math.MaxInt32 - level)}
		queued, _ := r[i+1].(int64)
		t.Queued = int(queued)
		t.Grants, _ = r[i+2].(int64)
		t.Usage, _ = r[i+3].(int64)
		ts = append(ts, t)
	}
	return ts
}
