package loadtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Causes of a request's parent context ending, so that an acquire error
// can be classified without guessing from timings: context.Cause tells
// which one fired (the acquire's own timeout is told by deadlineCtx).
var (
	errClientCancel = errors.New("cancelled by the client")
	errStopped      = errors.New("run ended")
)

// worker repeats requests back to back until its cohort stops: no new
// request starts after c.stop, and a wait in progress then is cancelled
// (a backend call in progress is let finish).
func (e *engine[H]) worker(c *cohort, id int, first bool) {
	rng := rand.New(rand.NewPCG(e.cfg.Seed, uint64(id)))
	// A request's contexts register with their parent, under the parent's
	// lock, whenever they wait or may be cancelled by the client. A parent
	// per worker keeps that lock the worker's own; with the cohort's,
	// thousands of workers would queue on one mutex.
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	var acq deadlineCtx
	var h H // reused: see pool
	// No request starts after the stop: with more workers than the
	// machine can run before it (a million, say), each making one
	// request on its first run would go on long past the end. The run's
	// very first request (first) is the exception, made whatever the
	// clock says, so that every run, however starved of CPU, has
	// something to account for.
	for ; first || (ctx.Err() == nil && e.now() < c.stop); first = false {
		e.request(ctx, &acq, &h, rng)
	}
}

// request is one attempt: acquire (waiting at most the timeout), the
// simulated backend call, release. Its outcome is counted exactly once.
func (e *engine[H]) request(ctx context.Context, acq *deadlineCtx, h *H, rng *rand.Rand) {
	k := e.k
	k.attempts.Add(1)
	k.inflight.inc()
	defer k.inflight.dec()
	start := e.now()

	// Everything random about the request is drawn up front, from the
	// worker's own generator: one seed reproduces every worker's sequence.
	latency := e.cfg.Latency.Draw(rng)
	failDraw := 1.0 // fails if below the resource's failure rate
	if e.cfg.FailureRate > 0 || e.cfg.Unhealthy > 0 {
		failDraw = rng.Float64()
	}
	cancelAfter := time.Duration(-1)
	if e.cfg.CancelRate > 0 && rng.Float64() < e.cfg.CancelRate {
		cancelAfter = 0 // strictly before the call would end, so it is always abandoned
		if latency > 0 {
			cancelAfter = time.Duration(rng.Int64N(int64(latency)))
		}
	}
	reqCtx := ctx
	if cancelAfter >= 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeoutCause(ctx, cancelAfter, errClientCancel)
		defer cancel()
	}

	acq.reset(reqCtx, time.Now().Add(e.cfg.Timeout))
	k.waiting.inc()
	t0 := e.now()
	r, err := e.pool.acquire(acq, h)
	t1 := e.now()
	k.waiting.dec()
	acq.release()
	if err != nil {
		e.acquireFailed(acq, err)
		return
	}
	k.acquireLat.Record(time.Duration(t1 - t0))
	k.acquired.Add(1)
	k.holding.inc()
	rc := &k.resources[r]
	rc.acquired.Add(1)
	rate := e.cfg.FailureRate
	if r < e.cfg.Unhealthy {
		rate = e.cfg.UnhealthyRate
	}
	failed := failDraw < rate
	rc.holding.inc()
	if e.checkCooldown {
		if last := rc.lastRelease.Load(); last > 0 && t1-last < e.cooldownMin {
			k.violations.Add(1)
		}
	}

	// The backend call. A cancellation is known in advance, so the call
	// simply ends at that moment; the client abandons it.
	abandoned := cancelAfter >= 0 && start+int64(cancelAfter) <= t1+int64(latency)
	if abandoned {
		time.Sleep(time.Duration(start + int64(cancelAfter) - t1))
	} else {
		time.Sleep(latency)
	}
	t2 := e.now()

	if e.checkCooldown {
		rc.lastRelease.Store(t2)
	}
	if err := e.pool.end(h, failed && !abandoned); err != nil {
		k.releaseFail.Add(1)
		noteErr(&k.firstRelErr, err)
	} else {
		k.released.Add(1)
	}
	t3 := e.now()
	rc.heldNanos.Add(t3 - t1)
	rc.holding.dec()
	k.holding.dec()

	switch {
	case abandoned:
		k.cancelBackend.Add(1)
		return
	case failed:
		k.backendFail.Add(1)
		rc.failed.Add(1)
	default:
		k.success.Add(1)
	}
	k.backendLat.Record(time.Duration(t2 - t1))
	k.wakeLag.Record(time.Duration(t2-t1) - latency)
	k.totalLat.Record(time.Duration(t3 - start))
	if t3 >= e.window[0] && t3 < e.windowEnd.Load() {
		k.windowDone.Add(1)
		k.windowBackend.Add(t2 - t1)
	}
}

// acquireFailed classifies a failed acquire by what ended it: the
// request's timeout, its client, the end of the run, or the pool itself.
func (e *engine[H]) acquireFailed(ctx *deadlineCtx, err error) {
	k := e.k
	switch {
	case ctx.Err() == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		k.acquireFail.Add(1)
		noteErr(&k.firstAcqErr, err)
	case ctx.pastDeadline():
		k.timeouts.Add(1)
	case context.Cause(ctx.Context) == errClientCancel:
		k.cancelWait.Add(1)
	default:
		k.stoppedWait.Add(1)
	}
}
