package waitload

import (
	"context"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/crsched/crs/bench/internal/cputime"
)

// measure runs cfg against the pool open builds. The sequence:
//
//  1. count the goroutines (the baseline), build the pool, start the
//     workers, all blocked on a gate so that spawning 10,000 goroutines
//     is not part of the run;
//  2. open the gate; run Warmup, then the measured window of Duration,
//     reading the process's CPU time and allocation count at both ends;
//  3. cancel the workers' context and wait for every worker (the drain);
//  4. shut the pool down and wait, bounded, for the goroutine count to
//     return to the baseline.
func measure[Tok any](name string, cfg Config, open func(Config) (pool[Tok], error)) (Result, error) {
	runtime.GC() // start each pool from the same, clean heap
	baseline := runtime.NumGoroutine()
	p, err := open(cfg)
	if err != nil {
		return Result{}, err
	}
	h := newHarness(p, cfg)
	h.preallocate(cfg)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gate := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(cfg.Workers)
	for i := 0; i < cfg.Workers; i++ {
		go func() {
			defer wg.Done()
			h.worker(ctx, gate)
		}()
	}

	t0 := h.now()
	h.win = window{start: t0 + int64(cfg.Warmup), stop: t0 + int64(cfg.Warmup+cfg.Duration)}
	close(gate) // publishes h.win to the workers
	sleepUntil(h, h.win.start)
	startCPU, cpuOK := cputime.Now()
	startAllocs := mallocs()
	profiling := cfg.CPUProfile != nil && pprof.StartCPUProfile(cfg.CPUProfile) == nil

	sleepUntil(h, h.win.stop)
	if profiling {
		pprof.StopCPUProfile()
	}
	stopCPU, stopOK := cputime.Now()
	stopAllocs := mallocs()
	stopped := h.now()
	cancel()
	wg.Wait()
	drain := time.Duration(h.now() - stopped)
	p.close()

	r := Result{
		Pool:       name,
		Workers:    cfg.Workers,
		Resources:  cfg.Resources,
		Hold:       cfg.Hold,
		Drain:      drain,
		Violations: h.violations.Load(),

		SteadyGrants:          h.steady.grants.Load(),
		SteadyInversions:      h.steady.inversions.Load(),
		SteadyMaxDisplacement: h.steady.maxDisp.Load(),
		Inversions:            h.all.inversions.Load(),
		MaxDisplacement:       h.all.maxDisp.Load(),
	}
	r.summarise(h.slots, time.Duration(h.win.stop-h.win.start))
	if cpuOK && stopOK && r.Served > 0 {
		r.CPUMeasured = true
		r.CPU = stopCPU - startCPU
		r.CPUPerRequest = r.CPU / time.Duration(r.Served)
		r.AllocsPerRequest = float64(stopAllocs-startAllocs) / float64(r.Served)
	}
	if h.err != nil {
		r.Err = h.err.Error()
	}
	r.GoroutinesLeft = max(goroutinesLeft(baseline, cfg.SettleTimeout), 0)
	return r, nil
}

// sleepUntil sleeps until the harness clock reaches t.
func sleepUntil[Tok any](h *harness[Tok], t int64) {
	if d := time.Duration(t - h.now()); d > 0 {
		time.Sleep(d)
	}
}

// mallocs is the number of heap allocations so far. ReadMemStats stops the
// world briefly; it is called twice per run, outside the workers' path.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}
