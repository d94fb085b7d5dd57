package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/scheduler"
)

// leaseTTL is longer than any simulated call, so that only the leases a
// worker forgets on purpose expire.
const leaseTTL = 250 * time.Millisecond

// workload describes the simulated callers.
type workload struct {
	workers       int
	rounds        int           // calls per worker; 0: until the context ends
	maxCall       time.Duration // a call lasts between maxCall/10 and maxCall
	patience      time.Duration // a caller gives up waiting after this long
	forgetEvery   int           // about one lease in forgetEvery is never released; 0: none
	throttleEvery int           // about one lease call in throttleEvery is told to back off; 0: none
	cooldown      time.Duration // how long a throttled upstream rests
	think         time.Duration // a worker idles up to this long between calls...
	surge         time.Duration // ...except during every other period of this length; 0: never
	seed          uint64
}

// demoWorkload alternates calm periods, when the default 24 workers
// fill about half of the 16 slots and rarely wait, with surges, when they
// want more slots than there are: callers queue, some give up, and the
// wait-time quantiles climb.
func demoWorkload(workers int) workload {
	return workload{
		workers:       workers,
		maxCall:       20 * time.Millisecond,
		patience:      8 * time.Millisecond,
		forgetEvery:   500,
		throttleEvery: 200,
		cooldown:      500 * time.Millisecond,
		think:         40 * time.Millisecond,
		surge:         15 * time.Second,
		seed:          1,
	}
}

// tally is what the workers did, for tests to check the metrics against.
type tally struct {
	calls     atomic.Uint64 // waits or acquisitions that got an upstream
	gaveUp    atomic.Uint64 // waits the caller's patience ended
	forgotten atomic.Uint64 // leases left for LeaseTTL to reclaim
	failed    atomic.Uint64 // leases ended with Fail
	throttled atomic.Uint64 // leases ended with Cooldown
}

// simulate runs w against sched and returns once every worker has
// stopped: after its rounds, or when ctx ends. Workers alternate between
// Lease and AcquireContext, and feed the call's duration back as the
// upstream's latency, which reorders the pool. A lease call can fail
// (Lease.Fail: repeated failures eject the upstream) or be throttled
// (Lease.Cooldown: the upstream rests, as after an HTTP 429).
func simulate(ctx context.Context, sched *scheduler.Scheduler[*upstream, string], w workload) (*tally, error) {
	var t tally
	errs := make([]error, w.workers)
	var wg sync.WaitGroup
	for i := range w.workers {
		rng := rand.New(rand.NewPCG(w.seed, uint64(i))) // one per goroutine: no shared state
		wg.Go(func() { errs[i] = w.worker(ctx, sched, &t, rng) })
	}
	wg.Wait()
	return &t, errors.Join(errs...)
}

func (w workload) worker(ctx context.Context, sched *scheduler.Scheduler[*upstream, string], t *tally, rng *rand.Rand) error {
	start := time.Now()
	for i := 0; w.rounds == 0 || i < w.rounds; i++ {
		surging := w.surge > 0 && time.Since(start)/w.surge%2 == 1
		if w.think > 0 && !surging {
			pause(ctx, time.Duration(rng.Int64N(int64(w.think))))
		}
		if ctx.Err() != nil {
			return nil
		}
		call := w.leaseCall
		if i%2 == 1 {
			call = w.acquireCall
		}
		if err := call(ctx, sched, t, rng); err != nil {
			return err
		}
	}
	return nil
}

func (w workload) leaseCall(ctx context.Context, sched *scheduler.Scheduler[*upstream, string], t *tally, rng *rand.Rand) error {
	waitCtx, cancel := context.WithTimeout(ctx, w.patience)
	lease, err := sched.Lease(waitCtx)
	cancel()
	if err != nil {
		return gaveUp(ctx, t, err)
	}
	t.calls.Add(1)
	took := w.call(ctx, rng)
	if w.forgetEvery > 0 && rng.IntN(w.forgetEvery) == 0 {
		t.forgotten.Add(1)
		return nil
	}
	u := lease.Value()
	var end error
	switch {
	case rng.Float64() < u.failRate:
		if end = lease.Fail(); end == nil {
			t.failed.Add(1)
		}
	case w.throttleEvery > 0 && rng.IntN(w.throttleEvery) == 0:
		if end = lease.Cooldown(w.cooldown); end == nil {
			t.throttled.Add(1)
		}
	default:
		end = sched.Update(u.with(took))
		if released := lease.Release(); end == nil {
			end = released
		}
	}
	if errors.Is(end, crserrors.ErrLeaseExpired) {
		return nil // reclaimed already: nothing to undo
	}
	return end
}

func (w workload) acquireCall(ctx context.Context, sched *scheduler.Scheduler[*upstream, string], t *tally, rng *rand.Rand) error {
	waitCtx, cancel := context.WithTimeout(ctx, w.patience)
	u, err := sched.AcquireContext(waitCtx)
	cancel()
	if err != nil {
		return gaveUp(ctx, t, err)
	}
	t.calls.Add(1)
	took := w.call(ctx, rng)
	err = sched.Update(u.with(took))
	return errors.Join(err, sched.Release(u.name))
}

// gaveUp sorts out a failed wait: the caller's patience ran out (counted,
// and the worker goes on), the run is ending (the worker's loop stops),
// or something unexpected, which is returned.
func gaveUp(ctx context.Context, t *tally, err error) error {
	switch {
	case ctx.Err() != nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		t.gaveUp.Add(1)
		return nil
	}
	return err
}

// call simulates the work done with an upstream and returns how long it
// took; it is cut short when ctx ends.
func (w workload) call(ctx context.Context, rng *rand.Rand) time.Duration {
	d := w.maxCall/10 + time.Duration(rng.Int64N(int64(w.maxCall-w.maxCall/10)+1))
	pause(ctx, d)
	return d
}

// pause waits for d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}
