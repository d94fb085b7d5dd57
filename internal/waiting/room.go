// Package waiting is where callers wait for a resource: the queue of
// waiters and the order they are served in (package queue), the
// hand-over of a freed resource to a waiter (serve.go), and the wakes of
// waiters whose cost no budget covers yet (wake.go).
//
// A scheduler keeps one Room over its shards. A caller that found no
// resource calls Wait and waits; whoever makes a resource available
// calls Serve (or ServeAfter) with that resource's shard locked:
//
//	sh.Lock()
//	defer sh.Unlock()
//	room.Repair(sh, nil)
//	... free a slot of sh ...
//	room.ServeAfter(sh)
//
// Why no waiter is left behind, and the lock rules: docs/ARCHITECTURE.md,
// "Waiting".
package waiting

import (
	"sync/atomic"
	"time"

	"github.com/crsched/crs/acquire"
	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/internal/budget"
	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
	"github.com/crsched/crs/internal/waiting/queue"
)

// Grant is what an acquiring caller receives: the resource's value, and
// for a lease the token that identifies it. A grant sent to a waiter at
// Close carries only Err.
type Grant[T any, ID comparable] struct {
	Node     *node.Node[T, ID]
	Cost     config.Cost // what the hold spends of the budgets; set by the caller
	Token    uint64      // 0 unless a lease
	Deadline int64       // the lease's deadline; 0: none
	Value    T
	Err      error
	// Tenant and Priority are whom the grant is for (see order.go); set
	// by the caller.
	Tenant   *budget.Tenant
	Priority int
}

// Host is what a room needs of the scheduler it serves.
type Host[T any, ID comparable] interface {
	// Now is the scheduler's time, in nanoseconds since it started.
	Now() int64
	// LeaseDue queues the expiry of the lease with token on n at
	// deadline. Requires n's shard's lock.
	LeaseDue(n *node.Node[T, ID], token uint64, deadline int64)
	// Report reports what a committed step on n left to report (see
	// shard.Change). Requires n's shard's lock; never blocks.
	Report(n *node.Node[T, ID], c shard.Change)
	// Acquired reports that n was handed out (an event; never blocks).
	Acquired(n *node.Node[T, ID])
	// Wake makes the scheduler's timer call Woken for shard i at at.
	Wake(i int, at int64)
	// Search takes a hold for cost, as a caller that does not wait
	// would: from shard start on, or by affinity with id, and reports
	// whether it found one. It takes shard locks itself. (The grant is
	// returned, not filled in through a pointer, which an interface call
	// would move to the heap.)
	// ask carries the cost, tenant and priority.
	Search(start int, id acquire.AffinityIdentifier, lease bool, ask Grant[T, ID]) (Grant[T, ID], bool)
}

// Config is what a room serves, fixed at Init.
type Config[T any, ID comparable] struct {
	Shards   []shard.Shard[T, ID]
	Cmp      func(a, b T) int
	Profiles *budget.Profiles
	Host     Host[T, ID]
	Clock    config.Clock
	// Global: a waiter gets the best resource of all shards
	// (config.GlobalOrder), not of the shard that served it.
	Global bool
	// Budgeted: resources have budgets, so a waiter's cost may be
	// covered by none yet (see order.go and wake.go).
	Budgeted bool
	// Limited: budgets or a rate limit may keep a free slot from a
	// waiter (Stats.LimitWaits).
	Limited bool
	// Strict: a waiter may wait beside a free resource, its cost or its
	// tenant's not covered (Budgeted, or tenants with limits): callers
	// do not pass the waiters (see order.go and wake.go).
	Strict bool
	// ShareBy is the Cost name shares are counted in (see Units).
	ShareBy string
}

// Room is the waiting of one scheduler. Init it before use.
type Room[T any, ID comparable] struct {
	cfg        Config[T, ID]
	clock      shard.Clock // cfg.Host, converted once
	queue      queue.Queue[Grant[T, ID]]
	limitWaits atomic.Uint64 // waits that began while limits held the caller back
	panics     atomic.Uint64 // comparator panics recovered by ServeAfter

	// Hook, set only by tests, runs at each step of a caller that found
	// nothing (see Step).
	Hook func(Step)
}

// Init sets what r serves.
func (r *Room[T, ID]) Init(cfg Config[T, ID]) {
	r.cfg, r.clock = cfg, cfg.Host
	r.queue.Now, r.queue.Strict = cfg.Host.Now, cfg.Strict
}

// MustQueue reports whether a caller that has not waited, asking for
// ask's tenant and priority, must queue behind the waiters
// (queue.Queue.MustQueue).
func (r *Room[T, ID]) MustQueue(ask *Grant[T, ID]) bool {
	return r.queue.MustQueue(ask.Tenant, ask.Priority)
}

// Now is the scheduler's time (Host.Now).
func (r *Room[T, ID]) Now() int64 { return r.cfg.Host.Now() }

// Len is the number of callers waiting.
func (r *Room[T, ID]) Len() int { return r.queue.Len() }

// Close sends ErrSchedulerClosed to every waiter and refuses later ones.
func (r *Room[T, ID]) Close() {
	for _, w := range r.queue.Close() {
		w.C <- Grant[T, ID]{Err: crserrors.ErrSchedulerClosed}
	}
}

// Totals returns the wait-time histogram (see Queue.Totals), the waits
// that began while limits held the caller back, and the comparator
// panics recovered while serving.
func (r *Room[T, ID]) Totals() (counts []uint64, waited time.Duration, cancelled, limitWaits, panics uint64) {
	counts, waited, cancelled = r.queue.Totals()
	return counts, waited, cancelled, r.limitWaits.Load(), r.panics.Load()
}

// Step is where a caller that found nothing is, for a test hook.
type Step uint8

const (
	BeforeQueue Step = iota // searched, not yet queued
	Queued                  // queued, not yet checked for an active resource
	Checked                 // found none active, not yet committed
	Committed               // committed, about to wait
	GaveUp                  // its context ended: out of the queue, or popped by a giver
)
