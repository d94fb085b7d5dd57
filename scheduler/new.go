package scheduler

import (
	"github.com/crsched/crs/config"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/deadline"
	"github.com/crsched/crs/internal/dispatch"
	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
)

// New validates cfg and returns a running scheduler. Call Shutdown when
// done with it to stop its event dispatcher.
func New[T any, ID comparable](cfg config.Config[T, ID]) (*Scheduler[T, ID], error) {
	cfg, err := config.Validate(cfg)
	if err != nil {
		return nil, err
	}
	s := &Scheduler[T, ID]{
		cmp:       cfg.Comparator,
		key:       cfg.KeyFunc,
		capacity:  cfg.Capacity,
		nilness:   node.NilnessOf[T](),
		word:      node.WordShaped[T](),
		checkKeys: lookup.MayBeUnusable[ID](),
		policy:    cfg.AcquirePolicy,
		global:    cfg.Ordering == config.GlobalOrder,
		lockFree:  cfg.AcquirePolicy == config.Shared && cfg.RateLimit == nil && cfg.Limits == nil && cfg.Tenants == nil,
		clock:     cfg.Clock,

		rateLimit: cfg.RateLimit,
		limits:    cfg.Limits,
		budgeted:  cfg.Limits != nil,
		tenants:   cfg.Tenants,

		strategy: cfg.AcquireStrategy,
		shards:   make([]shard.Shard[T, ID], cfg.HeapCount),
		nodes:    lookup.New[T, ID](),
	}
	s.pool.Health = shard.Health{Ejection: cfg.Ejection, ReleaseCooldown: cfg.ReleaseCooldown}
	s.pool.LeaseTTL = cfg.LeaseTTL
	s.epoch = s.clock.Now()
	if s.tenants != nil {
		t, err := askTenant(s.tenants, "")
		if err != nil {
			return nil, err
		}
		s.defTenant = budget.NewTenant("", t, s.now())
	}
	s.affinity.Init(s.nodes)
	peeked := s.lockFree || s.global
	for i := range s.shards {
		s.shards[i].Init(i, s.cmp, s.policy == config.Exclusive, s.global, peeked, &s.pool, s.nodes)
	}
	s.view = (*shardView[T, ID])(s)
	s.deadlines = deadline.New(s.clock, s.now, s.due)
	s.room.Init(waiting.Config[T, ID]{
		Shards: s.shards, Cmp: s.cmp, Profiles: &s.profiles, Host: (*host[T, ID])(s), Clock: s.clock,
		Global: s.global, Budgeted: s.budgeted, Limited: s.budgeted || s.rateLimit != nil,
		Strict: s.budgeted || s.tenants != nil, ShareBy: cfg.ShareBy,
	})
	s.search.Init(s.shards, s.cmp, &s.room, &s.affinity, s.global, s.lockFree)
	if len(cfg.Observers) > 0 {
		s.events = dispatch.Start(cfg.EventQueueSize, cfg.Observers)
	}
	return s, nil
}

// Shutdown closes the scheduler: every later call returns
// ErrSchedulerClosed, and every waiting call returns it too. It stops the
// lease-expiry timer, delivers the events already queued, stops the
// dispatcher and returns once it has exited; events after it are dropped
// and counted (stats.Stats.DroppedEvents). It is idempotent and safe to
// call concurrently. Called from an observer, it returns without waiting
// for the dispatcher, which delivers the rest of the queue once the
// observer returns, and exits.
func (s *Scheduler[T, ID]) Shutdown() {
	s.closed.Store(true)
	s.room.Close()
	s.deadlines.Stop()
	if s.events != nil {
		s.events.Stop()
	}
}
