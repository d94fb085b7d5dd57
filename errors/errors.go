// Package errors holds the sentinel errors returned by the scheduler.
//
// Every error returned by this module either is one of these sentinels or
// wraps one, so callers test with the standard library's errors.Is:
//
//	if errors.Is(err, crserrors.ErrNoResourceAvailable) { ... }
//
// The operations CRS v1.2.3 already had (config.Validate, scheduler.New,
// Add, BatchAdd, Acquire, AcquireByAffinity, Release, Update, Exclude,
// Include, Remove, Get) return the sentinel itself, as CRS did, so that
// code written for CRS that compares with == keeps working, and so that
// an expected refusal such as ErrNoResourceAvailable allocates nothing.
// The one exception is a key still taken by a draining resource, which
// CRS did not have: Add and BatchAdd then return an error wrapping both
// ErrDuplicateKey and ErrResourceDraining. Operations CRS did not have
// (AcquireContext, leases, Suspend) may wrap a sentinel with context.
//
// The package shadows the standard library's name on purpose (the seed's
// documented import path is .../errors); import it under an alias such as
// crserrors when you also need the standard library's package.
package errors

import stderrors "errors"

// Configuration errors, returned by config.Validate and scheduler.New.
var (
	// ErrInvalidHeapCount: HeapCount is negative or above config.MaxHeapCount.
	ErrInvalidHeapCount = stderrors.New("crs: invalid heap count")
	// ErrNilComparator: Comparator is nil.
	ErrNilComparator = stderrors.New("crs: nil comparator")
	// ErrNilKeyFunc: KeyFunc is nil.
	ErrNilKeyFunc = stderrors.New("crs: nil key func")
	// ErrInvalidAcquirePolicy: AcquirePolicy is neither Shared nor Exclusive.
	ErrInvalidAcquirePolicy = stderrors.New("crs: invalid acquire policy")
	// ErrInvalidOrdering: Ordering is neither ShardOrder nor GlobalOrder.
	ErrInvalidOrdering = stderrors.New("crs: invalid ordering")
	// ErrInvalidEventQueueSize: EventQueueSize is negative.
	ErrInvalidEventQueueSize = stderrors.New("crs: invalid event queue size")
	// ErrInvalidDuration: a negative LeaseTTL or ReleaseCooldown, or a
	// non-positive duration passed to Suspend, Lease.Extend or
	// Lease.Cooldown.
	ErrInvalidDuration = stderrors.New("crs: invalid duration")
	// ErrInvalidEjection: Ejection settings with a negative count or
	// duration, a share outside [0, 1], or no BaseTime.
	ErrInvalidEjection = stderrors.New("crs: invalid ejection settings")
)

// Operation errors.
var (
	// ErrInvalidAcquireStrategy: the AcquireStrategy returned a shard index
	// outside [0, HeapCount).
	ErrInvalidAcquireStrategy = stderrors.New("crs: acquire strategy returned an out-of-range shard")
	// ErrNilResource: Add, BatchAdd or Update was given a nil resource.
	ErrNilResource = stderrors.New("crs: nil resource")
	// ErrDuplicateKey: the key of an added resource is already present, or
	// appears twice in one batch.
	ErrDuplicateKey = stderrors.New("crs: duplicate key")
	// ErrInvalidKey: the KeyFunc gave Add or BatchAdd a key that cannot
	// identify a resource: one that is not equal to itself (a NaN, or a
	// value holding one) or whose dynamic type is not comparable (a
	// slice, map or func in an interface).
	ErrInvalidKey = stderrors.New("crs: invalid key")
	// ErrResourceNotFound: no resource has this key.
	ErrResourceNotFound = stderrors.New("crs: resource not found")
	// ErrNotExclusive: Release was called on a scheduler with the Shared
	// policy, where acquiring never takes a resource out of the pool.
	ErrNotExclusive = stderrors.New("crs: release requires the exclusive acquire policy")
	// ErrResourceNotInactive: Release or Include of a resource that is
	// active (in the pool).
	ErrResourceNotInactive = stderrors.New("crs: resource is active")
	// ErrResourceNotActive: Exclude of a resource that is not active (held
	// or already excluded).
	ErrResourceNotActive = stderrors.New("crs: resource is not active")
	// ErrResourceNotHeld: Release of a resource that was excluded, not
	// acquired. Releasing it would bypass the exclusion.
	ErrResourceNotHeld = stderrors.New("crs: resource is not held")
	// ErrResourceNotExcluded: Include of a resource that is held by a
	// caller. Including it would hand it to a second holder.
	ErrResourceNotExcluded = stderrors.New("crs: resource is not excluded")
	// ErrNoResourceAvailable: no active resource in any shard.
	ErrNoResourceAvailable = stderrors.New("crs: no resource available")
	// ErrSchedulerClosed: the scheduler has been shut down.
	ErrSchedulerClosed = stderrors.New("crs: scheduler closed")
	// ErrNilAffinityIdentifier: AcquireByAffinity was given a nil identifier.
	ErrNilAffinityIdentifier = stderrors.New("crs: nil affinity identifier")
)

// Lease errors.
var (
	// ErrLeaseReleased: the lease was already released.
	ErrLeaseReleased = stderrors.New("crs: lease already released")
	// ErrLeaseExpired: the lease passed its deadline and the scheduler
	// reclaimed the resource.
	ErrLeaseExpired = stderrors.New("crs: lease expired")
	// ErrResourceLeased: Release(id) of a resource whose holds are all
	// leases; release the Lease instead, so that a stale caller cannot end
	// someone else's lease.
	ErrResourceLeased = stderrors.New("crs: resource is held through leases")
	// ErrResourceDraining: Add of a key whose resource was removed while
	// held and still has holders; the key is free once they release.
	ErrResourceDraining = stderrors.New("crs: removed resource still has holders")
)

// Budget errors, for token-bucket limits (config.Limit) and what a call
// spends against them (config.Cost).
var (
	// ErrInvalidLimit: a config.Limit with an empty Name, a Max that is
	// not in [1, config.MaxUnits], or a Per that is not positive.
	ErrInvalidLimit = stderrors.New("crs: invalid limit")
	// ErrDuplicateLimit: two limits of one resource have the same Name.
	ErrDuplicateLimit = stderrors.New("crs: duplicate limit name")
	// ErrInvalidCost: a config.Cost with an amount that is negative or
	// above config.MaxUnits.
	ErrInvalidCost = stderrors.New("crs: invalid cost")
	// ErrInvalidTenant: config.Config.Tenants gave a tenant a Weight below
	// 0 or above config.MaxUnits or invalid Limits, or panicked; the
	// call that named the tenant fails and changes nothing.
	ErrInvalidTenant = stderrors.New("crs: invalid tenant")
	// ErrUnknownLimit: a config.Cost names a limit that none of the limits
	// it was checked against has (Cost.ValidateNames).
	ErrUnknownLimit = stderrors.New("crs: cost names an unknown limit")
	// ErrCostExceedsLimits: a Lease asked for a cost that no resource in
	// the pool can ever cover, because it is above the Max of one of each
	// resource's limits; waiting would never end.
	ErrCostExceedsLimits = stderrors.New("crs: cost exceeds every resource's limits")
)
