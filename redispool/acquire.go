package redispool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	crserrors "github.com/crsched/crs/errors"
)

// TryAcquire leases the best available resource without waiting: the
// lowest priority, then the fewest holders. ErrNoResourceAvailable: none
// is available; the error also wraps ErrPoolEmpty when the pool has no
// resource at all.
func (p *Pool) TryAcquire(ctx context.Context) (*Lease, error) {
	if p.closed.Load() {
		return nil, p.errClosed("acquire")
	}
	l, _, err := p.try(ctx)
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
// Acquire looks (at once, or at its next re-check for a pool emptied
// while it waits): nothing would ever free a slot, so it says so rather
// than wait until ctx ends. After a restart that lost the data, this is
// the sign to put the resources back (Sync). With Options.WaitReplicas,
// a grant that too few replicas acknowledge in time ends the call with
// ErrNotReplicated, the lease given back. Acquire returns as soon as ctx ends,
// even while the server does not answer; a lease granted by a command
// whose reply was lost, or that the server runs after ctx ended, is
// given back in the background.
//
// Waiting sends nothing while nothing changes: a waiter is woken by the
// announcement of a freed slot (from any process), by the moment the
// server will free one by itself (a lease deadline, the end of a
// suspension), or at the latest every Options.RecheckInterval.
func (p *Pool) Acquire(ctx context.Context) (*Lease, error) {
	if p.closed.Load() {
		return nil, p.errClosed("acquire")
	}
	l, _, err := p.try(ctx)
	if l != nil || err != nil {
		return l, err
	}
	w := p.hub.join()
	defer p.hub.leave(w)
	for {
		// Queued before looking: a slot freed after this look is
		// announced to a queued waiter, so it cannot be missed.
		l, next, err := p.try(ctx)
		if l != nil || err != nil {
			return l, err
		}
		if err := p.wait(ctx, w, next); err != nil {
			return nil, err
		}
	}
}

// try runs the acquire script once. Without a resource it returns a nil
// Lease and the time until the server frees something by itself (< 0:
// nothing scheduled).
//
// Each call is a request with a random ID that the server remembers
// with the lease it grants: if the client resends the request (go-redis
// retries after a broken connection), the server answers with the same
// lease; if the reply is lost (ctx ended mid-call, the connection
// broke), the lease is given back in the background rather than left
// idle until its deadline.
func (p *Pool) try(ctx context.Context) (*Lease, time.Duration, error) {
	if err := ctx.Err(); err != nil { // send nothing that would be abandoned
		return nil, 0, fmt.Errorf("redispool: acquire: %w", err)
	}
	start := time.Now()
	request := newRequest()
	status, reply, err := p.run(ctx, scriptAcquire, request, p.ttlMs, request)
	if err != nil {
		// A call left in flight is given back by eval once it ends; a
		// grant that the replicas did not acknowledge, at once. A
		// refusal by the script (status < 0: an empty pool) granted
		// nothing.
		_, left := err.(leftError)
		if errors.Is(err, ErrNotReplicated) || status >= 0 && !left && mayHaveRun(err) {
			p.abandon(request)
		}
		return nil, 0, fmt.Errorf("redispool: acquire: %w", err)
	}
	if status == statusNone {
		next, _ := reply[0].(int64)
		return nil, time.Duration(next) * time.Millisecond, nil
	}
	tok, _ := reply[0].(string)
	id, _ := reply[1].(string)
	token, err := strconv.ParseUint(tok, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("redispool: acquire: bad token %q: %w", tok, err)
	}
	// The server's deadline is TTL after it ran the script, which was
	// after start: this estimate is never late.
	return &Lease{ID: id, Token: token, pool: p, deadline: start.Add(p.ttl)}, 0, nil
}

// mayHaveRun reports whether a call that failed with err may have run on
// the server: not when the server answered with an error, nor when no
// connection could be made.
func mayHaveRun(err error) bool {
	var refused redis.Error
	var netErr *net.OpError
	return !errors.As(err, &refused) && !(errors.As(err, &netErr) && netErr.Op == "dial")
}

// abandonTimeout bounds the give-back of a lease whose grant was lost.
const abandonTimeout = 5 * time.Second

// giveBack ends the lease that acquire request got, if any, and records
// the request as abandoned; it retries while the network fails it (it
// is idempotent), for abandonTimeout at most. One that runs out of
// time is counted (gaveUp): Close reports it.
func (p *Pool) giveBack(request string) {
	ctx, cancel := context.WithTimeout(context.Background(), abandonTimeout)
	defer cancel()
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		_, _, err := p.run(ctx, scriptAbandon, request, request)
		var refused redis.Error
		if err == nil || errors.As(err, &refused) {
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			p.gaveUp.Add(1)
			return
		case <-t.C:
		}
	}
}

// abandon gives back the lease that request got, if it got one: in the
// background, since the caller's ctx may have ended, unless the Pool is
// closed (Close waits for those in the background, and no longer can).
// If Redis cannot be reached, the lease ends at its deadline.
func (p *Pool) abandon(request string) {
	if !p.track() {
		p.giveBack(request)
		return
	}
	go func() {
		defer p.untrack()
		p.giveBack(request)
	}()
}

// wait blocks until w is woken, the re-check is due, ctx ends or the
// pool closes.
func (p *Pool) wait(ctx context.Context, w *waiter, next time.Duration) error {
	d := p.recheck
	// One waiter per process watches the server's own schedule; when it
	// frees a slot there, the script that notices announces it to all.
	// The extra millisecond covers the server's rounding to whole ones.
	if next >= 0 && next+time.Millisecond < d && p.hub.isHead(w) {
		d = next + time.Millisecond
	}
	tick := make(chan struct{}, 1)
	t := p.clock.AfterFunc(d, func() { tick <- struct{}{} })
	defer t.Stop()
	if p.parked != nil {
		p.parked()
	}
	select {
	case <-w.wake:
	case <-tick:
	case <-ctx.Done():
		return fmt.Errorf("redispool: acquire: %w", ctx.Err())
	case <-p.hub.closing:
		return p.errClosed("acquire")
	}
	// A woken waiter left the queue; it goes back (to its place) before
	// it looks again.
	p.hub.requeue(w)
	return nil
}
