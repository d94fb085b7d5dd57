package loadtest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crsched/crs/config"
)

// engine runs one load test against one pool.
type engine[H any] struct {
	cfg   Config
	pool  pool[H]
	k     *counters
	epoch time.Time
	// window is the measured interval, in harness nanoseconds. An
	// interrupt ends it early: windowEnd, which the workers read as they
	// count, is then the moment of the interrupt (window[1] is the end
	// asked for).
	window    [2]int64
	windowEnd atomic.Int64
	// started is set by the run's first request (see worker).
	started atomic.Bool
	// interrupted is the time the run's context ended, -1 if it did not,
	// and ctxCause why.
	interrupted atomic.Int64
	ctxCause    error
	// setupCut says how far the setup got when a signal cut it short,
	// before the clock started; "" if it did not.
	setupCut string
	// checkCooldown: with one exclusive slot per resource, "acquired less
	// than the cooldown after its last release" is unambiguous, so every
	// acquisition is checked against it, less the pool's slack (see
	// Extension.CooldownSlack).
	checkCooldown bool
	cooldownMin   int64
	title         string
}

// cohort is a group of workers that start and stop together: the whole
// run, or a burst's surge.
type cohort struct {
	workers     int
	start, stop int64         // harness nanoseconds
	gate        chan struct{} // closed at start
	ctx         context.Context
	cancel      context.CancelCauseFunc
}

// now is the harness clock: monotonic nanoseconds since the run began.
func (e *engine[H]) now() int64 { return int64(time.Since(e.epoch)) }

// cohorts lays out the scenario's workers over time. A burst runs a tenth
// of the workers throughout and the rest during the middle third of the
// measured window: idle, a step up, and back.
func cohorts(cfg Config) []*cohort {
	end := int64(cfg.Warmup + cfg.Duration)
	if cfg.Scenario != Burst || cfg.Workers < 2 {
		return []*cohort{{workers: cfg.Workers, stop: end}}
	}
	base := max(1, cfg.Workers/10)
	third := int64(cfg.Duration) / 3
	return []*cohort{
		{workers: base, stop: end},
		{workers: cfg.Workers - base, start: int64(cfg.Warmup) + third, stop: int64(cfg.Warmup) + 2*third},
	}
}

// Run runs cfg on a built-in pool (crs or mutex) and returns its report.
// progress, if not nil, receives the live status.
func Run(ctx context.Context, cfg Config, progress *Progress) (*Report, error) {
	return runOn(ctx, cfg, nil, progress)
}

// runOn runs cfg on a built-in pool or, if cfg.Pool is its name, on ext's.
func runOn(ctx context.Context, cfg Config, ext *Extension, progress *Progress) (*Report, error) {
	if err := cfg.validate(ext); err != nil {
		return nil, err
	}
	switch {
	case cfg.Scenario == LLM:
		return runLLM(ctx, cfg, ext, progress)
	case cfg.Scenario == Tenants:
		return runTenants(ctx, cfg, ext, progress)
	case cfg.Pool == "mutex":
		p, err := openMutexPool(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return runWith[mutexHandle](ctx, cfg, p, progress)
	case ext != nil && cfg.Pool == ext.Name:
		p, err := ext.Open(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ext.Name, err)
		}
		e := newEngine[extHandle](cfg, &extPool{p: p, resources: cfg.Resources})
		e.cooldownMin -= int64(ext.CooldownSlack)
		if ext.Title != nil {
			e.title = ext.Title()
		}
		return e.run(ctx, progress), nil
	}
	p, err := newCRSPool(ctx, cfg)
	var cut *setupCut
	if errors.As(err, &cut) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	return runWith[crsHandle](ctx, cfg, p, progress)
}

func runWith[H any](ctx context.Context, cfg Config, p pool[H], progress *Progress) (*Report, error) {
	return newEngine(cfg, p).run(ctx, progress), nil
}

func newEngine[H any](cfg Config, p pool[H]) *engine[H] {
	return &engine[H]{
		cfg:  cfg,
		pool: p,
		k:    newCounters(cfg.Resources),
		checkCooldown: cfg.Cooldown > 0 && cfg.Policy == config.Exclusive &&
			cfg.Capacity == 1,
		cooldownMin: int64(cfg.Cooldown),
		title:       poolTitle(cfg.Pool),
	}
}

// run runs the load test and returns its report.
func (e *engine[H]) run(ctx context.Context, progress *Progress) *Report {
	cfg := e.cfg
	plan := cohorts(cfg)
	e.window = [2]int64{int64(cfg.Warmup), int64(cfg.Warmup + cfg.Duration)}
	e.windowEnd.Store(e.window[1])
	e.interrupted.Store(-1)

	var wg sync.WaitGroup
	setup := time.Now()
	started := e.start(ctx, plan, &wg)
	runtime.GC() // start from a clean heap, so that setup garbage is not ours
	// A million workers take seconds to start, outside the run's clock:
	// say so, or the wait looks like part of the run.
	if took := time.Since(setup); progress != nil && took > time.Second {
		progress.note(fmt.Sprintf("started %s workers in %s, before the clock", group(started), dur(took)))
	}
	rt0 := readRuntime()
	e.epoch = time.Now()
	// The measured window ends with an interrupt (but not before it
	// begins, so that a run interrupted in its warm-up measures nothing).
	fired := make(chan struct{})
	stopInterrupt := context.AfterFunc(ctx, func() {
		t := e.now()
		e.windowEnd.Store(max(e.window[0], min(t, e.window[1])))
		e.ctxCause = context.Cause(ctx)
		e.interrupted.Store(t)
		close(fired)
	})
	sampler := startSampler(e, plan, progress)
	if started == cfg.Workers {
		for _, c := range plan {
			e.schedule(c)
		}
	} else {
		// Interrupted while starting them: the gates stay shut, and the
		// workers leave as their cohort's context ends.
		e.setupCut = fmt.Sprintf("starting the workers: %s of %s started", group(started), group(cfg.Workers))
	}
	wg.Wait()
	stopped := e.now()
	if !stopInterrupt() {
		<-fired // interrupted: the report reads what it stored
	}
	for _, c := range plan {
		c.cancel(errStopped) // release the cohort's timers and contexts
	}
	rt1 := readRuntime()
	samples := sampler.stop()
	// After the measurements: an extension's pool may wait here, for
	// other processes sharing it to finish.
	e.pool.finish()
	st := e.pool.state()
	e.pool.close()

	rt := rt0.delta(rt1, runtime.GOMAXPROCS(0))
	rt.stalls(samples, sampleInterval(time.Duration(plan[0].stop)))
	return e.report(samples, rt, time.Duration(stopped), st)
}

// start creates every worker before the clock starts, each blocked on
// its cohort's gate: starting ten thousand goroutines takes a while on a
// busy machine, and must not eat into the run nor into a burst's step.
// A signal stops it (ctx is checked before each worker): a million
// workers take seconds to start. It returns how many it started.
func (e *engine[H]) start(ctx context.Context, plan []*cohort, wg *sync.WaitGroup) int {
	id := 0
	for _, c := range plan {
		c.ctx, c.cancel = context.WithCancelCause(ctx)
		c.gate = make(chan struct{})
		for i := 0; i < c.workers; i++ {
			if ctx.Err() != nil {
				break
			}
			wg.Add(1)
			e.k.unfinished.Add(1)
			go func(c *cohort, id int) {
				defer wg.Done()
				defer e.k.unfinished.Add(-1)
				e.runWorker(c, id)
			}(c, id)
			id++
		}
	}
	return id
}

// schedule opens the cohort's gate at its start and, at its stop, cancels
// the waits still in progress (the worker loop checks the clock, so no new
// request begins after it; a backend call in progress is let finish).
func (e *engine[H]) schedule(c *cohort) {
	open := func() { close(c.gate) }
	start := time.AfterFunc(time.Duration(c.start-e.now()), open)
	stop := time.AfterFunc(time.Duration(c.stop-e.now()), func() { c.cancel(errStopped) })
	// An interrupted run stops both timers; a gate left closed then keeps
	// its workers out, as they see the context end first.
	context.AfterFunc(c.ctx, func() {
		start.Stop()
		stop.Stop()
	})
}

// runWorker waits for the cohort's gate, then runs requests until its
// stop. A worker counts as running from the gate until its last request
// ends: that is the time it offers load, which the limit divides.
func (e *engine[H]) runWorker(c *cohort, id int) {
	select {
	case <-c.gate:
	case <-c.ctx.Done():
		return
	}
	// A worker the machine first runs after its stop leaves before
	// setting anything up (see worker): with a million workers, most may
	// get here only then, and the end of the run waits for all of them.
	first := e.started.CompareAndSwap(false, true)
	if !first && e.now() >= c.stop {
		return
	}
	e.k.workersAlive.inc()
	from := e.now()
	e.worker(c, id, first)
	e.k.workerNanos.Add(overlap(from, e.now(), e.measured()))
	e.k.workersAlive.dec()
}

// measured is the measured window: the one asked for, or less if the run
// was interrupted.
func (e *engine[H]) measured() [2]int64 { return [2]int64{e.window[0], e.windowEnd.Load()} }
