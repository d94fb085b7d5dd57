package scheduler

import (
	"sync/atomic"
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
	"github.com/crsched/crs/internal/affinity"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/deadline"
	"github.com/crsched/crs/internal/dispatch"
	"github.com/crsched/crs/internal/lookup"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting"
)

// Scheduler hands out resources of type T, identified by keys of type ID,
// best first by the configured comparator. Create one with New; Acquire
// and Release, AcquireContext and Lease hand resources out and take them
// back, Stats reports the pool's state, Shutdown closes it. All methods are
// safe for concurrent use. The lock order and what runs under which lock:
// docs/ARCHITECTURE.md, "Lock rules".
type Scheduler[T any, ID comparable] struct {
	cmp      func(a, b T) int
	key      func(T) ID
	capacity func(T) int // nil: every resource has capacity 1
	nilness  nilness     // how to tell a nil T, which Add must reject
	word     bool        // T is one pointer word (see node.WordShaped)
	// checkKeys: ID has values that cannot be map keys (see usable), so
	// keys are checked before they reach the lookup map.
	checkKeys bool
	policy    config.AcquirePolicy
	global    bool // Ordering is GlobalOrder
	// lockFree: Acquire may read a shard's published top without its lock
	// (Shared policy, no rate limits or budgets: a shared acquisition then
	// changes nothing).
	lockFree bool
	leaseTTL time.Duration
	clock    config.Clock
	epoch    time.Time // the clock's zero for deadlines kept as int64

	releaseCooldown time.Duration
	ejection        config.Ejection
	rateLimit       func(T) (float64, int) // nil: unlimited
	limits          func(T) []config.Limit // nil: no budgets
	// budgeted: Limits is set. Waiting callers are then served in strict
	// FIFO order, and a cost that no resource covers yet is waited for
	// through the wakes (see cover.go).
	budgeted bool
	profiles budget.Profiles
	strategy acquire.AcquireStrategy // nil: the default strategy, rotation
	rotation rotation
	view     acquire.ShardView

	shards []shard.Shard[T, ID]
	nodes  *lookup.Map[T, ID]
	// size counts resources added and not removed (draining ones are
	// removed); Len reads it.
	size atomic.Int64
	// assigned spreads new resources over the shards in rotation.
	assigned atomic.Uint64

	affinity affinity.Map[T, ID]
	room     waiting.Room[T, ID]
	// deadlines holds every lease deadline, end of a rest and wake, on
	// one timer (see expiry.go).
	deadlines *deadline.Timer[*node.Node[T, ID]]
	expired   atomic.Uint64 // leases reclaimed at their deadline
	pool      shard.Pool
	totals    struct{ suspensions, ejections, failures atomic.Uint64 }

	events *dispatch.Dispatcher[ID] // nil when there are no observers
	closed atomic.Bool
	hooks  hooks // set only by tests (export_test.go)
}

// hooks are the places where a test runs code in the middle of an
// operation; all nil outside tests.
type hooks struct {
	// waiting runs at each step of a caller that found nothing (set on
	// the room: waiting.Room.Hook).
	waiting func(waiting.Step)
	// refusing runs in a failing BatchAdd after each look at the map
	// (see refusal).
	refusing func(refusal)
	// publishing runs in a shard's Publish, under its lock, wherever a
	// reader without the lock may look between two of its stores (set on
	// every shard: shard.Shard.Publishing).
	publishing func()
}

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
		nilness:   nilnessOf[T](),
		word:      node.WordShaped[T](),
		checkKeys: mayBeUnusable[ID](),
		policy:    cfg.AcquirePolicy,
		global:    cfg.Ordering == config.GlobalOrder,
		lockFree:  cfg.AcquirePolicy == config.Shared && cfg.RateLimit == nil && cfg.Limits == nil,
		leaseTTL:  cfg.LeaseTTL,
		clock:     cfg.Clock,

		releaseCooldown: cfg.ReleaseCooldown,
		ejection:        cfg.Ejection,
		rateLimit:       cfg.RateLimit,
		limits:          cfg.Limits,
		budgeted:        cfg.Limits != nil,

		strategy: cfg.AcquireStrategy,
		shards:   make([]shard.Shard[T, ID], cfg.HeapCount),
		nodes:    lookup.New[T, ID](),
	}
	if s.strategy == nil && len(s.shards) > 1 {
		s.rotation.m = ^uint64(0)/uint64(len(s.shards)) + 1
	}
	s.epoch = s.clock.Now()
	s.affinity.Init(s.nodes)
	peeked := s.lockFree || s.global
	for i := range s.shards {
		s.shards[i].Init(i, s.cmp, s.policy == config.Exclusive, s.global, peeked, &s.pool)
	}
	s.view = (*shardView[T, ID])(s)
	s.deadlines = deadline.New(s.clock, s.now, s.due)
	s.room.Init(waiting.Config[T, ID]{
		Shards: s.shards, Cmp: s.cmp, Profiles: &s.profiles, Host: (*host[T, ID])(s), Clock: s.clock,
		Global: s.global, Budgeted: s.budgeted, Limited: s.budgeted || s.rateLimit != nil,
	})
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

// Len is the number of resources in the scheduler, whatever their state.
//
// Add and Remove change the count and the shards at different moments, so
// Len reads the count between two reads of the shards' versions that show
// no change in progress or completed in between: the count then matches
// what Acquire and Get see at that instant. If changes keep coming, it
// stops them by locking every shard.
func (s *Scheduler[T, ID]) Len() int {
	for range 3 {
		before, busy := s.versions()
		if busy {
			continue
		}
		n := s.size.Load()
		if after, _ := s.versions(); after == before {
			return int(n)
		}
	}
	for i := range s.shards {
		s.shards[i].Lock()
		defer s.shards[i].Unlock()
	}
	return int(s.size.Load())
}

// versions sums the shards' versions and reports whether a change was in
// progress in any shard. The versions only grow, so two equal sums mean
// that no shard's version changed in between.
func (s *Scheduler[T, ID]) versions() (sum uint64, busy bool) {
	for i := range s.shards {
		v := s.shards[i].Version.Load()
		sum += v
		busy = busy || v&1 != 0
	}
	return sum, busy
}

// Get returns the current value of the resource with key id, whatever its
// state.
func (s *Scheduler[T, ID]) Get(id ID) (T, error) {
	// Not through locked, as Update: a read by key is common, and the
	// closure call measured slower.
	var zero T
	if s.closed.Load() {
		return zero, crserrors.ErrSchedulerClosed
	}
	n, sh := s.find(id)
	if n == nil {
		return zero, crserrors.ErrResourceNotFound
	}
	sh.Lock()
	defer sh.Unlock()
	if !s.enter(sh, n) {
		return zero, crserrors.ErrResourceNotFound
	}
	return n.Value, nil
}

// gone reports whether n was removed, as far as every operation but the
// release of its holds is concerned.
func gone[T any, ID comparable](n *node.Node[T, ID]) bool {
	return n.State == node.Removed || n.State == node.Draining
}

// now is the clock's reading as nanoseconds since New, for deadlines. It
// stays below node.Never, so that a deadline of Never never comes, even
// on a clock run past the range of a time.Duration (Sub saturates).
func (s *Scheduler[T, ID]) now() int64 {
	return min(int64(s.clock.Now().Sub(s.epoch)), node.Never-1)
}

// after is the deadline d from now; node.Never if that is out of range.
func (s *Scheduler[T, ID]) after(d time.Duration) int64 { return node.After(s.now(), d) }

// find returns the node for id and its shard, or nil. The caller must lock
// the shard and check that the node was not removed in between.
func (s *Scheduler[T, ID]) find(id ID) (*node.Node[T, ID], *shard.Shard[T, ID]) {
	if s.checkKeys && !usable(id) {
		return nil, nil // never added: Add refuses such a key
	}
	n, ok := s.nodes.Get(id)
	if !ok {
		return nil, nil
	}
	return n, &s.shards[n.Shard]
}

// noEvent stands for "no event to emit" where a step may call for one.
// EventAdd is 0, so the zero value cannot.
const noEvent events.EventType = -1

func (s *Scheduler[T, ID]) emit(t events.EventType, id ID) {
	if s.events != nil {
		s.events.Emit(events.Event[ID]{Type: t, ID: id})
	}
}
