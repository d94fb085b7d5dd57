package waitload

import (
	"math"
	"slices"
	"time"
)

// Result is what one pool did with the workload. Durations are in
// nanoseconds in JSON. Shares are fractions (0.99, not 99).
type Result struct {
	Pool      string        `json:"pool"`
	Workers   int           `json:"workers"`
	Resources int           `json:"resources"`
	Hold      time.Duration `json:"hold_ns"`   // as configured
	Window    time.Duration `json:"window_ns"` // the measured interval

	// Served is the number of grants that returned inside the window.
	Served int64 `json:"served"`
	// Throughput is Served per second of window.
	Throughput float64 `json:"throughput_per_s"`
	// MeanHold is the measured hold (acquire returned to release called),
	// which time.Sleep makes longer than Hold.
	MeanHold time.Duration `json:"mean_hold_ns"`
	// Limit is Resources / MeanHold: the throughput of a pool with no
	// gap between holders.
	Limit float64 `json:"limit_per_s"`
	// LimitShare is Throughput / Limit.
	LimitShare float64 `json:"limit_share"`
	// BusyShare is the time the resources were held, inside the window,
	// over Resources x Window. What is missing is hand-off gaps, and the
	// spread of hold times around the mean.
	BusyShare float64 `json:"busy_share"`

	// CPU is the process's user+system CPU time over the window, and
	// CPUPerRequest that over Served; both 0 when not measured.
	CPU           time.Duration `json:"cpu_ns"`
	CPUPerRequest time.Duration `json:"cpu_per_request_ns"`
	CPUMeasured   bool          `json:"cpu_measured"`
	// AllocsPerRequest is heap allocations (the whole process's) over the
	// window, per served request.
	AllocsPerRequest float64 `json:"allocs_per_request"`

	// Hand-off latency: from a holder starting its release to the next
	// holder of that resource returning from acquire, for the grants whose
	// request was already waiting when the release began.
	HandoffSamples int           `json:"handoff_samples"`
	HandoffP50     time.Duration `json:"handoff_p50_ns"`
	HandoffP99     time.Duration `json:"handoff_p99_ns"`
	HandoffMax     time.Duration `json:"handoff_max_ns"`

	// FIFO inversions (see fifo for what they can and cannot show) among
	// the grants inside the window whose request also began inside it
	// (Steady...), and among all grants inside the window.
	SteadyGrants          int64  `json:"fifo_steady_grants"`
	SteadyInversions      int64  `json:"fifo_steady_inversions"`
	SteadyMaxDisplacement uint64 `json:"fifo_steady_max_displacement"`
	Inversions            int64  `json:"fifo_inversions"`
	MaxDisplacement       uint64 `json:"fifo_max_displacement"`

	// Drain is the time from the end of the window (cancellation of the
	// workers' context) to the last worker's return.
	Drain time.Duration `json:"drain_ns"`
	// GoroutinesLeft is how many goroutines more than before the pool was
	// built remained after it was shut down and the settle timeout passed.
	GoroutinesLeft int `json:"goroutines_left"`
	// Violations counts grants of a resource that was already held. Any
	// is a broken pool.
	Violations int64 `json:"violations"`
	// Err is the first acquire or release failure, if any.
	Err string `json:"error,omitempty"`
}

// summarise fills the figures that come from the per-resource records.
func (r *Result) summarise(slots []slot, window time.Duration) {
	var busy, holdSum int64
	var handoffs []int64
	for i := range slots {
		s := &slots[i]
		s.mu.Lock()
		r.Served += s.served
		busy += s.busy
		holdSum += s.holdSum
		handoffs = append(handoffs, s.handoffs...)
		s.mu.Unlock()
	}
	r.Window = window
	secs := window.Seconds()
	if secs > 0 {
		r.Throughput = float64(r.Served) / secs
		r.BusyShare = float64(busy) / (float64(r.Resources) * float64(window))
	}
	if r.Served > 0 {
		r.MeanHold = time.Duration(holdSum / r.Served)
	}
	if r.MeanHold > 0 {
		r.Limit = float64(r.Resources) / r.MeanHold.Seconds()
		r.LimitShare = r.Throughput / r.Limit
	}
	slices.Sort(handoffs)
	r.HandoffSamples = len(handoffs)
	r.HandoffP50 = time.Duration(percentile(handoffs, 0.50))
	r.HandoffP99 = time.Duration(percentile(handoffs, 0.99))
	if n := len(handoffs); n > 0 {
		r.HandoffMax = time.Duration(handoffs[n-1])
	}
}

// percentile is the nearest-rank q-quantile of sorted, 0 if it is empty.
func percentile(sorted []int64, q float64) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(n))) - 1
	return sorted[min(max(i, 0), n-1)]
}
