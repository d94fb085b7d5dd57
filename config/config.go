// Package config holds the scheduler's configuration and its validation.
package config

import (
	"time"

	"github.com/crsched/crs/acquire"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/events"
)

// DefaultHeapCount is the number of heap shards used when HeapCount is 0.
const DefaultHeapCount = 1

// MaxHeapCount is the largest accepted HeapCount.
const MaxHeapCount = 1024

// DefaultEventQueueSize is the event queue capacity used when
// EventQueueSize is 0.
const DefaultEventQueueSize = 1024

// Comparator orders resources: negative when a should be handed out before
// b, positive when after, zero when they are equally good. It must be a
// consistent total order and must not call back into the scheduler.
type Comparator[T any] func(a, b T) int

// KeyFunc returns the identity of a resource. It must return the same key
// for every version of a resource passed to Update.
type KeyFunc[T any, ID comparable] func(T) ID

// Config configures a scheduler. The zero values of the optional fields
// select the documented defaults.
type Config[T any, ID comparable] struct {
	// HeapCount is the number of independently locked heap shards.
	// 0 means DefaultHeapCount; otherwise it must be in [1, MaxHeapCount].
	HeapCount int
	// Comparator orders resources (required).
	Comparator Comparator[T]
	// KeyFunc identifies resources (required).
	KeyFunc KeyFunc[T, ID]
	// AcquirePolicy decides whether Acquire leaves the resource in the pool
	// (Shared, the zero value) or takes it out until Release (Exclusive).
	AcquirePolicy AcquirePolicy
	// AcquireStrategy picks the shard Acquire looks in first. nil means
	// the rotation of acquire.NewRoundRobin(), which the scheduler then
	// keeps itself and asks without the interface.
	AcquireStrategy acquire.AcquireStrategy
	// Ordering decides whether Acquire returns the best resource of one
	// shard (ShardOrder, the zero value) or of the whole pool
	// (GlobalOrder).
	Ordering Ordering
	// Observers receive events asynchronously on one dispatcher goroutine.
	Observers []events.Observer[ID]
	// EventQueueSize bounds the event queue; events that do not fit are
	// dropped and counted. 0 means DefaultEventQueueSize.
	EventQueueSize int
	// Capacity is how many holders a resource takes at once under the
	// Exclusive policy; nil, or a result below 1, means 1, and one above
	// math.MaxInt32 means math.MaxInt32. A resource stays acquirable until
	// its last slot is taken. It is read when the resource is added and
	// on each Update.
	Capacity func(T) int
	// LeaseTTL is how long a Lease lasts before the scheduler reclaims it;
	// 0 means leases do not expire. Lease.Extend pushes a deadline back.
	LeaseTTL time.Duration
	// Clock is the source of time for deadlines, rate limits and wait
	// times; nil means SystemClock.
	Clock Clock
	// ReleaseCooldown suspends every resource for this long when a hold on
	// it ends (Release, Lease.Release, or a lease expiring), in the same
	// step, so no other caller can take it in between; 0 means none.
	ReleaseCooldown time.Duration
	// Ejection takes resources that keep failing out of the pool; the
	// zero value is off.
	Ejection Ejection
	// RateLimit returns a resource's limit: it is handed out at most
	// burst + perSecond*t times in any window of length t. nil, or a
	// perSecond that is <= 0, NaN or +Inf, means unlimited; a burst below
	// 1 means 1. A rate so small that the next token is past the clock's
	// range gives the burst and then nothing more. It is read when the
	// resource is added and on each Update.
	//
	// It is a token bucket with the arithmetic of Limits: Limit{Max:
	// burst, Per: burst/perSecond seconds}, Per rounded up to the
	// nanosecond (so the rate is never above perSecond) and burst capped
	// at MaxUnits, of which every hand-out takes 1 whatever its cost. It
	// is kept apart from Limits, so that a cost never names it.
	RateLimit func(T) (perSecond float64, burst int)
	// Limits returns a resource's budgets: token buckets such as requests
	// and tokens per minute (see Limit), kept exactly and taken from in
	// the same step as the hold they pay for (see scheduler.WithCost).
	// nil, or an empty result, means no budget. It is read when the
	// resource is added and on each Update; invalid limits (see
	// ValidateLimits) make that call fail and change nothing.
	Limits func(T) []Limit
	// Tenants returns what a tenant (scheduler.WithTenant; "" is the
	// default tenant) is entitled to: its weight in the fair sharing
	// between waiting tenants, and its own budgets, spent in the same
	// step as a resource's. nil means every tenant has weight 1 and no
	// limits. It is user code: the scheduler calls it outside any lock,
	// once per name, the first time a call names the tenant ("" at New),
	// and keeps the answer for its whole life; a panic, or an invalid
	// answer (see Tenant), makes that call fail with ErrInvalidTenant,
	// keeps nothing, and the next call that names the tenant asks again.
	// Tenant names become label values of metrics: keep their number
	// bounded.
	Tenants func(name string) Tenant
	// ShareBy is the name of the Cost amount that tenants' shares are
	// counted in (for example "tokens"): a grant adds Cost.Of(ShareBy)
	// to its tenant's usage, corrected by Lease.Settle. "" counts one per
	// grant.
	ShareBy string
}

// Validate checks cfg and returns it with the defaults of its zero fields
// filled in (HeapCount, EventQueueSize, Clock), as New will use it; the
// error, if any, is the first problem found, as a sentinel of the errors
// package itself. AcquireStrategy stays nil: New gives each scheduler a
// round robin of its own, since a strategy has state. New calls Validate;
// calling it first is only needed to check a configuration early.
func Validate[T any, ID comparable](cfg Config[T, ID]) (Config[T, ID], error) {
	if cfg.HeapCount == 0 {
		cfg.HeapCount = DefaultHeapCount
	}
	if cfg.EventQueueSize == 0 {
		cfg.EventQueueSize = DefaultEventQueueSize
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	return cfg, cfg.check()
}

func (c Config[T, ID]) check() error {
	switch {
	case c.HeapCount < 0 || c.HeapCount > MaxHeapCount:
		return crserrors.ErrInvalidHeapCount
	case c.Comparator == nil:
		return crserrors.ErrNilComparator
	case c.KeyFunc == nil:
		return crserrors.ErrNilKeyFunc
	case !c.AcquirePolicy.valid():
		return crserrors.ErrInvalidAcquirePolicy
	case !c.Ordering.valid():
		return crserrors.ErrInvalidOrdering
	case c.EventQueueSize < 0:
		return crserrors.ErrInvalidEventQueueSize
	case c.LeaseTTL < 0, c.ReleaseCooldown < 0:
		return crserrors.ErrInvalidDuration
	}
	return c.Ejection.Validate()
}
