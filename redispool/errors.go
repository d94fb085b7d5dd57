package redispool

import (
	stderrors "errors"
	"fmt"

	crserrors "github.com/crsched/crs/errors"
)

// Input errors of this package. Operations that mean the same as in the
// core return the core's sentinels instead (package
// github.com/crsched/crs/errors): ErrResourceNotFound, ErrDuplicateKey,
// ErrResourceDraining, ErrResourceNotActive, ErrResourceNotExcluded,
// ErrResourceNotInactive,
// ErrNoResourceAvailable, ErrLeaseExpired, ErrLeaseReleased,
// ErrInvalidDuration, ErrSchedulerClosed, and for limits and health
// ErrInvalidLimit, ErrDuplicateLimit, ErrInvalidCost, ErrUnknownLimit,
// ErrCostExceedsLimits and ErrInvalidEjection. Every error returned by the
// package is, or wraps, one of those sentinels or an error of the Redis
// client; test with errors.Is.
var (
	// ErrNilClient: New was given no Redis client.
	ErrNilClient = stderrors.New("redispool: nil redis client")
	// ErrInvalidName: Options.Name is empty or contains '{' or '}' (the
	// name is the hash tag of every key of the pool).
	ErrInvalidName = stderrors.New("redispool: invalid pool name")
	// ErrInvalidID: a resource id is empty. Any other byte string is an
	// ID (NUL and control bytes, invalid UTF-8, ':' included).
	ErrInvalidID = stderrors.New("redispool: invalid resource id")
	// ErrInvalidPriority: a priority is NaN or infinite.
	ErrInvalidPriority = stderrors.New("redispool: invalid priority")
	// ErrInvalidCapacity: a capacity is above MaxCapacity.
	ErrInvalidCapacity = stderrors.New("redispool: invalid capacity")
	// ErrLimitTooLarge: a resource's limit has a Max and Per that the
	// scripts could not keep exactly (see MaxLimitMax). It wraps the
	// core's ErrInvalidLimit.
	ErrLimitTooLarge = fmt.Errorf("redispool: limit too large: %w", crserrors.ErrInvalidLimit)
	// ErrInvalidReplicas: Options.WaitReplicas is negative, or set with a
	// client other than a *redis.Client or a *redis.ClusterClient.
	ErrInvalidReplicas = stderrors.New("redispool: invalid WaitReplicas")
	// ErrNotReplicated: fewer than Options.WaitReplicas replicas
	// acknowledged a grant or an Extend within Options.WaitTimeout. A
	// grant is given back (the caller holds nothing); an Extend was
	// applied on the primary but may be lost in a failover, so the lease
	// keeps its former Deadline.
	ErrNotReplicated = stderrors.New("redispool: not acknowledged by enough replicas")
	// ErrPoolEmpty: the pool has no resource at all (none was added, all
	// were removed, or the server lost its data), so no wait would end
	// with a lease. Acquire and TryAcquire return it, wrapped together
	// with the core's ErrNoResourceAvailable; Sync (or Add) puts the
	// resources back.
	ErrPoolEmpty = stderrors.New("redispool: pool has no resources")
	// ErrGiveBackUnfinished: Close could not give back every lease
	// whose grant was lost (its caller had left): Redis could not be
	// reached in time. Those leases stay taken until their deadline
	// (LeaseTTL), unless a give-back still running gets through.
	ErrGiveBackUnfinished = stderrors.New("redispool: lease give-back unfinished")
)
