package redispool

import (
	"fmt"
	"strings"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// Defaults of Options.
const (
	DefaultLeaseTTL        = 30 * time.Second
	DefaultRecheckInterval = 500 * time.Millisecond
	DefaultWaitTimeout     = time.Second
	// MinRecheckInterval is the shortest RecheckInterval: each re-check
	// of each waiter is a script on the server, and the re-check is only
	// a safety net for a lost wake-up.
	MinRecheckInterval = 10 * time.Millisecond
)

// RequestWindow is how long the server keeps the outcome of a write for
// the request that made it: a copy of the request that arrives within
// it gets that outcome instead of applying again. It covers go-redis's
// own resends with its default timeouts and retries, and a caller
// repeating a Lease's call on the same handle. Each record is a key of
// its own that expires this long after its last write.
const RequestWindow = 30 * time.Second

// requestWindowMs is RequestWindow as the scripts take it.
const requestWindowMs = int64(RequestWindow / time.Millisecond)

// MaxCapacity is the largest Resource.Capacity: holder counts are stored
// as 10-digit numbers (see README.md, How it works).
const MaxCapacity = 1_000_000_000

// Options configures a Pool.
type Options struct {
	// Name is the pool's namespace: every key is "{Name}:...", so all of
	// them hash to one Redis Cluster slot. Pools of the same Name on the
	// same Redis are one pool, whichever process opens them. Required;
	// it must not contain '{' or '}'.
	Name string
	// LeaseTTL is how long a lease lasts unless extended; a holder that
	// dies loses its leases this long after it took (or last extended)
	// them. 0 means DefaultLeaseTTL; otherwise at least a millisecond,
	// the precision of the server-side deadlines.
	LeaseTTL time.Duration
	// RecheckInterval is how often a waiting Acquire asks Redis again
	// when it has not been served: a safety net for a grant whose
	// message was lost with a connection. A waiter's entry in the queue
	// holds for three intervals after its last look, so the waiters of a
	// process that died are passed over after that. 0 means
	// DefaultRecheckInterval; otherwise at least MinRecheckInterval (New
	// refuses less with ErrInvalidDuration).
	RecheckInterval time.Duration
	// WaitReplicas makes every grant (Acquire, TryAcquire) and every
	// Lease.Extend wait, before it returns, until this many replicas of
	// the Redis primary have acknowledged it (Redis WAIT), so that a
	// failover to one of them keeps the lease: without it, a promoted
	// replica that lagged can grant the same slot again. A grant that
	// fewer replicas acknowledge within WaitTimeout is given back and
	// the call returns ErrNotReplicated, holding nothing; an Extend that
	// is not acknowledged returns ErrNotReplicated and the lease keeps
	// its former Deadline (see Lease.Extend). Release, Cooldown and the
	// pool's writes do not wait: losing one in a failover never lets
	// two holders in (a lost release keeps the slot until its
	// deadline). This does not make Redis a consistent store; see
	// README.md, Replicas and failover. 0 (the default) waits for no
	// replica. It needs a *redis.Client or a *redis.ClusterClient, to
	// send WAIT on the write's connection.
	WaitReplicas int
	// WaitTimeout bounds the wait of WaitReplicas, and the ctx's
	// deadline bounds it further. 0 means DefaultWaitTimeout; otherwise
	// at least a millisecond (WAIT counts in milliseconds, and 0 would
	// be forever).
	WaitTimeout time.Duration
	// Ejection takes resources that keep failing (Lease.Fail) out of the
	// pool for a while, with the core's meaning (config.Ejection); the
	// zero value is off. Every process of a pool must use the same.
	Ejection config.Ejection
	// ShareBy names the limit whose amount in a grant's cost (WithCost;
	// Cost.Of: 1 when it does not name it) counts in its tenant's share
	// (WithTenant); "" counts one per grant. Lease.Settle corrects the
	// count to the settled amount. Every process of a pool must use the
	// same.
	ShareBy string
	// Clock times the waits of Acquire (tests inject one); nil means
	// config.SystemClock. Lease deadlines and suspensions use the Redis
	// server's clock, never this one.
	Clock config.Clock
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" || strings.ContainsAny(o.Name, "{}") {
		return o, fmt.Errorf("%w: %q", ErrInvalidName, o.Name)
	}
	switch {
	case o.LeaseTTL == 0:
		o.LeaseTTL = DefaultLeaseTTL
	case o.LeaseTTL < time.Millisecond:
		return o, fmt.Errorf("redispool: lease TTL %v: %w", o.LeaseTTL, crserrors.ErrInvalidDuration)
	}
	switch {
	case o.RecheckInterval == 0:
		o.RecheckInterval = DefaultRecheckInterval
	case o.RecheckInterval < MinRecheckInterval:
		return o, fmt.Errorf("redispool: recheck interval %v, under %v: %w", o.RecheckInterval, MinRecheckInterval, crserrors.ErrInvalidDuration)
	}
	if o.WaitReplicas < 0 {
		return o, fmt.Errorf("%w: %d", ErrInvalidReplicas, o.WaitReplicas)
	}
	switch {
	case o.WaitTimeout == 0:
		o.WaitTimeout = DefaultWaitTimeout
	case o.WaitTimeout < time.Millisecond:
		return o, fmt.Errorf("redispool: wait timeout %v: %w", o.WaitTimeout, crserrors.ErrInvalidDuration)
	}
	if err := o.Ejection.Validate(); err != nil {
		return o, fmt.Errorf("redispool: ejection: %w", err)
	}
	if o.Clock == nil {
		o.Clock = config.SystemClock{}
	}
	return o, nil
}

// millis is d in whole milliseconds, rounded up: the server counts in
// milliseconds, and a deadline must not come earlier than asked.
func millis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}
