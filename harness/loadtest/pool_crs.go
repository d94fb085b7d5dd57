package loadtest

import (
	"context"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/extensions/metrics"
	"github.com/crsched/crs/scheduler"
)

// backend is the resource the workers compete for: a simulated upstream.
type backend struct {
	id   int
	name string
}

type lease = scheduler.Lease[*backend, int]

// crsHandle is one acquisition from the scheduler: a Lease with -api
// lease; with -api acquire, the key of what AcquireContext returned (an
// anonymous hold, ended with Release(id), under the Exclusive policy; under
// Shared, nothing is held and there is nothing to release).
type crsHandle struct {
	lease lease
	id    int
}

// crsPool is the scheduler under test.
type crsPool struct {
	s         *scheduler.Scheduler[*backend, int]
	leases    bool
	exclusive bool
	observer  *metrics.TelemetryObserver[int] // nil without -events
	health    crsHealth
}

var strategyNames = []string{"adaptive", "local", "round_robin", "weighted"}

func newStrategy(name string, shards int) acquire.AcquireStrategy {
	switch name {
	case "local":
		return acquire.NewLocalStrategy()
	case "round_robin":
		return acquire.NewRoundRobin()
	case "weighted":
		w := make([]uint, shards)
		for i := range w {
			w[i] = 1
		}
		return acquire.NewWeightedStrategy(w)
	}
	return acquire.NewAdaptiveStrategy()
}

// newCRSPool makes the scheduler for cfg and adds its resources, in
// chunks between which a signal (the end of ctx) stops it.
func newCRSPool(ctx context.Context, cfg Config) (*crsPool, error) {
	p := &crsPool{leases: cfg.API == "lease", exclusive: cfg.Policy == config.Exclusive}
	c := config.Config[*backend, int]{
		HeapCount: cfg.HeapCount(),
		// Every backend is equally good: the strategy and the scheduler's
		// tie-break (fewest holders first) decide, which is what spreads
		// the load evenly over identical backends.
		Comparator:      func(a, b *backend) int { return 0 },
		KeyFunc:         func(b *backend) int { return b.id },
		AcquirePolicy:   cfg.Policy,
		AcquireStrategy: newStrategy(cfg.Strategy, cfg.HeapCount()),
		Ordering:        cfg.Ordering,
		EventQueueSize:  cfg.EventQueueSize,
	}
	if cfg.Capacity > 1 {
		capacity := cfg.Capacity
		c.Capacity = func(*backend) int { return capacity }
	}
	if cfg.Events {
		p.observer = metrics.NewTelemetryObserver[int]()
		c.Observers = []events.Observer[int]{p.observer}
	}
	p.health.configure(&c, cfg)
	s, err := scheduler.New(c)
	if err != nil {
		return nil, err
	}
	p.s = s
	p.health.s = s
	err = inChunks(ctx, cfg.Resources, "adding the resources", func(from, to int) error {
		backends := make([]*backend, to-from)
		for i := range backends {
			backends[i] = &backend{id: from + i, name: backendName(from + i)}
		}
		return s.BatchAdd(backends)
	})
	if err != nil {
		s.Shutdown()
		return nil, err
	}
	return p, nil
}

func (p *crsPool) acquire(ctx context.Context, h *crsHandle) (int, error) {
	if p.leases {
		l, err := p.s.Lease(ctx)
		if err != nil {
			return -1, err
		}
		*h = crsHandle{lease: l, id: l.Key()}
		return h.id, nil
	}
	b, err := p.s.AcquireContext(ctx)
	if err != nil {
		return -1, err
	}
	*h = crsHandle{id: b.id}
	return b.id, nil
}

// release ends the hold h took, if it took one.
func (p *crsPool) release(h *crsHandle) error {
	switch {
	case p.leases:
		return h.lease.Release()
	case p.exclusive:
		return p.s.Release(h.id)
	}
	return nil // a shared acquisition holds nothing
}

// holdsTracked: the scheduler counts a holder for each acquisition, so
// its Holders figure and its release events can be checked.
func (p *crsPool) holdsTracked() bool { return p.leases || p.exclusive }

func (p *crsPool) end(h *crsHandle, failed bool) error { return p.health.end(h, failed, p.release) }

// finish ends the rests still running, then shuts the scheduler down,
// which delivers the events still queued: the event counts are final.
func (p *crsPool) finish() {
	p.health.finish()
	p.s.Shutdown()
}

func (p *crsPool) state() PoolState {
	st := p.s.Stats()
	ps := PoolState{
		HoldsTracked:    p.holdsTracked(),
		Holders:         st.Holders,
		Waiters:         st.Waiters,
		Active:          st.ActiveResources,
		Total:           st.TotalResources,
		Draining:        st.DrainingResources,
		Excluded:        st.ExcludedResources,
		Suspended:       st.SuspendedResources,
		Ejected:         st.EjectedResources,
		RateLimited:     st.RateLimitedResources,
		CountsCancelled: true,
		Cancelled:       st.CancelledWaits,
		Health:          &HealthTotals{Failures: st.Failures, Suspensions: st.Suspensions, Ejections: st.Ejections},
		Calls:           p.health.calls(),
		Dropped:         st.DroppedEvents,
	}
	if err := p.health.finishErr; err != nil {
		ps.Error = "include at the end: " + err.Error()
	}
	if p.observer != nil {
		t := p.observer.Snapshot()
		ps.Events = &EventCounts{
			Add: t.AddCount, Acquire: t.AcquireCount, Release: t.ReleaseCount,
			Exclude: t.ExcludeCount, Include: t.IncludeCount, Remove: t.RemoveCount,
			Suspend: t.SuspendCount, Eject: t.EjectCount, Resume: t.ResumeCount,
		}
	}
	return ps
}

func (p *crsPool) close() {}
