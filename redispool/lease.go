package redispool

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// Lease is one hold on a resource of the pool, returned by Acquire and
// TryAcquire. Its methods may be called from any goroutine; keep the
// pointer you received (a Lease built by hand has no pool and its
// methods return ErrLeaseReleased).
//
// A lease ends with Release or Cooldown, or when its deadline passes
// (LeaseTTL after it was granted or last extended, by the Redis server's
// clock): then any process's next call on the pool gives the slot back.
// After that, Release, Extend and Cooldown return ErrLeaseExpired and
// change nothing. The same holds for a lease that Redis lost (a restart
// without persistence): the pool no longer has it, so it has expired.
type Lease struct {
	// ID is the leased resource's ID.
	ID string
	// Token is the lease's fencing token: while the pool's data
	// survives, strictly greater than that of every lease of the pool
	// granted before it, of any resource, from any process, whatever
	// the servers' clocks do. Pass it to the system the resource guards
	// so that it can refuse a holder whose lease has ended (one that
	// stalled past its deadline). Tokens are not consecutive: each is
	// also at least the server's clock in microseconds, for when the
	// data is lost (see README.md, Semantics, for what is promised
	// then).
	Token uint64

	pool     *Pool
	member   string     // in the pool's lease set: token, acquire request, ID
	mu       sync.Mutex // serialises this handle's calls
	ended    bool       // released or cooled down through this handle
	deadline time.Time

	// The call whose outcome this handle does not know (the client's
	// error, or ctx ended, while it was in flight): a repeat of the same
	// call reuses its request, so that the server answers with the
	// outcome of the first if it was applied.
	pending      string    // its request, "" if none
	pendingCall  string    // the operation and its arguments
	pendingStart time.Time // when it was first sent
}

// request returns the request for call, the pending one if call repeats
// it, and when that request was first sent.
func (l *Lease) request(call string) (string, time.Time) {
	if l.pending == "" || l.pendingCall != call {
		l.pending, l.pendingCall, l.pendingStart = newRequest(), call, time.Now()
	}
	return l.pending, l.pendingStart
}

// settle forgets the pending request once the call has an answer.
func (l *Lease) settle(err error) {
	if err == nil || errors.Is(err, crserrors.ErrLeaseExpired) {
		l.pending = ""
	}
}

// Deadline is when the lease ends unless extended: the holder's
// estimate, by the local clock, measured from before the request that
// set it, so never later than the server's deadline while the two
// clocks run at the same pace. The server's clock decides: a step
// forward on the Redis host, or a failover to a server whose clock is
// ahead, ends leases early (all of them at once) while Deadline still
// shows time left. Use Deadline to plan an Extend, not as proof that the
// lease runs; the fencing token is what protects the resource.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Release ends the lease and, in the same step, grants the slot to the
// oldest waiter (of any process) if the slot can be handed out. ErrLeaseReleased: this handle already ended
// it; ErrLeaseExpired: the pool no longer has it. A Release that failed
// with the client's error or ctx's (outcome unknown) may be repeated on
// this handle: the repeat is the same request, so if the first attempt
// was applied the repeat reports success (or, once the server no longer
// remembers the request, after RequestWindow, ErrLeaseExpired).
func (l *Lease) Release(ctx context.Context) error {
	return l.end(ctx, "release", scriptRelease)
}

// Cooldown ends the lease and suspends its resource for d (see
// Pool.Suspend) in one step, so no one else takes it in between: for a
// key that was just rate limited, say. The suspension is skipped for a
// resource excluded or removed meanwhile. ErrInvalidDuration: d <= 0;
// otherwise the errors of Release.
func (l *Lease) Cooldown(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("redispool: cooldown %q for %v: %w", l.ID, d, crserrors.ErrInvalidDuration)
	}
	return l.end(ctx, "cooldown", scriptCooldown, millis(d))
}

// end runs s on the lease and ends it.
func (l *Lease) end(ctx context.Context, op string, s script, args ...any) error {
	return l.call(ctx, true, op, s, args...)
}

// Fail ends the lease, as Release does, and counts a failure of its
// resource: with Options.Ejection, enough failures in a row (across
// every process of the pool) eject the resource for a while, as the
// core's Lease.Fail does: its n-th ejection lasts n x BaseTime (at most
// MaxTime), never the last resource of the pool that is neither ejected
// nor excluded, nor more than MaxEjectedShare of the pool. A Release is
// a success and starts the count again; Cooldown and an expiry count
// neither; Include ends an ejection and the count. Every process of a
// pool must use the same Ejection. It returns the errors of Release.
func (l *Lease) Fail(ctx context.Context) error {
	e := l.pool.ejectionArgs()
	return l.end(ctx, "fail", scriptFail, e...)
}

// Settle replaces what the lease took from its resource's buckets (its
// WithCost estimate, or the default 1 of each limit) by what the call
// actually spent, for the limit names actual gives, in one step on the
// server: a call that spent less refunds the difference (up to the
// bucket's Max), one that spent more takes the rest, which may put the
// bucket in debt; the resource then rests until each of its buckets
// holds a unit again. Names that actual does not give keep their
// estimate; names that the resource has no limit for are ignored, as
// are buckets added (by Sync) after the grant, even under a name that
// an earlier Sync dropped. Settling again corrects
// what the last settlement recorded. Settle does not end the lease.
// For a lease of a tenant (WithTenant, WithPriority), it corrects the
// tenant's buckets alike, and its share to the settled amount of
// Options.ShareBy, if actual names it.
//
// ErrInvalidCost: a negative amount or one above config.MaxUnits,
// before anything is sent; otherwise the errors of Release: settle
// before Release. A Settle whose outcome is unknown (the client's error,
// or ctx's) may be repeated on this handle: the repeat applies once.
func (l *Lease) Settle(ctx context.Context, actual config.Cost) error {
	if err := actual.Validate(); err != nil {
		return fmt.Errorf("redispool: settle %q: %w", l.ID, err)
	}
	shareBy := ""
	if l.pool != nil {
		shareBy = l.pool.shareBy
	}
	return l.write(ctx, "settle", scriptSettle, formatCost(actual), shareBy)
}

// Observe lowers the lease's resource's bucket called name to what the
// provider reports, as the core's Lease.Observe does: remaining units
// left now, and its own bucket full again after reset (for OpenAI, the
// x-ratelimit-remaining-tokens and x-ratelimit-reset-tokens headers).
// The bucket then never believes it has more than the provider says, now
// or as both refill; it is never raised, since a provider that reports
// more has not yet counted the calls in flight. A reset longer than the
// limit's Per describes another window than this bucket's, so only
// remaining is applied then. A resource left with less than a unit rests
// until it has one. A 429 with a Retry-After is Cooldown's job.
//
// ErrInvalidCost: remaining is negative or above config.MaxUnits;
// ErrInvalidDuration: reset is negative (both before anything is sent);
// ErrUnknownLimit: the resource has no limit called name; otherwise the
// errors of Release. In each case it changes nothing.
func (l *Lease) Observe(ctx context.Context, name string, remaining int64, reset time.Duration) error {
	switch {
	case remaining < 0 || remaining > config.MaxUnits:
		return fmt.Errorf("redispool: observe %q of %q: %w: remaining %d", name, l.ID, crserrors.ErrInvalidCost, remaining)
	case reset < 0:
		return fmt.Errorf("redispool: observe %q of %q: %w: reset %v", name, l.ID, crserrors.ErrInvalidDuration, reset)
	}
	return l.write(ctx, "observe", scriptObserve, hex.EncodeToString([]byte(name)), remaining, millis(reset), 0)
}

// Learn makes limit the Max of the lease's resource's bucket called
// name, its Per kept, for every process of the pool, in one step on the
// server: a limit the provider states (for OpenAI, the
// x-ratelimit-limit-* headers) when it is not the one the bucket holds,
// as the core's Lease.Reconcile does with a reported Limit. A lowered
// Max cuts the level to it; a raised one is reached by refilling. A
// later Add or Sync of the resource gives it the limits it states again.
//
// ErrInvalidCost: limit is below 1 or above config.MaxUnits (before
// anything is sent); ErrUnknownLimit: the resource has no limit called
// name; otherwise the errors of Release. In each case it changes nothing.
func (l *Lease) Learn(ctx context.Context, name string, limit int64) error {
	if limit < 1 || limit > config.MaxUnits {
		return fmt.Errorf("redispool: learn %q of %q: %w: limit %d", name, l.ID, crserrors.ErrInvalidCost, limit)
	}
	return l.write(ctx, "observe", scriptObserve, hex.EncodeToString([]byte(name)), -1, 0, limit)
}

// write runs s on the lease without ending it.
func (l *Lease) write(ctx context.Context, op string, s script, args ...any) error {
	return l.call(ctx, false, op, s, args...)
}

// call runs s on the lease, which ends with it if ends and s succeeds.
func (l *Lease) call(ctx context.Context, ends bool, op string, s script, args ...any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.pool == nil {
		return fmt.Errorf("redispool: %s %q: %w", op, l.ID, crserrors.ErrLeaseReleased)
	}
	request, _ := l.request(fmt.Sprint(op, args))
	status, _, err := l.pool.run(ctx, s, request, append([]any{l.member}, args...)...)
	if err == nil && status == statusNone {
		err = crserrors.ErrLeaseExpired
	}
	l.settle(err)
	if err != nil {
		return fmt.Errorf("redispool: %s %q: %w", op, l.ID, err)
	}
	l.ended = ends
	return nil
}

// Extend moves the lease's deadline to d from now (by the server's
// clock), whatever LeaseTTL is: a long task extends its lease before it
// runs out. ErrInvalidDuration: d <= 0; otherwise the errors of Release.
// With Options.WaitReplicas, ErrNotReplicated: the primary extended the
// lease but too few replicas acknowledged it in time, so a failover may
// undo it; Deadline stays where it was, and a repeat of the same Extend
// on this handle waits for the replicas again.
func (l *Lease) Extend(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("redispool: extend %q by %v: %w", l.ID, d, crserrors.ErrInvalidDuration)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.pool == nil {
		return fmt.Errorf("redispool: extend %q: %w", l.ID, crserrors.ErrLeaseReleased)
	}
	// A repeat's answer may be the first attempt's: the deadline counts
	// from when that was sent.
	request, start := l.request(fmt.Sprint("extend", d))
	status, _, err := l.pool.run(ctx, scriptExtend, request, l.member, millis(d))
	if err == nil && status == statusNone {
		err = crserrors.ErrLeaseExpired
	}
	l.settle(err)
	if err != nil {
		return fmt.Errorf("redispool: extend %q: %w", l.ID, err)
	}
	l.deadline = start.Add(d)
	return nil
}

// newLease is the lease of token on resource id that acquire request
// got, ending at deadline by the local clock.
func (p *Pool) newLease(token, request, id string, deadline time.Time) (*Lease, error) {
	n, err := strconv.ParseUint(token, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("redispool: acquire: bad token %q: %w", token, err)
	}
	return &Lease{ID: id, Token: n, pool: p, member: token + ":" + request + ":" + id, deadline: deadline}, nil
}
