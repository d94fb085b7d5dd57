package loadtest

import "sync/atomic"

// counters is everything the workers record. Every field is an atomic or
// a lock-free histogram: ten thousand goroutines write them, and a lock
// here would measure the harness instead of the pool.
type counters struct {
	// Outcomes: every attempt ends as exactly one of these.
	attempts      atomic.Uint64
	success       atomic.Uint64
	backendFail   atomic.Uint64
	acquireFail   atomic.Uint64
	timeouts      atomic.Uint64
	cancelWait    atomic.Uint64 // the client gave up while waiting
	cancelBackend atomic.Uint64 // the client gave up during the backend call
	stoppedWait   atomic.Uint64 // the run (or a burst) ended while waiting

	// Holds: every acquisition is released exactly once.
	acquired    atomic.Uint64
	released    atomic.Uint64
	releaseFail atomic.Uint64

	// windowDone counts backend calls completed (successes and failures)
	// inside the measured window: the throughput.
	windowDone atomic.Uint64
	// windowBackend sums the backend time of those calls, for the limit
	// as the calls actually ran (Throughput.AsRun).
	windowBackend atomic.Int64
	// violations counts acquisitions of a resource less than the cooldown
	// after its previous release.
	violations atomic.Uint64

	inflight     gauge // requests started and not finished
	waiting      gauge // requests inside the acquire call
	holding      gauge // acquisitions not yet released
	firstAcqErr  atomic.Pointer[string]
	firstRelErr  atomic.Pointer[string]
	acquireLat   Histogram // the acquire call alone
	backendLat   Histogram // the simulated backend call, as measured
	totalLat     Histogram // attempt start to release, for completed calls
	wakeLag      Histogram // backend call measured minus drawn: timer and run-queue delay
	resources    []resourceCounters
	workersAlive gauge
	// unfinished counts the workers whose goroutine has not returned yet,
	// started or not: what the end of a run waits for.
	unfinished atomic.Int64
	// workerNanos is the time workers ran inside the measured window,
	// summed over workers: the limit's numerator.
	workerNanos atomic.Int64
}

// gauge is a level with its peak. The peak is kept by a compare-and-swap
// only when it grows, so a steady level costs one add per change.
type gauge struct {
	n    atomic.Int64
	peak atomic.Int64
}

func (g *gauge) inc() {
	v := g.n.Add(1)
	for p := g.peak.Load(); v > p; p = g.peak.Load() {
		if g.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

func (g *gauge) dec()         { g.n.Add(-1) }
func (g *gauge) load() int64  { return g.n.Load() }
func (g *gauge) maxed() int64 { return g.peak.Load() }

// resourceCounters are one resource's figures, padded to their own cache
// lines so that workers on different resources do not share a line.
type resourceCounters struct {
	acquired    atomic.Uint64
	holding     gauge
	heldNanos   atomic.Int64 // total time held, over all acquisitions
	lastRelease atomic.Int64 // harness clock, for the cooldown check
	failed      atomic.Uint64
	_           [64 - 16]byte
}

func newCounters(resources int) *counters {
	return &counters{resources: make([]resourceCounters, resources)}
}

// noteErr keeps the first error of a kind, for the report.
func noteErr(p *atomic.Pointer[string], err error) {
	if p.Load() == nil {
		s := err.Error()
		p.CompareAndSwap(nil, &s)
	}
}
