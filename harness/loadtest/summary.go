package loadtest

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/crsched/crs/config"
)

// This file turns the counters of a finished run into its Report.

func summarise(d *Distribution) LatencySummary {
	return LatencySummary{
		Count: d.Count(), Mean: int64(d.Mean()), Min: int64(d.Min()),
		P50: int64(d.Quantile(0.50)), P90: int64(d.Quantile(0.90)),
		P95: int64(d.Quantile(0.95)), P99: int64(d.Quantile(0.99)),
		P999: int64(d.Quantile(0.999)), Max: int64(d.Max()),
		Over1ms: d.CountAbove(time.Millisecond),
	}
}

// report assembles the Report once every worker has finished.
func (e *engine[H]) report(samples []Sample, rt RuntimeReport, elapsed time.Duration, st PoolState) *Report {
	cfg, k := e.cfg, e.k
	r := &Report{
		Pool:        cfg.Pool,
		PoolTitle:   e.title,
		Config:      configReport(cfg),
		Environment: environment(),
		ElapsedNs:   int64(elapsed),
		Runtime:     rt,
		Timeline:    samples,
	}
	r.Requests = Requests{
		Attempts:           k.attempts.Load(),
		Success:            k.success.Load(),
		BackendFailures:    k.backendFail.Load(),
		AcquireFailures:    k.acquireFail.Load(),
		AcquireTimeouts:    k.timeouts.Load(),
		CancelledWaiting:   k.cancelWait.Load(),
		CancelledBackend:   k.cancelBackend.Load(),
		StoppedWaiting:     k.stoppedWait.Load(),
		Acquisitions:       k.acquired.Load(),
		Releases:           k.released.Load(),
		ReleaseFailures:    k.releaseFail.Load(),
		PeakInFlight:       k.inflight.maxed(),
		PeakHolding:        k.holding.maxed(),
		CooldownChecked:    e.checkCooldown,
		CooldownViolations: k.violations.Load(),
	}
	r.Requests.Cancelled = r.Requests.CancelledWaiting + r.Requests.CancelledBackend + r.Requests.StoppedWaiting
	if s := k.firstAcqErr.Load(); s != nil {
		r.Requests.FirstAcquireError = *s
	}
	if s := k.firstRelErr.Load(); s != nil {
		r.Requests.FirstReleaseError = *s
	}

	measured := e.measured()
	window := measured[1] - measured[0]
	if at := e.interrupted.Load(); at >= 0 {
		r.Interrupted = &Interruption{Cause: interruptCause(e.ctxCause), AtNs: at, During: e.setupCut}
	}
	acq, tot, backend := k.acquireLat.Snapshot(), k.totalLat.Snapshot(), k.backendLat.Snapshot()
	r.Latency = Latencies{
		Acquire: summarise(acq),
		Backend: summarise(backend),
		Total:   summarise(tot),
		WakeLag: summarise(k.wakeLag.Snapshot()),
	}

	t := Throughput{
		WindowNs:  window,
		Completed: k.windowDone.Load(),
		Limit:     theoreticalLimit(cfg, float64(cfg.Latency.Mean()), k.workerNanos.Load(), measured),
	}
	if t.Completed > 0 && t.Limit.Bottleneck != "none" {
		asRun := float64(k.windowBackend.Load()) / float64(t.Completed)
		t.AsRun = theoreticalLimit(cfg, asRun, k.workerNanos.Load(), measured)
	}
	if window > 0 {
		t.PerSecond = float64(t.Completed) / (float64(window) / 1e9)
	}
	if t.Limit.PerSecond > 0 {
		t.Ratio = t.PerSecond / t.Limit.PerSecond
	}
	if t.AsRun.PerSecond > 0 {
		t.RatioAsRun = t.PerSecond / t.AsRun.PerSecond
	}
	r.Throughput = t
	r.Histograms = HistogramBins{Acquire: acq.LogBins(10), Total: tot.LogBins(10)}
	r.Resources = e.resourceUse(elapsed)
	r.PoolState = poolReport(st)
	r.Accounting = check(r, st)
	return r
}

func (e *engine[H]) resourceUse(elapsed time.Duration) []ResourceUse {
	var total uint64
	for i := range e.k.resources {
		total += e.k.resources[i].acquired.Load()
	}
	out := make([]ResourceUse, len(e.k.resources))
	for i := range e.k.resources {
		rc := &e.k.resources[i]
		u := ResourceUse{
			Name:         backendName(i),
			Acquisitions: rc.acquired.Load(),
			Failures:     rc.failed.Load(),
			PeakHolders:  rc.holding.maxed(),
		}
		if total > 0 {
			u.Share = float64(u.Acquisitions) / float64(total)
		}
		if elapsed > 0 {
			u.MeanHolders = float64(rc.heldNanos.Load()) / float64(elapsed)
		}
		u.Utilisation = u.Share
		if e.cfg.Policy == config.Exclusive {
			u.Utilisation = u.MeanHolders / float64(e.cfg.Capacity)
		}
		out[i] = u
	}
	return out
}

func poolReport(s PoolState) PoolReport {
	r := PoolReport{
		Holders: s.Holders, Waiters: s.Waiters, Active: s.Active, Total: s.Total,
		Draining: s.Draining, Excluded: s.Excluded,
		Suspended: s.Suspended, Ejected: s.Ejected, RateLimited: s.RateLimited,
		DroppedEvents: s.Dropped, Events: s.Events, Health: s.Health, Calls: s.Calls,
	}
	if s.CountsCancelled {
		r.CancelledWaits = &s.Cancelled
	}
	return r
}

func configReport(c Config) ConfigReport {
	return ConfigReport{
		Scenario: c.Scenario, Workers: c.Workers, Resources: c.Resources,
		DurationNs: int64(c.Duration), WarmupNs: int64(c.Warmup),
		Policy: c.Policy.String(), Strategy: c.Strategy, Heaps: c.HeapCount(),
		Ordering: c.Ordering.String(), API: c.API,
		Capacity: c.Capacity, TimeoutNs: int64(c.Timeout),
		Latency: c.Latency.String(), LatencyMeanNs: int64(c.Latency.Mean()),
		FailureRate: c.FailureRate, CancelRate: c.CancelRate,
		Unhealthy: c.Unhealthy, UnhealthyRate: c.UnhealthyRate,
		CooldownNs: int64(c.Cooldown), SuspendNs: int64(c.Suspend),
		Eject: c.Eject, EjectBaseNs: int64(c.EjectBase), EjectMaxNs: int64(c.EjectMax), EjectShare: c.EjectShare,
		Events: c.Events, EventQueueSize: c.EventQueueSize, Seed: c.Seed,
	}
}

func environment() Environment {
	return Environment{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), Race: raceEnabled,
	}
}

// backendName is the name of resource i, as the seed's reports spell it.
func backendName(i int) string { return fmt.Sprintf("backend-%02d", i+1) }

// interruptCause names what ended a run early: the signal, or the
// context's cause.
func interruptCause(err error) string {
	var in Interrupt
	if errors.As(err, &in) {
		return signalName(in.Signal)
	}
	if err == nil {
		return "cancelled"
	}
	return err.Error()
}
