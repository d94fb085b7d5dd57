package redispool

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

// AcquireOption configures one call of Acquire or TryAcquire.
type AcquireOption interface{ acquireOption() }

// costOption is a map, so that passing it as an AcquireOption allocates
// nothing.
type costOption config.Cost

func (costOption) acquireOption() {}

// WithCost makes the lease spend cost from the resource's buckets
// (Resource.Limits) instead of the default, 1 unit of every limit. Only
// a resource whose every bucket covers the cost is granted, and the
// cost is taken by the server in the same step as the grant. The cost
// is an estimate: Lease.Settle replaces it by what the call really
// spent. A limit the cost does not name costs 1; a name that a resource
// has no limit for is ignored by that resource, but one that no
// resource of the pool has, nor the caller's tenant (WithTenant), is
// refused (ErrUnknownLimit; see AllowUnknownLimits). A negative amount, or one above
// config.MaxUnits, makes the call fail with ErrInvalidCost before
// anything is sent.
func WithCost(cost config.Cost) AcquireOption { return costOption(cost) }

type allowUnknown struct{}

func (allowUnknown) acquireOption() {}

// AllowUnknownLimits lets a WithCost name limits that no resource of the
// pool has: each resource ignores those names (and a limit the cost does
// not name costs 1). Without it, such a cost is refused with
// ErrUnknownLimit, changing nothing, since a misspelt name would
// otherwise be granted silently at a cost of 1; a pool whose resources
// have no Limits has no limit names, so there every cost with a name is
// refused. The names are checked by the server, in the acquire's step,
// against the resources present (draining ones aside), whichever
// process added them: while there are none, the pool is empty
// (ErrPoolEmpty).
func AllowUnknownLimits() AcquireOption { return allowUnknown{} }

// costArgs is what an acquisition asks of the acquire script besides
// its request: its cost, as the scripts read it (formatCost; "" for
// the default), "1" to let the cost name limits that no resource
// has (AllowUnknownLimits), "0" to refuse it, and its class
// (classOf; "" for none).
type costArgs struct {
	cost, anyName, class string
}

// costArgsOf checks the cost that opts give and writes it as the
// scripts read it.
func costArgsOf(opts []AcquireOption) (costArgs, error) {
	var cost config.Cost
	a := costArgs{anyName: "0"}
	classed := false
	for _, opt := range opts {
		switch opt := opt.(type) {
		case costOption:
			cost = config.Cost(opt)
		case allowUnknown:
			a.anyName = "1"
		case tenantOption, priorityOption:
			classed = true
		}
	}
	if classed {
		var err error
		if a.class, err = classOf(opts); err != nil {
			return a, err
		}
	}
	if len(cost) == 0 {
		return a, nil
	}
	if err := cost.Validate(); err != nil {
		return a, fmt.Errorf("redispool: acquire: %w", err)
	}
	a.cost = formatCost(cost)
	return a, nil
}

// TryAcquire leases the best available resource without waiting: the
// lowest priority, then the most budget left, then the fewest holders
// (see Resource.Priority), among those whose buckets cover the cost
// (WithCost). ErrNoResourceAvailable: none is available,
// or Acquire calls (of any process) wait for one, which go first; the
// error also wraps ErrPoolEmpty when the pool has no resource at all.
// ErrCostExceedsLimits: the cost is above a limit's Max on every
// resource of the pool, so no wait would ever end. ErrUnknownLimit: the
// cost names a limit that no resource of the pool has (see
// AllowUnknownLimits).
func (p *Pool) TryAcquire(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	if p.closed.Load() {
		return nil, p.errClosed("acquire")
	}
	cost, err := costArgsOf(opts)
	if err != nil {
		return nil, err
	}
	l, _, _, err := p.try(ctx, newRequest(), cost, false, time.Now())
	if err == nil && l == nil {
		err = fmt.Errorf("redispool: acquire: %w", crserrors.ErrNoResourceAvailable)
	}
	return l, err
}

// Acquire leases the best available resource, waiting until one is
// available, ctx ends (the error wraps ctx.Err()) or the Pool is closed
// (ErrSchedulerClosed). A Redis error ends the wait too: the caller
// decides whether to try again. So does a pool with no resource at all
// (ErrPoolEmpty, wrapped with ErrNoResourceAvailable), found when
// Acquire looks (at once; for a pool whose last resource Remove or Sync
// takes away while it waits, even one that drains, when it is told; for
// one that Redis lost, at its next re-check): nothing would ever free a
// slot, so it says so rather than wait until ctx ends. After a restart that lost the data, this is
// the sign to put the resources back (Sync). With Options.WaitReplicas,
// a grant that too few replicas acknowledge in time ends the call with
// ErrNotReplicated, the lease given back. Acquire returns as soon as ctx ends,
// even while the server does not answer; a lease granted by a command
// whose reply was lost, or that the server runs after ctx ended, is
// given back in the background.
//
// Waiters are served in the order they came, across every process of
// the pool: one that finds no free slot, or older waiters, joins the
// pool's queue on the server, and the call that frees a slot (a
// Release, in any process) grants it to the oldest waiter in the same
// step and tells that waiter's process. Waiting sends nothing while
// nothing changes: the oldest waiter of each process also asks again
// when the server will free a slot by itself (a lease deadline, the end
// of a suspension or of a rest for the limits, the refill that covers
// the oldest waiter's cost), and every waiter every
// Options.RecheckInterval, in case a message was lost. A waiter that
// leaves (ctx ends, Close) is taken out of the queue, and a slot granted
// to it meanwhile goes to the next.
//
// With WithTenant or WithPriority, waiters are served by priority, then
// by fair shares between tenants, then in the order they came (see
// WithTenant); until one of them waits, calls without these options
// take exactly the path described here.
//
// With limits (Resource.Limits), the queue stays strictly first come,
// first served: a waiter whose cost (WithCost) no resource covers yet
// holds back those behind it, even smaller ones, until a refill or a
// refund covers it, so a big call is never starved; buckets refill, so
// no waiter waits for ever. A cost above a limit's Max on every
// resource returns ErrCostExceedsLimits at once (or, for a waiter whose
// resources' limits Sync lowered, at its next re-check); resources it
// exceeds are skipped. A cost that names a limit no resource of the
// pool has returns ErrUnknownLimit at once, unless AllowUnknownLimits
// is given.
func (p *Pool) Acquire(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	if p.closed.Load() {
		return nil, p.errClosed("acquire")
	}
	cost, err := costArgsOf(opts)
	if err != nil {
		return nil, err
	}
	request := newRequest()
	// Registered before the request is sent: its grant may be told at
	// once.
	w := p.hub.join(request)
	defer p.hub.leave(w)
	// The grant comes after the request first reached the server: the
	// lease's deadline counts from before.
	start := time.Now()
	l, next, queued, err := p.try(ctx, request, cost, true, start)
	if l != nil || err != nil {
		return l, err
	}
	if !queued { // the server took the request for given up: cannot be
		return nil, fmt.Errorf("redispool: acquire: request refused: %w", crserrors.ErrNoResourceAvailable)
	}
	return p.waitInQueue(ctx, w, cost, start, next)
}

// waitInQueue waits until the request of w, which the server queued
// when it was sent at start (next: its answer's time until the server
// frees something by itself), is granted a lease, by a message or at a
// re-check. Whatever ends it without a lease gives the request up,
// which Close waits for.
func (p *Pool) waitInQueue(ctx context.Context, w *waiter, cost costArgs, start time.Time, next time.Duration) (*Lease, error) {
	request := w.request
	if !p.track() {
		p.abandon(request)
		return nil, p.errClosed("acquire")
	}
	defer p.untrack()
	p.hub.queued(w)
	p.hub.schedule(start, next)
	// looked is when the last request that the server answered by
	// queueing was sent: a grant told on the channel came after the
	// server ran it, so the lease runs at least LeaseTTL from then.
	looked := start
	for {
		g, err := p.wait(ctx, w)
		if err != nil {
			p.abandon(request)
			return nil, err
		}
		// A grant whose estimated deadline keeps at least half the TTL
		// is taken as told; an older estimate (a waiter that did not
		// look for longer than that) would show a running lease as
		// ending soon or ended, so the server is asked for its time left.
		if g != nil && p.replicas == 0 && time.Until(looked.Add(p.ttl)) >= p.ttl/2 {
			if l, err := p.newLease(g.token, request, g.id, looked.Add(p.ttl)); err == nil {
				return l, nil
			}
		}
		// A re-check, or the grant's pickup (with WaitReplicas, or to
		// learn its deadline): the same request, so the server answers
		// with its lease or keeps its place in the queue.
		looked = time.Now()
		var l *Lease
		l, next, _, err = p.try(ctx, request, cost, true, looked)
		if l != nil {
			return l, nil
		}
		if err != nil {
			p.abandon(request)
			return nil, err
		}
		p.hub.schedule(looked, next)
	}
}

// try runs the acquire script once for request, sent at start. Without
// a resource it returns a nil Lease, whether the request waits in the
// queue (wait: it may), and the time until the server frees something
// by itself (< 0: nothing scheduled).
//
// The server remembers the request with the lease it grants: if the
// client resends the request (go-redis retries after a broken
// connection), the server answers with the same lease; if the reply is
// lost (ctx ended mid-call, the connection broke), the lease is given
// back in the background rather than left idle until its deadline.
func (p *Pool) try(ctx context.Context, request string, cost costArgs, wait bool, start time.Time) (*Lease, time.Duration, bool, error) {
	if err := ctx.Err(); err != nil { // send nothing that would be abandoned
		return nil, 0, false, fmt.Errorf("redispool: acquire: %w", err)
	}
	entry := int64(0)
	if wait {
		entry = millis(queueEntry * p.recheck)
	}
	status, reply, err := p.run(ctx, scriptAcquire, request, p.ttlMs, entry, p.proc, cost.cost, cost.anyName, cost.class, p.shareBy)
	if status == statusUnknown {
		return nil, 0, false, fmt.Errorf("redispool: acquire: %w: %q", err, unknownName(reply))
	}
	if err != nil {
		// A call left in flight is given back by eval once it ends; a
		// grant that the replicas did not acknowledge, at once. A
		// refusal by the script (status < 0: an empty pool, a cost
		// above the limits) granted
		// nothing.
		_, left := err.(leftError)
		if errors.Is(err, ErrNotReplicated) || status >= 0 && !left && mayHaveRun(err) {
			p.abandon(request)
		}
		return nil, 0, false, fmt.Errorf("redispool: acquire: %w", err)
	}
	if status != statusOK {
		next, _ := reply[0].(int64)
		return nil, time.Duration(next) * time.Millisecond, status == statusQueued, nil
	}
	tok, _ := reply[0].(string)
	id, _ := reply[1].(string)
	left, _ := reply[2].(int64)
	// The server's deadline is what was left of the lease when it ran the
	// script, which was after start: this estimate is never late.
	l, err := p.newLease(tok, request, id, start.Add(time.Duration(left)*time.Millisecond))
	return l, 0, false, err
}

// unknownName is the limit name that the acquire script's refusal
// gives (hex-encoded, as formatCost writes it).
func unknownName(reply []any) string {
	var h string
	if len(reply) > 0 {
		h, _ = reply[0].(string)
	}
	name, err := hex.DecodeString(h)
	if err != nil {
		return h
	}
	return string(name)
}

// queueEntry is how long, in RecheckIntervals, a waiter's entry in the
// server's queue holds without a re-check: one that stops re-checking
// (its process died) loses its place then, and no slot is granted to it
// after.
const queueEntry = 3

// mayHaveRun reports whether a call that failed with err may have run on
// the server: not when the server answered with an error, nor when no
// connection could be made.
func mayHaveRun(err error) bool {
	var refused redis.Error
	var netErr *net.OpError
	return !errors.As(err, &refused) && !(errors.As(err, &netErr) && netErr.Op == "dial")
}

// wait blocks until w is granted a lease (returned), the re-check is
// due or asked for (nil), ctx ends or the pool closes.
func (p *Pool) wait(ctx context.Context, w *waiter) (*grantMsg, error) {
	recheckAt := p.clock.Now().Add(p.recheck)
	// One channel for every timer of this wait: a timer that fires as
	// it is replaced still ends the wait.
	tick := make(chan struct{}, 1)
	for parked := false; ; parked = true {
		d := recheckAt.Sub(p.clock.Now())
		// One waiter per process, the oldest, watches the server's own
		// schedule: when it frees a slot there, this waiter's re-check
		// makes the server notice and grant it to the oldest waiter, in
		// whichever process. The extra millisecond covers the server's
		// rounding to whole ones. A waiter that becomes the oldest while
		// it waits takes the watch over (rearm).
		if due, ok := p.hub.watch(w); ok {
			d = min(d, time.Until(due)+time.Millisecond)
		}
		if d <= 0 {
			return nil, nil
		}
		t := p.clock.AfterFunc(d, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
		// The clock may have passed the re-check between the reading
		// of d and the arming of t (another goroutine moves an
		// injected clock), which put t after it: the re-check is due.
		if !p.clock.Now().Before(recheckAt) {
			t.Stop()
			return nil, nil
		}
		if !parked && p.hooks.parked != nil {
			p.hooks.parked()
		}
		select {
		case g := <-w.grant:
			t.Stop()
			return &g, nil
		case <-w.rearm:
			t.Stop()
			continue
		case <-w.recheck:
		case <-tick:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("redispool: acquire: %w", ctx.Err())
		case <-p.hub.closing:
			t.Stop()
			return nil, p.errClosed("acquire")
		}
		t.Stop()
		return nil, nil
	}
}
