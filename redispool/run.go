package redispool

// How a Pool runs its scripts on the server: the arguments every script
// takes, the status every reply starts with, a caller that leaves before
// the reply, the wait for replicas; and the give-back of a lease that an
// acquire got for a caller that left.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// run calls s with the pool's keys and ARGV = channel, args...; it
// returns the reply after its status and wake-up report, with the
// status's sentinel for a refusal (or the client's error alone), for
// the caller to wrap with the operation. A grant message that the server refused to
// publish is counted, not returned: the grant it told of was made.
//
// request (newRequest; "" for Stats, which writes nothing of its own)
// identifies the call: go-redis resends the same command, request
// included, when a connection breaks before the reply, and the server
// answers a resent write with the status it recorded for the request
// (for RequestWindow, in {NAME}:done:REQUEST), not by applying it
// again.
func (p *Pool) run(ctx context.Context, s script, request string, args ...any) (status int64, reply []any, err error) {
	argv := make([]any, 0, len(args)+4)
	argv = append(argv, p.channelArg)
	argv = append(argv, args...)
	record := 0
	if s.record && request != "" {
		record = 1
	}
	window := requestWindowMs
	if p.hooks.windowMs != 0 {
		window = p.hooks.windowMs
	}
	argv = append(argv, request, window, record)
	keys := append(p.keys[:len(p.keys):len(p.keys)], p.done+request)
	r := p.eval(ctx, s, request, keys, argv)
	if r.err != nil {
		return 0, nil, r.err
	}
	res := r.res
	if len(res) == 0 {
		return 0, nil, fmt.Errorf("script %s: empty reply", s.name)
	}
	status, ok := res[0].(int64)
	if !ok || len(res) < 2 {
		return 0, nil, fmt.Errorf("script %s: unexpected reply %v", s.name, res)
	}
	if _, refused := res[1].(string); refused {
		// The change is made; only its announcement was refused.
		p.wakeFailures.Add(1)
	}
	if err := statusError(status); err != nil {
		return status, res[2:], err
	}
	if r.waited && r.acked < p.replicas {
		err := fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, r.acked, p.replicas, p.waitFor)
		if r.waitErr != nil {
			err = fmt.Errorf("%w: %w", err, r.waitErr)
		}
		return status, res[2:], err
	}
	return status, res[2:], nil
}

// leftError is the error of a call whose ctx ended while its command
// was in flight: the command may still run on the server.
type leftError struct{ err error }

func (e leftError) Error() string { return e.err.Error() }
func (e leftError) Unwrap() error { return e.err }

// Who answers a call of eval: the command, or the caller's ctx.
const (
	evalPending int32 = iota
	evalAnswered
	evalLeft
)

// eval runs the script and returns its reply, or ctx's error as soon as
// ctx ends, whether or not the client honours contexts
// (ContextTimeoutEnabled) and the server answers: the command runs in a
// goroutine, which lives on until the client gets the reply or gives up
// (its own timeouts, or ctx's deadline with ContextTimeoutEnabled). What the command did then is not lost: a write's
// outcome is recorded under its request on the server, for a repeat to
// learn; an acquire's lease is given back (abandon, which also stops the
// request if it has not run yet).
func (p *Pool) eval(ctx context.Context, s script, request string, keys []string, argv []any) result {
	if ctx.Done() == nil {
		return p.exec(ctx, s, keys, argv)
	}
	if err := ctx.Err(); err != nil {
		return result{err: err} // sent nothing
	}
	// The command outlives the call when ctx ends first, so it must not
	// use ctx (the caller may reuse or recycle it): it runs under a
	// context of its own with the same deadline, and without ctx's
	// values.
	cmdCtx, cancel := context.Background(), context.CancelFunc(func() {})
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		cmdCtx, cancel = context.WithDeadline(cmdCtx, deadline)
	}
	done := make(chan result, 1)
	var state atomic.Int32
	// An acquire's grant may come after its caller left, and is then
	// given back: Close waits for that.
	tracked := s.name == scriptAcquire.name && p.track()
	p.late.Add(1)
	go func() {
		defer p.late.Done()
		if tracked {
			defer p.untrack()
		}
		r := p.exec(cmdCtx, s, keys, argv)
		cancel()
		if state.CompareAndSwap(evalPending, evalAnswered) {
			done <- r
			return
		}
		// The caller has gone: nobody will know a lease granted now.
		var refused redis.Error
		if s.name == scriptAcquire.name && !errors.As(r.err, &refused) {
			p.giveBack(request) // already in the background
		}
	}()
	select {
	case r := <-done:
		if r.err != nil && hasDeadline && !time.Now().Before(deadline) {
			// The command met the deadline that ctx is about to meet:
			// the caller gets ctx's error, as from a call that ctx
			// ended.
			<-ctx.Done()
			return result{err: ctx.Err()}
		}
		return r
	case <-ctx.Done():
		if state.CompareAndSwap(evalPending, evalLeft) {
			return result{err: leftError{ctx.Err()}}
		}
		return <-done // answered at the same moment
	}
}

// result is the outcome of one script call.
type result struct {
	res []any
	err error
	// waited: the script's success waited for replicas (WaitReplicas),
	// of which acked acknowledged its writes; waitErr is the error of a
	// WAIT that failed (acked is then 0).
	waited  bool
	acked   int
	waitErr error
}

// exec runs the script (EVALSHA, and EVAL once when the server answers
// NOSCRIPT: a call refused that way ran nothing, so sending it again is
// safe) and, for a success that waits for replicas, WAIT on the same
// connection, so that it counts the replicas that have the script's
// writes. A script whose answer repeats an earlier one (a resent
// request) writes that answer again, so that WAIT covers the first
// writes too on a server that counts only the connection's own writes
// (see lua/epilogue.lua).
func (p *Pool) exec(ctx context.Context, s script, keys []string, argv []any) result {
	if p.replicas == 0 || !s.waits {
		res, err := s.Run(ctx, p.client, keys, argv...).Slice()
		return result{res: res, err: err}
	}
	node, err := p.primary(ctx)
	if err != nil {
		return result{err: err}
	}
	conn := node.Conn()
	defer conn.Close()
	res, err := s.Run(ctx, conn, keys, argv...).Slice()
	if err != nil || len(res) == 0 || res[0] != int64(statusOK) {
		return result{res: res, err: err}
	}
	timeout := p.waitFor
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	if timeout < time.Millisecond { // WAIT 0 would wait forever
		return result{res: res, waited: true, waitErr: context.DeadlineExceeded}
	}
	n, err := conn.Wait(ctx, p.replicas, timeout).Result()
	if err != nil {
		return result{res: res, waited: true, waitErr: err}
	}
	return result{res: res, waited: true, acked: int(n)}
}

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
